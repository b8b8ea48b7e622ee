"""`torch.autograd.function`: where PyTorch code imports `once_differentiable`, `FunctionCtx` and
the old `InplaceFunction`.

>>> from kit.torch.autograd.function import once_differentiable
>>> once_differentiable.__module__
'kit.function'
"""

from kit.function import Function, FunctionCtx, once_differentiable

__all__ = ["Function", "FunctionCtx", "InplaceFunction", "once_differentiable"]


class InplaceFunction(Function):
    """PyTorch's base kept for old code (its docs: "Use Function instead of this for any new use
    case"): a Function whose instances carry an `inplace` flag. Call it, as any Function, with
    `.apply(...)`; old code passes `inplace` to forward and marks the input dirty there."""

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace
