"""The one hook kit.func needs in each primitive.

`VMAP` is the thread's mode switches (kit/_modes.py). While no vmap is active, `VMAP.depth` is 0
and a primitive pays a single attribute read. A vmap level raises it and kit.func installs
`dispatch`, which applies the op's batching rule to BatchedTensor arguments (see
kit/func/_batched.py). `transforms` counts the active kit.func transforms (vmap, grad, vjp, ...);
`Function.apply` tests it and routes custom Functions through `function`.
"""

from kit._modes import STATE as VMAP
from kit._modes import install as _install

__all__ = ["VMAP", "install"]


def install(dispatch, function):
    """Set, for every thread, `dispatch(op_name, fn, *args, **kwargs)` (a primitive under vmap)
    and `function(cls, args, kwargs)` (Function.apply under a transform). Done by kit.func."""
    _install("dispatch", dispatch)
    _install("function", function)
