"""State dicts: a module tree's parameters and persistent buffers by dotted name, and loading
them back in place with PyTorch's strict key check. Framework-neutral: it reads only the
`_parameters`, `_buffers`, `_non_persistent` and `_modules` registries of kit.nn.Module.

>>> from kit import nn
>>> list(nn.Sequential(nn.Linear(2, 2)).state_dict())
['0.weight', '0.bias']
"""

from __future__ import annotations

from collections import OrderedDict, namedtuple

from kit._tensor import Tensor
from kit.grad_mode import no_grad


class IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    """What load_state_dict returns: the keys it did not match."""

    def __repr__(self):
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


def collect(module, destination=None, prefix="", keep_vars=False):
    """`module.state_dict()`: detached tensors sharing the module's storage, in registration
    order (own parameters, own buffers, then each submodule's)."""
    out = OrderedDict() if destination is None else destination
    for name, param in module._parameters.items():
        if param is not None:
            out[prefix + name] = param if keep_vars else param.detach()
    for name, buf in module._buffers.items():
        if buf is not None and name not in module._non_persistent:
            out[prefix + name] = buf if keep_vars else buf.detach()
    for name, sub in module._modules.items():
        if sub is not None:
            collect(sub, out, prefix + name + ".", keep_vars)
    return out


def load(module, state_dict, strict=True):
    """`module.load_state_dict(state_dict, strict)`: copy in place under no_grad, so that an
    optimiser built on the parameters keeps working."""
    if not hasattr(state_dict, "keys"):
        raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
    own = collect(module, keep_vars=True)
    missing = [key for key in own if key not in state_dict]
    unexpected = [key for key in state_dict if key not in own]
    errors = []
    if strict:
        if missing:
            keys = ", ".join(f'"{k}"' for k in missing)
            errors.append(f"Missing key(s) in state_dict: {keys}. ")
        if unexpected:
            keys = ", ".join(f'"{k}"' for k in unexpected)
            errors.append(f"Unexpected key(s) in state_dict: {keys}. ")
    for key, target in own.items():
        if key not in state_dict:
            continue
        value = state_dict[key]
        if not isinstance(value, Tensor):
            errors.append(
                f'While copying the parameter named "{key}", expected torch.Tensor or '
                f"Tensor-like object from checkpoint but received {type(value)}"
            )
        elif tuple(value.shape) != tuple(target.shape):
            errors.append(
                f"size mismatch for {key}: copying a param with shape "
                f"torch.Size({list(value.shape)}) from checkpoint, the shape in current "
                f"model is torch.Size({list(target.shape)})."
            )
    if errors:
        raise RuntimeError(
            f"Error(s) in loading state_dict for {type(module).__name__}:\n\t"
            + "\n\t".join(errors)
        )
    with no_grad():
        for key, target in own.items():
            if key in state_dict:
                target.copy_(state_dict[key].to(target.device))
    return IncompatibleKeys(missing, unexpected)
