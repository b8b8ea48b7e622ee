"""kit.kernels: fused GPU-kernel ops against the same ops composed from kit primitives.

The CPU (NumPy) path always runs; the GPU (CUDA kernel) path runs where a GPU is usable and is
checked against the CPU path on the same data.
"""

import numpy as np
import pytest
from gpu_marks import DEVICES, gpu_test

import kit
from kit.kernels import (
    FusedGELU,
    FusedSoftmaxCrossEntropy,
    fused_gelu,
    fused_softmax_cross_entropy,
    gelu_composed,
)


def host(t):
    d = t.data
    return np.asarray(d.get() if kit.backend.device_of(d) == "gpu" else d)


def value_and_grads(fn, arrays, device):
    """fn's output and the gradients of its float inputs, as NumPy arrays (the output is summed
    with fixed random weights, so every element of the gradient is exercised)."""
    inputs = [kit.tensor(a, device=device, requires_grad=a.dtype.kind == "f") for a in arrays]
    out = fn(*inputs)
    w = np.random.default_rng(1).standard_normal(out.shape).astype(out.dtype)
    (out * kit.tensor(w, device=device)).sum().backward()
    return host(out), [host(t.grad) for t in inputs if t.requires_grad]


# --- GELU -----------------------------------------------------------------------------------
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype, tol", [(np.float32, 1e-6), (np.float64, 1e-12)])
@pytest.mark.parametrize("shape", [(), (0,), (7,), (3, 5), (2, 3, 4)])
def test_gelu_fused_matches_composed(device, dtype, tol, shape):
    x = (np.random.default_rng(0).standard_normal(shape) * 3).astype(dtype)
    y_f, (g_f,) = value_and_grads(fused_gelu, [x], device)
    y_c, (g_c,) = value_and_grads(gelu_composed, [x], device)
    assert y_f.dtype == g_f.dtype == dtype and y_f.shape == shape
    np.testing.assert_allclose(y_f, y_c, rtol=tol * 10, atol=tol)
    np.testing.assert_allclose(g_f, g_c, rtol=tol * 10, atol=tol)


def test_gelu_gradcheck():
    x = kit.tensor(np.linspace(-4, 4, 11), dtype=kit.float64, requires_grad=True)
    assert kit.gradcheck(FusedGELU.apply, (x,))


def test_gelu_matches_torch():
    torch = pytest.importorskip("torch")
    x = np.linspace(-6, 6, 25)
    y, (g,) = value_and_grads(fused_gelu, [x], "cpu")
    xt = torch.tensor(x, requires_grad=True)
    yt = torch.nn.functional.gelu(xt, approximate="tanh")
    w = np.random.default_rng(1).standard_normal(y.shape)
    (yt * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(y, yt.detach().numpy(), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(g, xt.grad.numpy(), rtol=1e-12, atol=1e-14)


def test_gelu_records_one_custom_node_and_leaves_input_alone():
    data = np.array([-1.0, 0.5, 2.0])
    x = kit.tensor(data, requires_grad=True)
    y = fused_gelu(x)
    assert y.grad_fn.name() == "FusedGELUBackward" and y.grad_fn.kind == "custom"
    assert [e[0].name() for e in y.grad_fn.next_functions] == ["AccumulateGrad"]
    np.testing.assert_array_equal(x.data, data)  # the in-place NumPy path works on a copy
    with kit.no_grad():
        assert fused_gelu(x).grad_fn is None


def test_gelu_second_derivative_is_refused_with_a_clear_error():
    x = kit.tensor([0.3, -0.7], dtype=kit.float64, requires_grad=True)
    # the gradient flowing into the fused op depends on x, so a second backward must cross it
    (g,) = kit.grad((fused_gelu(x) * x).sum(), x, create_graph=True)
    with pytest.raises(RuntimeError, match="once_differentiable"):
        g.sum().backward()


@pytest.mark.parametrize("dtype", [np.int64, np.float16])
def test_gelu_rejects_unsupported_dtypes(dtype):
    with pytest.raises(TypeError, match=r"FusedGELU: forward got dtype .* Fix: convert"):
        fused_gelu(kit.tensor(np.ones(3, dtype=dtype)))


def test_gelu_rejects_non_tensors():
    with pytest.raises(TypeError, match="expected a Tensor, got list"):
        FusedGELU.apply([1.0])


# --- softmax-cross-entropy ------------------------------------------------------------------
def _ce_data(n=6, c=5, scale=3.0, dtype=np.float64, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((n, c)) * scale).astype(dtype), rng.integers(0, c, n)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("dtype, tol", [(np.float32, 1e-5), (np.float64, 1e-12)])
@pytest.mark.parametrize("n, c", [(6, 5), (3, 1), (4, 300)])
def test_softmax_ce_fused_matches_composed(device, reduction, dtype, tol, n, c):
    x, t = _ce_data(n, c, dtype=dtype)
    y_f, (g_f,) = value_and_grads(
        lambda a, b: fused_softmax_cross_entropy(a, b, reduction), [x, t], device)
    y_c, (g_c,) = value_and_grads(
        lambda a, b: kit.cross_entropy(a, b, reduction), [x, t], device)
    assert y_f.dtype == g_f.dtype == dtype
    np.testing.assert_allclose(y_f, y_c, rtol=tol, atol=tol)
    np.testing.assert_allclose(g_f, g_c, rtol=tol, atol=tol)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_softmax_ce_gradcheck(reduction):
    x, t = _ce_data(4, 3)
    logits = kit.tensor(x, requires_grad=True)
    assert kit.gradcheck(
        lambda a: FusedSoftmaxCrossEntropy.apply(a, kit.tensor(t), reduction), (logits,))


def test_softmax_ce_matches_torch():
    torch = pytest.importorskip("torch")
    x, t = _ce_data(5, 4)
    y, (g,) = value_and_grads(fused_softmax_cross_entropy, [x, t], "cpu")
    xt = torch.tensor(x, requires_grad=True)
    yt = torch.nn.functional.cross_entropy(xt, torch.tensor(t))
    w = np.random.default_rng(1).standard_normal(y.shape)
    (yt * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(y, yt.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(g, xt.grad.numpy(), rtol=1e-12, atol=1e-15)


def test_softmax_ce_is_stable_for_huge_logits():
    x = np.array([[1000.0, 0.0, -1000.0], [-1e4, -1e4, -1e4]])
    y, (g,) = value_and_grads(
        lambda a, b: fused_softmax_cross_entropy(a, b, "none"), [x, np.array([0, 2])], "cpu")
    np.testing.assert_allclose(y, [0.0, np.log(3)], atol=1e-12)
    assert np.isfinite(g).all()


def test_softmax_ce_frees_what_it_saved():
    x, t = _ce_data()
    logits = kit.tensor(x, requires_grad=True)
    loss = fused_softmax_cross_entropy(logits, kit.tensor(t))
    loss.backward()
    with pytest.raises(RuntimeError, match="second time"):
        loss.backward()


def test_softmax_ce_notices_a_target_changed_in_place():
    x, t = _ce_data()
    logits, target = kit.tensor(x, requires_grad=True), kit.tensor(t)
    loss = fused_softmax_cross_entropy(logits, target)
    target += 0  # a version bump: what backward saved is stale
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()


@pytest.mark.parametrize("logits, target, error, match", [
    (np.ones(3), np.array([0]), ValueError, r"shape \(N, C\)"),
    (np.ones((2, 3)), np.array([0.0, 1.0]), ValueError, "integer class indices"),
    (np.ones((2, 3)), np.array([0]), ValueError, r"of shape \(2,\)"),
    (np.ones((2, 3)), np.array([0, 3]), IndexError, r"class 3 .*valid: 0\.\.2"),
    (np.ones((2, 3)), np.array([-1, 0]), IndexError, r"min -1"),
    (np.ones((2, 3), dtype=np.int64), np.array([0, 1]), TypeError, "float32 and float64"),
])
def test_softmax_ce_errors_name_the_op_and_the_fix(logits, target, error, match):
    with pytest.raises(error, match=match):
        fused_softmax_cross_entropy(kit.tensor(logits), kit.tensor(target))


def test_softmax_ce_rejects_an_unknown_reduction():
    x, t = _ce_data()
    with pytest.raises(ValueError, match="reduction must be one of"):
        fused_softmax_cross_entropy(kit.tensor(x), kit.tensor(t), "max")


# --- the GPU path against the CPU path ------------------------------------------------------
@gpu_test
def test_gpu_kernels_match_the_numpy_path_on_large_inputs():
    x = np.random.default_rng(0).standard_normal((512, 1000)).astype(np.float32)
    t = np.random.default_rng(1).integers(0, 1000, 512)
    for fn, arrays in [(fused_gelu, [x]), (fused_softmax_cross_entropy, [x, t])]:
        y_cpu, g_cpu = value_and_grads(fn, arrays, "cpu")
        y_gpu, g_gpu = value_and_grads(fn, arrays, "gpu")
        np.testing.assert_allclose(y_gpu, y_cpu, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(g_gpu[0], g_cpu[0], rtol=1e-5, atol=1e-6)


@gpu_test
def test_gpu_kernel_refuses_mixed_devices():
    x, t = _ce_data()
    with pytest.raises(RuntimeError, match="move one explicitly"):
        fused_softmax_cross_entropy(kit.tensor(x, device="gpu"), kit.tensor(t))


# --- the MXNet-style front end: the same kernels as registered CustomOps ---------------------
def mx_run(mx, ctx, op_type, x, *extra, head):
    """Output and data gradient of one mx.nd.Custom call, with head gradient `head`."""
    data = mx.nd.array(x, ctx=ctx, dtype="float64")
    data.attach_grad()
    with mx.autograd.record():
        out = mx.nd.Custom(data, *[mx.nd.array(e, ctx=ctx) for e in extra], op_type=op_type)
    out.backward(mx.nd.array(head, ctx=ctx, dtype="float64"))
    assert out.context == ctx and data.grad.context == ctx
    return out.asnumpy(), data.grad.asnumpy()


@pytest.mark.parametrize("device", DEVICES)
def test_mx_custom_ops_match_the_function_path(device):
    mx = pytest.importorskip("kit.mx")
    import kit.kernels.mx_ops  # noqa: F401 - registers the ops

    ctx = mx.gpu() if device == "gpu" else mx.cpu()
    x, t = _ce_data(5, 4)
    head = np.random.default_rng(1).standard_normal(5)

    y, gx = mx_run(mx, ctx, "kit_fused_gelu", x, head=np.ones(x.shape))
    ref = kit.tensor(x, requires_grad=True)
    out = fused_gelu(ref)
    out.sum().backward()
    np.testing.assert_allclose(y, host(out.detach()), rtol=1e-12)
    np.testing.assert_allclose(gx, host(ref.grad), rtol=1e-12)

    # labels as MXNet users write them: float32
    y, gx = mx_run(mx, ctx, "kit_fused_softmax_ce", x, t.astype(np.float32), head=head)
    ref = kit.tensor(x, requires_grad=True)
    out = fused_softmax_cross_entropy(ref, kit.tensor(t), "none")
    (out * kit.tensor(head)).sum().backward()
    np.testing.assert_allclose(y, host(out.detach()), rtol=1e-12)
    np.testing.assert_allclose(gx, host(ref.grad), rtol=1e-12)


def test_mx_custom_op_errors_name_the_op():
    mx = pytest.importorskip("kit.mx")
    import kit.kernels.mx_ops  # noqa: F401 - registers the ops

    data = mx.nd.array(np.ones((2, 3)))
    with pytest.raises(IndexError, match=r"kit_fused_softmax_ce.*label 3 .*valid: 0\.\.2"):
        mx.nd.Custom(data, mx.nd.array([0, 3]), op_type="kit_fused_softmax_ce")
    with pytest.raises(ValueError, match="not whole numbers"):
        mx.nd.Custom(data, mx.nd.array([0, 1.5]), op_type="kit_fused_softmax_ce")
    with pytest.raises(ValueError, match=r"data \(N, C\) and label \(N,\)"):
        mx.nd.Custom(data, mx.nd.array([0, 1, 2]), op_type="kit_fused_softmax_ce")
    with pytest.raises(TypeError, match="float32 and float64"):
        mx.nd.Custom(mx.nd.array([1, 2], dtype="int32"), op_type="kit_fused_gelu")


@pytest.mark.parametrize("module", ["kit.kernels", "kit.kernels.gelu", "kit.kernels.softmax_ce"])
def test_docstring_examples_run(module):
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(module))
    assert result.failed == 0 and result.attempted > 0
