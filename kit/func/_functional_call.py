"""functional_call: run a Module with some of its parameters and buffers replaced, as
torch.func.functional_call.

A model becomes a function of its parameters, which is what the transforms (grad, vmap, jacrev)
and gradcheck take: `gradcheck(lambda *p: functional_call(model, dict(zip(names, p)), (x,)), p)`.
The module's own tensors are put back when the call returns or raises.
"""

from __future__ import annotations

from kit._tensor import Tensor


def functional_call(module, parameter_and_buffer_dicts, args=None, kwargs=None, *,
                    tie_weights=True, strict=False):
    """`module(*args, **kwargs)` with the tensors named in `parameter_and_buffer_dicts` (a dict
    name -> Tensor, or a tuple of such dicts) in place of the module's own.

    Names are those of `named_parameters()` / `named_buffers()` ("0.weight"); a name left out
    keeps the module's tensor (unless `strict`, which requires every name). With `tie_weights`
    a parameter shared by two submodules is replaced under both names.

    kit refuses a name that is no parameter, buffer or tensor attribute of the module, where
    PyTorch (with strict=False) ignores it: a misspelt name would leave the module's own tensor
    in use without a word.

    >>> import kit
    >>> from kit import nn
    >>> from kit.func import functional_call
    >>> layer = nn.Linear(2, 1)
    >>> functional_call(layer, {"weight": kit.ones(1, 2), "bias": kit.zeros(1)},
    ...                 (kit.tensor([[1.0, 2.0]]),))
    tensor([[3.]])
    """
    values = _merged(parameter_and_buffer_dicts)
    args = () if args is None else (args if isinstance(args, tuple) else (args,))
    kwargs = {} if kwargs is None else kwargs
    tied = _tied_names(module) if tie_weights else {}
    for name in list(values):
        others = [other for other in tied.get(name, ()) if other != name]
        given = [other for other in others if other in values]
        if given:
            raise ValueError(
                f"functional_call got multiple values for keys {sorted([name, *given])}, which "
                f"are tied. Consider using tie_weights=False"
            )
        for other in others:
            values[other] = values[name]
    slots = [_slot(module, name) for name in values]
    if strict:
        missing = sorted(set(_tensor_names(module)) - set(values))
        if missing:
            raise RuntimeError(
                f"Error(s) in reparametrizing for {type(module).__name__}:\n\tMissing key(s): "
                + ", ".join(f"'{name}'" for name in missing) + "."
            )
    originals = [table[key] for table, key in slots]
    try:
        for (table, key), value in zip(slots, values.values(), strict=True):
            table[key] = value
        return module(*args, **kwargs)
    finally:
        for (table, key), original in zip(slots, originals, strict=True):
            table[key] = original


def _merged(dicts):
    dicts = dicts if isinstance(dicts, (tuple, list)) else (dicts,)
    values, repeated = {}, set()
    for d in dicts:
        if not isinstance(d, dict):
            raise TypeError(
                f"functional_call: expected a dict name -> Tensor (or a tuple of them), got "
                f"{type(d).__name__}. Fix: dict(model.named_parameters()) gives one"
            )
        repeated.update(values.keys() & d.keys())
        values.update(d)
    if repeated:
        raise ValueError(
            f"{sorted(repeated)} appeared in multiple dictionaries; behavior of functional call "
            f"is ambiguous"
        )
    return values


def _tensor_names(module):
    return [name for table in (module.named_parameters, module.named_buffers)
            for name, _ in table(remove_duplicate=False)]


def _tied_names(module):
    """name -> every name of the same tensor, for tensors registered under several names."""
    names = {}
    for table in (module.named_parameters, module.named_buffers):
        for name, tensor in table(remove_duplicate=False):
            names.setdefault(id(tensor), []).append(name)
    return {name: group for group in names.values() if len(group) > 1 for name in group}


def _slot(module, name):
    """(the dict holding `name`'s tensor, its key): a parameter or buffer table, or the
    submodule's attributes for a plain tensor attribute."""
    path, _, attr = name.rpartition(".")
    try:
        owner = module.get_submodule(path)
    except AttributeError:
        owner = None
    if owner is not None:
        for table in (owner._parameters, owner._buffers):
            if attr in table:
                return table, attr
        if isinstance(owner.__dict__.get(attr), Tensor):
            return owner.__dict__, attr
    known = ", ".join(_tensor_names(module)) or "none"
    raise RuntimeError(
        f"functional_call: '{name}' is not a parameter, buffer or tensor attribute of "
        f"{type(module).__name__} (its names: {known}). Fix: use the names of "
        f"named_parameters() and named_buffers()"
    )
