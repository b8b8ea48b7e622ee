"""The standard workloads of `python -m kit.bench`.

Each workload builds its data once for a (size, device) pair and returns the zero-argument call to
time; the call returns its result (a Tensor or an array), so tests can check where it ran. Sizes
are elements for elementwise work, the matrix side for matmul and the batch for the MLP and the
loss. The sweep covers what the GPU targets need: kit's matmul and raw CuPy at 4096, the fused op
and a device copy at 2**26 elements, and the MLP at batch 4096 on both devices.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

import kit
from kit import backend, kernels

ELEMENTS = tuple(4**k for k in range(5, 14))  # 1 Ki .. 64 Mi elements
MLP_LAYERS = (784, 256, 256, 10)
CLASSES = 1000  # columns of the softmax-cross-entropy workload


@dataclass(frozen=True)
class Workload:
    """One thing to time, at several sizes, on the devices it makes sense on."""

    name: str
    description: str
    setup: Callable  # (size, device) -> zero-argument callable
    sizes: tuple
    quick_sizes: tuple
    size_name: str = "elements"
    devices: tuple = ("cpu", "gpu")
    cpu_max: int | None = None  # the CPU stops here in the standard sweep (time, not meaning)
    bytes_moved: Callable | None = None  # size -> bytes read + written per call
    flops: Callable | None = None  # size -> floating-point operations per call

    def sizes_for(self, device, quick=False):
        sizes = self.quick_sizes if quick else self.sizes
        if device == "cpu" and self.cpu_max is not None and not quick:
            sizes = tuple(n for n in sizes if n <= self.cpu_max)
        return sizes


def _host_data(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _array(device, *shape, seed=0):
    return backend.to_device(_host_data(*shape, seed=seed), device)


def _tensor(device, *shape, seed=0, requires_grad=False):
    # NOTE: device= is what places a Tensor; kit.tensor(gpu_array) without it copies to the CPU
    return kit.tensor(_host_data(*shape, seed=seed), device=device, requires_grad=requires_grad)


def _no_grad(fn):
    def call():
        with kit.no_grad():
            return fn()

    return call


def elementwise_chain(n, device):
    """Four kit elementwise ops in a row, forward only: ((x * 1.5 + 0.5).tanh() * x)."""
    x = _tensor(device, n)
    return _no_grad(lambda: ((x * 1.5 + 0.5).tanh() * x))


def matmul(n, device):
    """kit.matmul of two n x n float32 matrices (Tensors, no grad)."""
    a, b = _tensor(device, n, n), _tensor(device, n, n, seed=1)
    return _no_grad(lambda: kit.matmul(a, b))


def matmul_raw(n, device):
    """The same product on the bare arrays (NumPy or CuPy): the bar kit's matmul is held to."""
    a, b = _array(device, n, n), _array(device, n, n, seed=1)
    return lambda: a @ b


def mlp(batch, device):
    """Forward and backward of a 784-256-256-10 ReLU MLP with a cross-entropy loss."""
    rng = np.random.default_rng(0)
    params = []
    for fan_in, fan_out in itertools.pairwise(MLP_LAYERS):
        w = rng.standard_normal((fan_in, fan_out)) / math.sqrt(fan_in)
        params += [kit.tensor(w.astype(np.float32), device=device, requires_grad=True),
                   kit.tensor(np.zeros(fan_out, np.float32), device=device, requires_grad=True)]
    x = _tensor(device, batch, MLP_LAYERS[0])
    y = kit.tensor(rng.integers(0, MLP_LAYERS[-1], batch), device=device)

    def step():
        for p in params:
            p.grad = None
        h = x
        for i in range(0, len(params), 2):
            h = h @ params[i] + params[i + 1]
            if i + 2 < len(params):
                h = kit.relu(h)
        loss = kit.cross_entropy(h, y)
        loss.backward()
        return loss

    step.params = params  # for tests: the gradients a step leaves behind
    return step


def gelu_fused(n, device):
    """kit.kernels.fused_gelu forward: one kernel, one read and one write per element."""
    x = _tensor(device, n)
    return _no_grad(lambda: kernels.fused_gelu(x))


def gelu_composed(n, device):
    """The same GELU composed from nine kit primitive calls."""
    x = _tensor(device, n)
    return _no_grad(lambda: kernels.gelu_composed(x))


def device_copy(n, device):
    """A plain copy of n float32 elements on the device: the memory-bandwidth bar."""
    src, dst = _array(device, n), _array(device, n, seed=1)
    if backend.device_of(src) == "gpu":
        def copy():
            dst.data.copy_from_device_async(src.data, src.nbytes)  # cudaMemcpyAsync
            return dst

        return copy
    return lambda: np.copyto(dst, src) or dst


def _softmax_ce(loss_fn):
    def setup(rows, device):
        x = _tensor(device, rows, CLASSES, requires_grad=True)
        t = kit.tensor(np.random.default_rng(1).integers(0, CLASSES, rows), device=device)

        def step():
            x.grad = None
            loss = loss_fn(x, t)
            loss.backward()
            return loss

        return step

    return setup


def transfer_h2d(n, device):
    """Copy n float32 elements from host memory to the GPU."""
    host = _host_data(n)
    return lambda: backend.to_device(host, "gpu")


def transfer_d2h(n, device):
    """Copy n float32 elements from the GPU to host memory."""
    dev = _array("gpu", n)
    return lambda: backend.to_device(dev, "cpu")


def _rw_bytes(n):
    return 2 * 4 * n  # float32: read n, write n


def _mlp_flops(batch):
    macs = sum(a * b for a, b in itertools.pairwise(MLP_LAYERS))
    return 3 * 2 * batch * macs  # forward, plus two products per layer in backward


_QUICK = (2**8, 2**12, 2**16)
_ROWS = (64, 256, 1024, 4096, 16384)
WORKLOADS = {w.name: w for w in (
    Workload("elementwise_chain", elementwise_chain.__doc__, elementwise_chain, ELEMENTS, _QUICK,
             cpu_max=2**24),
    Workload("matmul", matmul.__doc__, matmul, (64, 128, 256, 512, 1024, 2048, 4096),
             (16, 32, 64), "matrix side", cpu_max=2048, flops=lambda n: 2 * n**3),
    Workload("matmul_raw", matmul_raw.__doc__, matmul_raw, (64, 128, 256, 512, 1024, 2048, 4096),
             (16, 32, 64), "matrix side", cpu_max=2048, flops=lambda n: 2 * n**3),
    Workload("mlp", mlp.__doc__, mlp, (64, 256, 1024, 4096), (8, 32), "batch", flops=_mlp_flops),
    Workload("gelu_fused", gelu_fused.__doc__, gelu_fused, ELEMENTS, _QUICK, cpu_max=2**24,
             bytes_moved=_rw_bytes),
    Workload("gelu_composed", gelu_composed.__doc__, gelu_composed, ELEMENTS, _QUICK,
             cpu_max=2**24, bytes_moved=_rw_bytes),
    Workload("device_copy", device_copy.__doc__, device_copy, ELEMENTS, _QUICK, cpu_max=2**24,
             bytes_moved=_rw_bytes),
    Workload("softmax_ce_fused", f"kit.kernels.fused_softmax_cross_entropy, forward and "
             f"backward, {CLASSES} classes", _softmax_ce(kernels.fused_softmax_cross_entropy),
             _ROWS, (8, 32), "rows"),
    Workload("softmax_ce_composed", f"kit.cross_entropy, forward and backward, {CLASSES} classes",
             _softmax_ce(kit.cross_entropy), _ROWS, (8, 32), "rows"),
    Workload("transfer_h2d", transfer_h2d.__doc__, transfer_h2d, ELEMENTS, _QUICK,
             devices=("gpu",), bytes_moved=lambda n: 4 * n),
    Workload("transfer_d2h", transfer_d2h.__doc__, transfer_d2h, ELEMENTS, _QUICK,
             devices=("gpu",), bytes_moved=lambda n: 4 * n),
)}
