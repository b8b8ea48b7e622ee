"""`torch.autograd.function`: where PyTorch code imports `once_differentiable` and `FunctionCtx`.

>>> from kit.torch.autograd.function import once_differentiable
>>> once_differentiable.__module__
'kit.function'
"""

from kit.function import Function, FunctionCtx, once_differentiable

__all__ = ["Function", "FunctionCtx", "once_differentiable"]
