"""Every primitive and both front ends on device "gpu", against the same code on NumPy.

Each case runs on "cpu" as well, where it checks that the case itself runs and keeps its results
on the input's device; on "gpu" (marked, and skipped with kit.backend's reason where no GPU is
usable) it is also compared with the CPU result, values and gradients, in float64. "fake-gpu" runs
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


def on(t, values):
    """Constant data on t's device (indices, masks), as lesson code would build it."""
    return kit.tensor(np.asarray(values), device=t.device)


CASES = {
    # elementwise
    "abs": (kit.abs, "A"), "add": (kit.add, "A B"), "sub": (kit.sub, "A B"),
    "mul": (kit.mul, "A B"), "div": (kit.div, "A B"), "pow": (kit.pow, "P A"),
    "neg": (kit.neg, "A"), "exp": (kit.exp, "A"), "log": (kit.log, "P"), "sqrt": (kit.sqrt, "P"),
    "tanh": (kit.tanh, "A"), "sigmoid": (kit.sigmoid, "A"), "sin": (kit.sin, "A"),
    "cos": (kit.cos, "A"), "maximum": (kit.maximum, "A A2"), "minimum": (kit.minimum, "A A2"),
    "where": (lambda a, b: kit.where(a.data > 0, a, b), "A A2"),
    "clamp": (lambda a: kit.clamp(a, -0.5, 0.5), "A"), "sign": (kit.sign, "A"),
    "eq": (lambda a: kit.eq(a, a * (a > 0)), "A"), "ne": (kit.ne, "A A2"), "lt": (kit.lt, "A A2"),
    "le": (kit.le, "A A2"), "gt": (kit.gt, "A A2"), "ge": (kit.ge, "A A2"),
    "logical_and": (lambda a, b: kit.logical_and(a > 0, b > 0), "A A2"),
    "logical_or": (lambda a, b: kit.logical_or(a > 0, b > 0), "A A2"),
    "logical_xor": (lambda a, b: kit.logical_xor(a > 0, b > 0), "A A2"),
    "logical_not": (lambda a: kit.logical_not(a > 0), "A"),
    # reductions
    "sum": (lambda a: kit.sum(a, axis=1), "A"), "mean": (kit.mean, "A"),
    "max": (lambda a: kit.max(a, axis=1).values + kit.max(a), "A"),
    "min": (lambda a: kit.min(a, axis=0).values + kit.min(a), "A"),
    "logsumexp": (lambda a: kit.logsumexp(a, axis=1), "A"),
    "argmax": (lambda a: kit.argmax(a, axis=1), "A"), "argmin": (kit.argmin, "A"),
    # linear algebra
    "matmul": (kit.matmul, "A C"), "mm": (kit.mm, "A C"), "dot": (kit.dot, "v B"),
    "outer": (kit.outer, "v B"),
    # movement
    "reshape": (lambda a: kit.reshape(a, (4, 3)), "A"),
    "permute": (lambda a: kit.permute(a, 1, 0), "A"), "transpose": (kit.transpose, "A"),
    "movedim": (lambda a: kit.movedim(kit.reshape(a, (3, 2, 2)), 0, -1), "A"),
    "unsqueeze": (lambda a: kit.unsqueeze(a, 1), "A"),
    "squeeze": (lambda a: kit.squeeze(kit.reshape(a, (3, 1, 4)), 1), "A"),
    "flatten": (kit.flatten, "A"),
    "expand": (lambda a: kit.expand(kit.reshape(a, (3, 1, 4)), (3, 2, 4)), "A"),
    "broadcast_to": (lambda b: kit.broadcast_to(b, (3, 4)), "B"),
    "getitem": (lambda a: kit.getitem(a, (slice(None), on(a, [0, 2, 2]))) + a[a.data > 0].sum(),
                "A"),
    "index_put": (lambda a, b: kit.index_put(a, 1, b), "A B"),
    "index_put_add": (lambda v: kit.index_put_add(v[:3], (on(v, [0, 2, 2]),), (4,)), "v"),
    "cat": (lambda a, b: kit.cat([a, kit.reshape(b, (1, 4))], 0), "A B"),
    "concatenate": (lambda a, a2: kit.concatenate([a, a2], 1), "A A2"),
    "stack": (lambda a, a2: kit.stack([a, a2], 2), "A A2"),
    "sort": (lambda a: kit.sort(a, axis=1, descending=True).values, "A"),
    "argsort": (lambda a: kit.argsort(a, axis=0), "A"),
    "index_add": (lambda a, b: kit.index_add(a, 0, on(a, [0, 2]), kit.stack([b, b])), "A B"),
    # views (kit/ops/view_ops.py)
    "view": (lambda a: kit.view(a, 2, 6), "A"),
    "view_as": (lambda a, a2: kit.view_as(a, a2), "A A2"),
    "narrow": (lambda a: kit.narrow(a, 1, 1, 2), "A"),
    "unbind": (lambda a: kit.unbind(a, 1)[2] * 2, "A"),
    "split": (lambda a: kit.split(a, [1, 3], 1)[1], "A"),
    "chunk": (lambda a: kit.chunk(a, 2, 1)[0], "A"),
    "diagonal": (lambda a: kit.diagonal(a, 1), "A"),
    # composites
    "relu": (kit.relu, "A"), "softmax": (lambda a: kit.softmax(a, 1), "A"),
    "log_softmax": (lambda a: kit.log_softmax(a, 0), "A"),
    "cross_entropy": (lambda a: kit.cross_entropy(a, on(a, [0, 3, 1])), "A"),
    "mse_loss": (kit.mse_loss, "A A2"),
}


def host(t):
    return None if t is None else np.asarray(backend.to_device(t.data, "cpu"))


def run_case(name, device):
    """Output and input gradients (NumPy) of one case on `device`; checks where results live."""
    fn, keys = CASES[name]
    inputs = [kit.tensor(DATA[k], device=device, requires_grad=True) for k in keys.split()]
    out = fn(*inputs)
    assert out.device == device, f"{name}: output left {device}"
    if out.requires_grad:
        w = np.random.default_rng(1).standard_normal(out.shape)
        (out * kit.tensor(w, device=device)).sum().backward()
    for t in inputs:
        assert t.grad is None or t.grad.device == device, f"{name}: gradient left {device}"
    return host(out), [host(t.grad) for t in inputs]


def test_every_primitive_has_a_case():
    ops = {n for n in kit.ops.__all__ if callable(getattr(kit, n))}
    assert ops == set(CASES), f"no case: {sorted(ops - set(CASES))}, not an op: " \
        f"{sorted(set(CASES) - ops)}"


@pytest.mark.parametrize("name", sorted(CASES))
def test_primitive_on_device_matches_numpy(name, device):
    out, grads = run_case(name, device)
    if device == "cpu":
        assert out.size and all(g is None or np.isfinite(g).all() for g in grads)
        return
    ref_out, ref_grads = run_case(name, "cpu")
    np.testing.assert_allclose(out, ref_out, rtol=1e-10, atol=1e-12)
    for g, ref in zip(grads, ref_grads, strict=True):
        assert (g is None) == (ref is None)
        if g is not None:
            np.testing.assert_allclose(g, ref, rtol=1e-10, atol=1e-12)


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
