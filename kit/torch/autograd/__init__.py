"""`torch.autograd` on kit's engine: Function, grad, backward, gradcheck, gradgradcheck, and
`torch.autograd.graph`'s saved-tensor hooks.

`Function` is kit's own `kit.Function` (both of PyTorch's forms), not a copy, so a Function written
with `import kit.torch as torch` is a kit Function everywhere (graphs, kit.viz, kit.func).

>>> import kit.torch as torch
>>> x = torch.tensor(3.0, requires_grad=True)
>>> torch.autograd.grad(x ** 2, x)
(tensor(6.),)
"""

from kit.autograd import backward, grad
from kit.grad_mode import (
    detect_anomaly,
    enable_grad,
    inference_mode,
    is_anomaly_enabled,
    no_grad,
    set_detect_anomaly,
    set_grad_enabled,
)
from kit.gradcheck import GradcheckError, gradcheck, gradgradcheck
from kit.torch.autograd import function, functional, graph, profiler
from kit.torch.autograd.function import Function
from kit.torch.autograd.variable import Variable

__all__ = [
    "Function", "GradcheckError", "Variable", "backward", "detect_anomaly", "enable_grad",
    "function", "functional", "grad", "gradcheck", "gradgradcheck", "graph", "inference_mode",
    "is_anomaly_enabled", "no_grad", "profiler", "set_detect_anomaly", "set_grad_enabled",
]
