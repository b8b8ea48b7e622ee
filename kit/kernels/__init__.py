"""Custom ops whose forward and backward are GPU kernels, with a NumPy path for the CPU.

Each op is a `kit.Function` (PyTorch-style: `FusedGELU.apply(x)`), so it records one graph node
like any custom op; on a CuPy array it launches CUDA kernels (an ElementwiseKernel for GELU, a
RawKernel in CUDA C for the softmax-cross-entropy forward), on a NumPy array it runs the same maths
in NumPy. Each has a composed twin built from kit primitives, the reference it is tested against.
`import kit.kernels.mx_ops` registers the same kernels as MXNet-style CustomOps
("kit_fused_gelu", "kit_fused_softmax_ce") for `mx.nd.Custom`.

>>> import kit
>>> from kit.kernels import FusedGELU
>>> x = kit.tensor([1.0, -1.0], requires_grad=True)
>>> FusedGELU.apply(x).sum().backward()
>>> x.grad
tensor([ 1.0830, -0.0830])
"""

from kit.kernels.gelu import FusedGELU, fused_gelu, gelu_composed
from kit.kernels.softmax_ce import FusedSoftmaxCrossEntropy, fused_softmax_cross_entropy

__all__ = [
    "FusedGELU", "FusedSoftmaxCrossEntropy", "fused_gelu", "fused_softmax_cross_entropy",
    "gelu_composed",
]
