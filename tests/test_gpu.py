"""Transfers, device errors and both front ends on device "gpu".

Every op runs its sample inputs on the GPU in test_op_registry.py (test_on_gpu_as_on_cpu). Here
"gpu" is marked, and skipped with kit.backend's reason where no GPU is usable; "fake-gpu" runs
the GPU code paths everywhere, on tests/fake_cupy.py (NumPy arrays of another type, no CUDA).
"""

import fake_cupy
import numpy as np
import pytest
from gpu_marks import GPU_PARAM

import kit
from kit import backend


@pytest.fixture(params=["cpu", GPU_PARAM, "fake-gpu"])
def device(request):
    """"cpu", "gpu" (a real one) or "fake-gpu" (kit's device "gpu" on the fake CuPy)."""
    if request.param == "fake-gpu":
        with fake_cupy.installed():
            yield "gpu"
    else:
        yield request.param


@pytest.fixture(params=[GPU_PARAM, "fake-gpu"])
def gpu(request):
    """Device "gpu", real or fake."""
    if request.param == "fake-gpu":
        with fake_cupy.installed():
            yield "gpu"
    else:
        yield "gpu"

RNG = np.random.default_rng(7)
DATA = {
    "A": RNG.uniform(-2, 2, (3, 4)),
    "A2": RNG.uniform(-2, 2, (3, 4)),
    "B": RNG.uniform(0.5, 2, 4) * RNG.choice([-1, 1], 4),  # away from 0: a safe divisor
    "P": RNG.uniform(0.5, 2, (3, 4)),  # positive: log, sqrt, pow base
    "C": RNG.uniform(-2, 2, (4, 2)),
    "v": RNG.uniform(-2, 2, 4),
}


def host(t):
    return None if t is None else np.asarray(backend.to_device(t.data, "cpu"))


# --- transfers and devices --------------------------------------------------------------------
def test_explicit_transfer_carries_the_gradient_back(device):
    x = kit.tensor(DATA["A"], requires_grad=True)  # a CPU leaf
    y = (x.to(device).exp() * 2).sum()
    assert y.device == device
    y.backward()
    assert x.grad.device == "cpu"
    np.testing.assert_allclose(host(x.grad), 2 * np.exp(DATA["A"]), rtol=1e-12)


def test_mixing_devices_is_a_clear_error(gpu):
    with pytest.raises(RuntimeError, match="same device.*x.to"):
        kit.tensor([1.0], device="gpu") + kit.tensor([1.0])


def test_where_condition_from_numpy_follows_the_data(gpu):
    x = kit.tensor([1.0, -2.0, 3.0], device=gpu, requires_grad=True)
    mask = np.array([True, False, True])  # host data, like any NumPy operand: moved along
    y = kit.where(mask, x, 0.0)
    y.sum().backward()
    assert y.device == x.grad.device == "gpu"
    np.testing.assert_array_equal(host(x.grad), [1.0, 0.0, 1.0])
    with pytest.raises(RuntimeError, match="same device"):  # a CPU Tensor is not moved for you
        kit.where(kit.tensor(mask), x, x)


def test_gpu_tensor_conversions(gpu):
    x = kit.tensor([1.0, 2.0], device="cuda")
    assert x.device == "gpu" and "device='gpu'" in repr(x)
    with pytest.raises(TypeError, match="copy it to the CPU first"):
        x.numpy()
    np.testing.assert_array_equal(x.cpu().numpy(), [1.0, 2.0])
    kit.synchronize()


def test_gradcheck_on_the_gpu(gpu):
    x = kit.tensor(DATA["A"], device="gpu", requires_grad=True)
    assert kit.gradcheck(lambda t: (t.tanh() * t).sum(axis=1), (x,))


# --- the front ends ---------------------------------------------------------------------------
def test_torch_front_end_on_device(device):
    import kit.torch as torch

    class Cube(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x**3

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 3 * x**2 * g

    dev = "cuda" if device == "gpu" else "cpu"
    x = torch.tensor(DATA["A"], device=dev, requires_grad=True)
    y = torch.nn.functional.relu(Cube.apply(x)).sum(dim=1).mean()
    y.backward()
    assert x.grad.device == device
    np.testing.assert_allclose(host(x.grad), np.where(DATA["A"] > 0, DATA["A"] ** 2, 0),
                               rtol=1e-12)


_SQUARE = "gpu_test_square"


def _register_square(mx):
    """Seed 003's CustomOp, registered once per session (a second registration would warn)."""
    if _SQUARE in mx.operator._REGISTRY:
        return

    class Square(mx.operator.CustomOp):
        def forward(self, is_train, req, in_data, out_data, aux):
            self.assign(out_data[0], req[0], in_data[0] * in_data[0])

        def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
            self.assign(in_grad[0], req[0], 2 * in_data[0] * out_grad[0])

    @mx.operator.register(_SQUARE)
    class SquareProp(mx.operator.CustomOpProp):
        def create_operator(self, ctx, shapes, dtypes):
            return Square()


def test_mx_front_end_on_device(device):
    mx = pytest.importorskip("kit.mx")
    _register_square(mx)
    ctx = mx.gpu() if device == "gpu" else mx.cpu()
    x = mx.nd.array(DATA["A"], ctx=ctx, dtype="float64")
    x.attach_grad()
    with mx.autograd.record():
        y = mx.nd.Custom(x, op_type=_SQUARE) * 3
    y.backward()
    assert x.grad.context == ctx
    np.testing.assert_allclose(x.grad.asnumpy(), 6 * DATA["A"], rtol=1e-12)
