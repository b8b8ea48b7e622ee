"""Compile-once caches for the CUDA kernels of kit.kernels.

CuPy compiles a kernel on its first call and caches the binary on disk; these caches only keep the
Python kernel objects, so each is built once per process (and per C type for raw kernels). CuPy is
reached through `kit.backend.require_gpu`, never imported at module level, so importing kit.kernels
works on machines without a GPU.
"""

from __future__ import annotations

import numpy as np

from kit import backend

C_TYPES = {np.dtype("float32"): "float", np.dtype("float64"): "double"}
_kernels: dict = {}


def elementwise(name: str, in_params: str, out_params: str, body: str):
    """A cached `cupy.ElementwiseKernel` (type placeholders such as `T` bind at call time)."""
    kernel = _kernels.get(name)
    if kernel is None:
        cupy = backend.require_gpu(f"the CUDA kernel {name}")
        kernel = _kernels[name] = cupy.ElementwiseKernel(in_params, out_params, body, name)
    return kernel


def raw(name: str, source: str, dtype):
    """A cached `cupy.RawKernel` compiled from CUDA C `source` with `T` set to dtype's C type.

    The source names its element type `T`; it is defined with a typedef, so one source serves
    float and double.
    """
    ctype = C_TYPES[np.dtype(dtype)]
    key = (name, ctype)
    kernel = _kernels.get(key)
    if kernel is None:
        cupy = backend.require_gpu(f"the CUDA kernel {name}")
        kernel = _kernels[key] = cupy.RawKernel(f"typedef {ctype} T;\n{source}", name)
    return kernel


def check_float(op: str, array) -> None:
    """Kernels are written for float32 and float64; say so instead of failing to compile."""
    if array.dtype not in C_TYPES:
        raise TypeError(
            f"kit.kernels.{op}: forward got dtype {array.dtype}, but the fused kernels support "
            f"float32 and float64. Fix: convert first, e.g. x.float()"
        )
