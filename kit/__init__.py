"""kit: a small NumPy/CuPy autograd engine for learning and prototyping custom operators.

>>> import kit
>>> x = kit.tensor([1.0, 2.0, 3.0], requires_grad=True)
>>> (x ** 2).sum().backward()
>>> x.grad
tensor([2., 4., 6.])
"""

from kit import backend, func, profiler
from kit._creation import (
    arange,
    empty,
    empty_like,
    eye,
    from_numpy,
    full,
    full_like,
    get_default_device,
    get_default_dtype,
    linspace,
    logspace,
    manual_seed,
    ones,
    ones_like,
    rand,
    rand_like,
    randint,
    randn,
    randn_like,
    set_default_device,
    set_default_dtype,
    tensor,
    zeros,
    zeros_like,
)
from kit._random import bernoulli, multinomial, normal, randperm
from kit._tensor import (
    Tensor,
    bool_,
    float16,
    float32,
    float64,
    int8,
    int16,
    int32,
    int64,
    uint8,
)
from kit.autograd import backward, grad
from kit.compiler import compile  # noqa: A004 - PyTorch's name (torch.compile)
from kit.function import Function, FunctionCtx, once_differentiable
from kit.grad_mode import (
    detect_anomaly,
    enable_grad,
    inference_mode,
    is_anomaly_check_nan_enabled,
    is_anomaly_enabled,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
    set_detect_anomaly,
    set_grad_enabled,
)
from kit.gradcheck import GradcheckError, gradcheck, gradgradcheck
from kit.ops import *  # noqa: F403 - the primitive set is kit's namespace, as in torch
from kit.ops import __all__ as _ops_all

synchronize = backend.synchronize

__all__ = [
    "Function", "FunctionCtx", "GradcheckError", "Tensor", "arange", "backend", "backward",
    "bool_", "compile", "detect_anomaly", "empty", "empty_like", "enable_grad", "eye", "float16",
    "float32",
    "float64", "from_numpy", "full", "full_like", "func", "get_default_device",
    "get_default_dtype", "grad", "gradcheck", "gradgradcheck", "inference_mode", "int8", "int16",
    "int32", "int64", "is_anomaly_check_nan_enabled", "is_anomaly_enabled", "is_grad_enabled",
    "is_inference_mode_enabled", "linspace", "manual_seed", "no_grad", "once_differentiable",
    "ones", "ones_like", "profiler", "rand", "rand_like", "randint", "randn", "randn_like",
    "set_default_device", "set_default_dtype", "set_detect_anomaly", "set_grad_enabled",
    "synchronize", "tensor", "uint8", "zeros", "zeros_like", *_ops_all,
]
__all__ += ["bernoulli", "logspace", "multinomial", "normal", "randperm"]  # issue 12
__version__ = "0.1.0"
