"""`import kit.torch as torch`: a faithful subset of PyTorch on kit's engine.

Lesson code written against this namespace runs unchanged on real PyTorch (and the other way
round for the subset covered): the same names, argument spellings (`dim=`, `keepdim=`), dtype
defaults (Python floats give float32), grad modes and autograd.Function. Everything here is kit:
`torch.Tensor` is `kit.Tensor`, `torch.autograd.Function` is `kit.Function`, and `torch.func` is
`kit.func`. Dtypes are kit's NumPy dtypes that print as PyTorch's.

>>> import kit.torch as torch
>>> x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
>>> y = (x * x).sum()
>>> y.backward()
>>> x.grad, x.dtype == torch.float32
(tensor([2., 4., 6.]), True)
"""

import importlib
import math

from kit import Tensor
from kit._creation import (
    arange,
    empty,
    empty_like,
    eye,
    from_numpy,
    full,
    full_like,
    linspace,
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
from kit.data import Generator
from kit.grad_mode import (
    enable_grad,
    inference_mode,
    is_anomaly_check_nan_enabled,
    is_anomaly_enabled,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
    set_grad_enabled,
)
from kit.ops._registry import published
from kit.ops.movement import broadcast_shapes
from kit.serialization import load, save
from kit.torch import autograd, cuda, linalg, nn, optim, profiler, serialization, utils
from kit.torch._dtypes import (
    bool,
    device,
    double,
    dtype,
    float,
    float16,
    float32,
    float64,
    half,
    int,
    int8,
    int16,
    int32,
    int64,
    long,
    short,
    uint8,
)
from kit.torch._functions import (
    add,
    allclose,
    amax,
    amin,
    argmax,
    argmin,
    argsort,
    as_tensor,
    cat,
    compile,
    concat,
    equal,
    get_default_device,
    get_default_dtype,
    is_tensor,
    isclose,
    log_softmax,
    logsumexp,
    max,
    maximum,
    mean,
    min,
    minimum,
    numel,
    softmax,
    sort,
    stack,
    sub,
    sum,
)

inf, nan, pi, e = math.inf, math.nan, math.pi, math.e  # Python floats, as torch's

# --- the functions real programs call that are no single registry op (issue 12) -------------
from kit._creation import logspace  # noqa: E402
from kit._random import bernoulli, multinomial, normal, randperm  # noqa: E402
from kit.torch.linalg import cholesky_deprecated as cholesky  # noqa: E402

# kit's ops under the names their declarations publish in kit.torch (kit/ops/_registry.py).
_FROM_REGISTRY = {name: op.fn for name, op in published("torch")}
globals().update(_FROM_REGISTRY)
subtract = sub  # (sub takes alpha=, so it is _functions.sub, not the registry's)
# Tensor methods PyTorch also has as functions (kit/_tensor_info.py, kit/_tensor_methods.py)
t, is_complex, is_signed, get_device, is_same_size, is_nonzero = (
    Tensor.t, Tensor.is_complex, Tensor.is_signed, Tensor.get_device, Tensor.is_same_size,
    Tensor.is_nonzero)


def __getattr__(name):
    # torch.func is kit.func, built separately; import it on first use so that the rest of
    # kit.torch never depends on it.
    if name == "func":
        return importlib.import_module("kit.torch.func")
    if name == "vmap":  # torch.vmap is torch.func.vmap
        return importlib.import_module("kit.torch.func").vmap
    raise AttributeError(f"module 'kit.torch' has no attribute {name!r}")


__all__ = [
    "add", "allclose", "amax", "amin", "arange", "argmax", "argmin", "argsort", "as_tensor",
    "autograd", "bool", "broadcast_shapes",
    "cat", "compile", "concat", "cuda", "device", "double", "dtype", "empty", "enable_grad",
    "equal", "eye",
    "inference_mode", "is_anomaly_check_nan_enabled", "is_anomaly_enabled",
    "is_inference_mode_enabled",
    "float", "float16", "float32", "float64", "from_numpy", "full", "half", "int", "int16",
    "int32", "int64", "int8", "is_grad_enabled", "is_tensor", "isclose", "linspace",
    "log_softmax", "logsumexp",
    "long", "manual_seed", "max", "maximum", "mean", "min", "minimum", "nn", "no_grad", "numel",
    "ones", "ones_like", "profiler", "rand", "randint", "randn", "set_grad_enabled", "short",
    "softmax", "sort", "stack", "sub", "subtract", "sum",
    "Tensor", "tensor", "uint8", "zeros", "zeros_like",
]
__all__ += sorted(_FROM_REGISTRY)
__all__ += ["Generator", "load", "optim", "save", "serialization", "utils"]  # the module layer
__all__ += ["e", "empty_like", "full_like", "get_default_device", "get_default_dtype", "inf",
            "linalg", "nan", "pi", "rand_like", "randn_like", "set_default_device",
            "set_default_dtype"]
__all__ += ["bernoulli", "cholesky", "logspace", "multinomial", "normal", "randperm"]  # issue 12
__all__ += ["get_device", "is_complex", "is_nonzero", "is_same_size", "is_signed", "t"]
