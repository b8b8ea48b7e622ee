"""The one hook kit.func needs in each primitive.

While no transform is active, `VMAP.depth` is 0 and a primitive pays a single attribute test.
kit.func raises it while a vmap runs and installs `dispatch`, which applies the op's batching rule
to BatchedTensor arguments (see kit/func/_batched.py). `transforms` counts every active kit.func
transform (vmap, grad, vjp, ...); `Function.apply` tests it to route custom Functions.
"""


class VMAP:
    """Switches read by the primitives; written only by kit.func."""

    depth = 0  # > 0 while a vmap is active: primitives call `dispatch` first
    transforms = 0  # > 0 while any kit.func transform is active: Function.apply calls `function`
    dispatch = None  # dispatch(op_name, fn, *args, **kwargs)
    function = None  # function(cls, args, kwargs): Function.apply under a transform
