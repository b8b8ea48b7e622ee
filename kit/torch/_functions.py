"""Functions of the `torch` namespace whose PyTorch spelling differs from kit's.

kit's own functions take NumPy's `axis=`/`keepdims=`; PyTorch code writes `dim=`/`keepdim=`.
These wrappers only translate the spelling and call the kit op (or the Tensor method, which
accepts both), so they own no computation and no gradient code.
"""

from __future__ import annotations

import numpy as np

import kit
from kit import Tensor
from kit.torch import _dtypes


def as_tensor(data, dtype=None, device=None):
    """A Tensor for `data` that shares memory when it can: a Tensor of the right dtype and device
    comes back as is, a CPU NumPy array is wrapped without a copy (as torch.as_tensor).

    >>> import numpy as np, kit.torch as torch
    >>> a = np.zeros(2)
    >>> t = torch.as_tensor(a)
    >>> a[0] = 5.0
    >>> t
    tensor([5., 0.], dtype=kit.float64)
    """
    if isinstance(data, np.ndarray) and data.dtype in kit._tensor.SUPPORTED_DTYPES:
        data = kit.from_numpy(data)
    if isinstance(data, Tensor):
        return data.to(dtype=dtype, device=device)  # None leaves that part alone
    return kit.tensor(data, dtype=dtype, device=device)


def add(input, other, alpha=1):  # noqa: A002
    """`input + alpha * other`, as torch.add.

    >>> import kit.torch as torch
    >>> torch.add(torch.tensor([1.0, 2.0]), torch.tensor([1.0, 1.0]), alpha=10)
    tensor([11., 12.])
    """
    return Tensor.add(input, other, alpha=alpha)


def sub(input, other, alpha=1):  # noqa: A002
    """`input - alpha * other`, as torch.sub.

    >>> import kit.torch as torch
    >>> torch.sub(torch.tensor([5.0]), torch.tensor([1.0]), alpha=2)
    tensor([3.])
    """
    return Tensor.sub(input, other, alpha=alpha)


def sum(input, dim=None, keepdim=False):  # noqa: A001, A002 - PyTorch's names
    """`torch.sum(x)` or `torch.sum(x, dim, keepdim=False)`; `dim=[]` sums every dim.

    >>> import kit.torch as torch
    >>> torch.sum(torch.tensor([[1.0, 2.0], [3.0, 4.0]]), dim=0)
    tensor([4., 6.])
    """
    return Tensor.sum(input, dim, keepdim)


def mean(input, dim=None, keepdim=False):  # noqa: A002
    """`torch.mean(x)` or `torch.mean(x, dim, keepdim=False)`; floating point input only.

    >>> import kit.torch as torch
    >>> torch.mean(torch.tensor([[1.0, 2.0], [3.0, 4.0]]), dim=1, keepdim=True)
    tensor([[1.5000],
            [3.5000]])
    """
    return Tensor.mean(input, dim, keepdim)


def amax(input, dim=(), keepdim=False):  # noqa: A002
    """The largest value over `dim` (one dim, several, or all by default); ties share the
    gradient.

    >>> import kit.torch as torch
    >>> torch.amax(torch.tensor([[1.0, 5.0], [4.0, 2.0]]), dim=0)
    tensor([4., 5.])
    """
    return Tensor.amax(input, dim, keepdim)


def amin(input, dim=(), keepdim=False):  # noqa: A002
    """The smallest value over `dim` (one dim, several, or all by default).

    >>> import kit.torch as torch
    >>> torch.amin(torch.tensor([[1.0, 5.0], [4.0, 2.0]]))
    tensor(1.)
    """
    return Tensor.amin(input, dim, keepdim)


def logsumexp(input, dim, keepdim=False):  # noqa: A002
    """log(sum(exp(x))) along `dim`, computed stably.

    >>> import kit.torch as torch
    >>> torch.logsumexp(torch.tensor([1000.0, 1000.0]), dim=0)  # exp(1000) would overflow
    tensor(1000.6932)
    """
    return Tensor.logsumexp(input, dim, keepdim)


def softmax(input, dim, dtype=None):  # noqa: A002
    """exp(x) normalised along `dim` (no default dim, as torch.softmax).

    >>> import kit.torch as torch
    >>> torch.softmax(torch.tensor([0.0, 0.0]), dim=0)
    tensor([0.5000, 0.5000])
    """
    return Tensor.softmax(input, dim, dtype)


def log_softmax(input, dim, dtype=None):  # noqa: A002
    """log(softmax(x)) along `dim`, computed stably (no default dim, as torch.log_softmax).

    >>> import kit.torch as torch
    >>> torch.log_softmax(torch.tensor([0.0, 0.0]), dim=0)
    tensor([-0.6931, -0.6931])
    """
    return Tensor.log_softmax(input, dim, dtype)


def _extremum(name, reduce, elementwise):
    def fn(input, dim=None, keepdim=False):  # noqa: A002
        if isinstance(dim, Tensor):  # torch.max(a, b): the elementwise form
            return elementwise(input, dim)
        return reduce(input, dim, keepdim)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (
        f"`torch.{name}(x)` (a 0-d tensor), `torch.{name}(x, dim)` (a (values, indices) pair) or "
        f"`torch.{name}(a, b)` (elementwise, as torch.{elementwise.__name__}).\n\n"
        f"    >>> import kit.torch as torch\n"
        f"    >>> torch.{name}(torch.tensor([[1.0, 5.0], [4.0, 2.0]]), dim=1).indices\n"
        f"    tensor([{1 if name == 'max' else 0}, {0 if name == 'max' else 1}])\n"
    )
    return fn


max = _extremum("max", kit.max, kit.maximum)  # noqa: A001
min = _extremum("min", kit.min, kit.minimum)  # noqa: A001


def argmax(input, dim=None, keepdim=False):  # noqa: A002
    """Index of the largest element (of the flattened tensor when `dim` is None).

    >>> import kit.torch as torch
    >>> torch.argmax(torch.tensor([[1.0, 5.0], [4.0, 2.0]]))
    tensor(1)
    """
    return kit.argmax(input, dim, keepdim)


def argmin(input, dim=None, keepdim=False):  # noqa: A002
    """Index of the smallest element (of the flattened tensor when `dim` is None).

    >>> import kit.torch as torch
    >>> torch.argmin(torch.tensor([[1.0, 5.0], [4.0, 2.0]]), dim=1)
    tensor([0, 1])
    """
    return kit.argmin(input, dim, keepdim)


def cat(tensors, dim=0):
    """Join tensors along an existing dimension.

    >>> import kit.torch as torch
    >>> torch.cat([torch.ones(2), torch.zeros(1)], dim=0)
    tensor([1., 1., 0.])
    """
    return kit.cat(tensors, dim)


concat = cat


def stack(tensors, dim=0):
    """Join tensors of one shape along a new dimension.

    >>> import kit.torch as torch
    >>> torch.stack([torch.ones(2), torch.zeros(2)], dim=1)
    tensor([[1., 0.],
            [1., 0.]])
    """
    return kit.stack(tensors, dim)


def sort(input, dim=-1, descending=False, *, stable=False):  # noqa: A002
    """`(values, indices)` sorted along `dim`; values carry the gradient back. NaN sorts as the
    largest value, as in PyTorch; kit's sort is always stable, so `stable=True` changes nothing.

    >>> import kit.torch as torch
    >>> torch.sort(torch.tensor([3.0, 1.0, 2.0]), descending=True)
    SortResult(values=tensor([3., 2., 1.]), indices=tensor([0, 2, 1]))
    """
    return kit.sort(input, dim, descending)


def argsort(input, dim=-1, descending=False, *, stable=False):  # noqa: A002
    """Indices that sort `input` along `dim` (always stable, as `stable=True`).

    >>> import kit.torch as torch
    >>> torch.argsort(torch.tensor([3.0, 1.0, 2.0]))
    tensor([1, 2, 0])
    """
    return kit.argsort(input, dim, descending)


def _same_dtype(op, a, b):
    if a.dtype != b.dtype:
        # NOTE: PyTorch refuses mixed dtypes here; so does kit, so the code ports both ways.
        raise RuntimeError(
            f"torch.{op}: the tensors have dtypes {a.dtype} and {b.dtype}; both must have the "
            f"same dtype. Fix: convert one, e.g. b.to(a.dtype)"
        )


def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):  # noqa: A002
    """Elementwise `|input - other| <= atol + rtol * |other|`, as a bool tensor.

    >>> import kit.torch as torch
    >>> torch.isclose(torch.tensor([1.0, 2.0]), torch.tensor([1.0, 2.1]))
    tensor([ True, False])
    """
    _same_dtype("isclose", input, other)
    xp = kit.backend.get_array_module(input._data)
    return Tensor(xp.isclose(input._data, other._data, rtol=rtol, atol=atol, equal_nan=equal_nan))


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):  # noqa: A002
    """True if every element of `input` is close to `other` (same rule as torch.allclose).

    >>> import kit.torch as torch
    >>> torch.allclose(torch.tensor([1.0, 2.0]), torch.tensor([1.0, 2.0000001]))
    True
    """
    return isclose(input, other, rtol, atol, equal_nan)._data.all().item()


def equal(input, other):  # noqa: A002
    """True if both tensors have the same shape and the same elements.

    >>> import kit.torch as torch
    >>> torch.equal(torch.tensor([1, 2]), torch.tensor([1, 2]))
    True
    """
    if tuple(input.shape) != tuple(other.shape):
        return False
    return (input._data == other._data).all().item()


def is_tensor(obj):
    """True if `obj` is a (kit) Tensor.

    >>> import kit.torch as torch
    >>> torch.is_tensor(torch.zeros(1)), torch.is_tensor([0.0])
    (True, False)
    """
    return isinstance(obj, Tensor)


def numel(input):  # noqa: A002
    """The number of elements of `input`.

    >>> import kit.torch as torch
    >>> torch.numel(torch.zeros(2, 3))
    6
    """
    return input.numel()


def _two_tensors(op):
    def fn(input, other):  # noqa: A002 - PyTorch's parameter names
        for position, value in ((1, input), (2, other)):
            if not isinstance(value, Tensor):
                raise TypeError(
                    f"{op}(): argument '{'input' if position == 1 else 'other'}' (position "
                    f"{position}) must be Tensor, not {type(value).__name__}. Fix: wrap the "
                    f"number, torch.{op}(x, torch.tensor(2.0)), or use torch.clamp"
                )
        return getattr(kit.ops, op)(input, other)

    fn.__name__ = fn.__qualname__ = op
    fn.__doc__ = f"torch.{op}: elementwise {op} of two tensors (numbers are refused, as PyTorch)."
    return fn


maximum = _two_tensors("maximum")
minimum = _two_tensors("minimum")


def get_default_dtype():
    """The default float dtype as a torch dtype (torch.float32 unless set_default_dtype changed it).

    >>> import kit.torch as torch
    >>> torch.get_default_dtype()
    torch.float32
    """
    return _dtypes.of(kit.get_default_dtype())


def get_default_device():
    """The device factories use when none is given, as a torch.device.

    >>> import kit.torch as torch
    >>> torch.get_default_device()
    device(type='cpu')
    """
    return _dtypes.device(kit.get_default_device())


_BACKENDS = {"inductor": True, "eager": False, "aot_eager": False}
_MODES = (None, "default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")


def compile(model=None, *, fullgraph=False, dynamic=None, backend="inductor", mode=None,  # noqa: A001
            options=None, disable=False):
    """torch.compile: `kit.compile` in PyTorch's spelling, for a function or an nn.Module.

    backend "inductor" (the default) fuses elementwise runs into kernels; "eager" and "aot_eager"
    capture and replay the graph op by op. kit has one mode, so `mode` only accepts PyTorch's
    names; `disable=True` returns `model` itself.

    >>> import kit.torch as torch
    >>> f = torch.compile(lambda x: (x * 2).relu().sum())
    >>> f(torch.tensor([1.0, -1.0]))
    tensor(2.)
    """
    if backend not in _BACKENDS:
        raise ValueError(f"torch.compile: kit knows the backends {sorted(_BACKENDS)}, "
                         f"got {backend!r}")
    if mode not in _MODES:
        raise ValueError(f"torch.compile: unknown mode {mode!r}; PyTorch's are {list(_MODES[1:])}")
    if options:
        raise ValueError("torch.compile: kit takes no backend options; leave options unset")
    if model is None:
        return lambda m: compile(m, fullgraph=fullgraph, dynamic=dynamic, backend=backend,
                                 mode=mode, disable=disable)
    if disable:
        return model
    return kit.compile(model, fullgraph=fullgraph, dynamic=dynamic, fuse=_BACKENDS[backend])
