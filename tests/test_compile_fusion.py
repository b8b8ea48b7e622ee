"""Fusion: elementwise runs become one kernel per pass, on every backend, equal to the unfused
replay (kit.compile(fuse=False)).

CPU kernels: a numba loop (the `jit` extra; skipped with the reason without it) and NumPy ufuncs
into preallocated buffers, in cache-sized blocks for large arrays. GPU kernels: CuPy's
ElementwiseKernel and ReductionKernel; the fake CuPy of tests/fake_cupy.py runs their generated C
(translated to NumPy), a real GPU runs it for real (skipped with the reason without one).
Structure is asserted (groups, what a kernel reads and writes), never times.
"""

from __future__ import annotations

import warnings

import fake_cupy
import numpy as np
import pytest
from gpu_marks import gpu_test

import kit
from kit.compiler import config, kernels
from kit.compiler.expr import Expr, NotFusableError


def _numba():
    return pytest.importorskip("numba", reason="numba is not installed (pip install 'kit[jit]')")


@pytest.fixture(autouse=True)
def _own_kernel_cache(monkeypatch):
    """Each test compiles its kernels (a fake CuPy's must not serve a later test)."""
    monkeypatch.setattr(kernels, "CACHE", {})


def _chain(x, w, c):
    y = ((x * w + c).tanh() * x).exp()
    return kit.maximum(y, x) - kit.where(x > 0, y * 0.5, c).sigmoid()


def _data(n, dtype=np.float64, seed=0, device="cpu"):
    rng = np.random.default_rng(seed)
    x, w, c = (rng.uniform(-1, 1, n).astype(dtype) for _ in range(3))
    x.flat[:2] = [np.nan, 0.0]  # NaN and a tie go through maximum, where and the gradients
    return (kit.tensor(x, requires_grad=True, device=device), kit.tensor(w, device=device),
            kit.tensor(c, requires_grad=True, device=device))


def _run(fn, inputs, g):
    for t in inputs:
        t.grad = None
    y = fn(*inputs)
    y.backward(g)
    return [kit.backend.to_device(v._data, "cpu").copy()
            for v in (y, inputs[0].grad, inputs[2].grad)]


def _compare(inputs, backend=None, rtol=1e-12):
    g = kit.ones(inputs[0].shape, dtype=inputs[0].dtype, device=inputs[0].device) * 0.5
    unfused = kit.compile(_chain, fuse=False)
    fused = kit.compile(_chain)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # NumPy's op by op warn about the NaN
        expected = _run(unfused, inputs, g)
    for _ in range(2):
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # fused kernels never warn (as PyTorch's)
            got = _run(fused, inputs, g)
        for a, b in zip(got, expected, strict=True):
            np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol, equal_nan=True)
    info = fused.explain()
    assert not unfused.explain()["groups"]
    if backend is not None:
        assert [grp["backend"] for grp in info["groups"]] == [backend]
    return info


@pytest.mark.parametrize("n", [7, 70_000])  # one pass, and blocks of the NumPy kernel
@pytest.mark.parametrize("kernel", ["numba", "numpy"])
def test_cpu_kernels_equal_the_unfused_replay(kernel, n, monkeypatch):
    if kernel == "numba":
        _numba()
    monkeypatch.setattr(config, "cpu_kernel", kernel)
    info = _compare(_data(n), kernel)
    (group,) = info["groups"]
    assert group["ops"] == ["mul", "add", "tanh", "mul", "exp", "maximum", "gt", "mul", "where",
                            "sigmoid", "sub"]
    if kernel == "numpy":
        assert ("for start in range(0, SIZE, BLOCK)" in group["source"]) == (n > kernels.BLOCK)


def test_float32_kernels_follow_numpy_dtype_rules(monkeypatch):
    _numba()
    monkeypatch.setattr(config, "cpu_kernel", "numba")
    info = _compare(_data(9, np.float32), "numba", rtol=2e-6)
    assert "np.float32(0.5)" in info["groups"][0]["source"]  # a Python float takes the dtype


def test_auto_uses_numba_unless_a_large_group_has_transcendental_functions(monkeypatch):
    _numba()
    f = kit.compile(lambda x: (x * 2 + 1).tanh())
    g = kit.compile(lambda x: (x * 2 + 1) * x)
    for fn, n, backend in ((f, 100, "numba"), (f, kernels.LARGE, "numpy"),
                           (g, kernels.LARGE, "numba")):
        fn(kit.ones(n))
        assert fn.explain()["groups"][0]["backend"] == backend
    monkeypatch.setattr(kernels, "_numba", lambda: None)  # numba not installed
    h = kit.compile(lambda x: (x * 2 + 1) * x)
    h(kit.ones(3))
    assert h.explain()["groups"][0]["backend"] == "numpy"


def test_groups_are_maximal_runs_of_one_shape():
    def f(x, w, m):
        h = (x * 2 + 1).relu()  # a group
        h = h @ m  # not elementwise: ends it
        h = (h - 1).exp() * w  # a group
        s = h.sum(0)  # another shape
        return (s * s + 1).log()  # a group of the new shape

    x, w, m = (kit.tensor(np.ones(s), requires_grad=True) for s in ((3, 4), (4,), (4, 4)))
    fn = kit.compile(f)
    fn(x, w, m).sum().backward()
    groups = fn.explain()["groups"]
    assert [g["ops"] for g in groups] == [["mul", "add", "relu"], ["sub", "exp", "mul"],
                                          ["mul", "add", "log"]]
    assert groups[1]["grad_inputs"] and fn.explain()["counts"]["kernels"] == 5


def test_long_runs_are_cut_into_kernels_of_bounded_size():
    def f(x):
        for _ in range(60):
            x = (x * 1.001).tanh()
        return x

    fn = kit.compile(f)
    x = kit.tensor(np.linspace(-1, 1, 5), requires_grad=True)
    y = fn(x)
    expected = f(x)
    np.testing.assert_allclose(y.detach().numpy(), expected.detach().numpy(), rtol=1e-12)
    sizes = [len(g["ops"]) for g in fn.explain()["groups"]]
    assert sum(sizes) == 120 and max(sizes) <= 48


def test_a_kernel_reads_inputs_and_writes_outputs_once_per_element(monkeypatch):
    monkeypatch.setattr(config, "cpu_kernel", "numpy")
    fn = kit.compile(lambda x, w, c: ((x * w + c).tanh() * x).exp())
    x, w, c = (kit.tensor(np.ones(4, np.float32), requires_grad=i == 0) for i in range(3))
    fn(x, w, c).backward(kit.ones(4))
    (group,) = fn.explain()["groups"]
    # forward: reads x, w, c; writes y and keeps tanh; backward: reads x, w, tanh, y (the
    # output), the gradient; writes x's gradient (float32: 4 bytes each)
    assert group["bytes_per_element"] == {"forward": 20, "backward": 24}
    assert group["kept"] == 1 and group["grad_inputs"] == [0]


def test_an_op_whose_gradient_reads_the_data_is_not_fused():
    x = Expr.input(0, np.dtype("float64"), (3,))
    with pytest.raises(NotFusableError, match="branches on the data"):
        bool(x > 0)
    fn = kit.compile(lambda a, b: (a * 2) ** (b * 3))  # pow's rule tests b == 0 on the data
    fn(*(kit.tensor([1.0, 2.0], requires_grad=True) for _ in range(2)))
    assert [g["ops"] for g in fn.explain()["groups"]] == [["mul", "mul"]]


def test_kernels_are_shared_by_equal_groups():
    _numba()
    fns = [kit.compile(lambda x: (x * 3 + 1).tanh()) for _ in range(2)]
    for fn in fns:
        fn(kit.ones(3, requires_grad=True))
    assert len(kernels.CACHE) == 2  # one forward and one backward kernel for both


@pytest.mark.parametrize("n", [5, (3, 4)])
def test_fake_gpu_runs_the_generated_cuda(n):
    with fake_cupy.installed(elementwise=True):
        info = _compare(_data(n, device="gpu"), "cuda")
        source = info["groups"][0]["source"]
        assert "float t" not in source and "double t0 = ((double)(i0 * i1));" in source


def test_fake_gpu_fuses_a_sum_into_the_kernel_as_a_reduction():
    with fake_cupy.installed(elementwise=True):
        def f(x, w):
            return ((x * w + 0.5).tanh() * x).exp().relu().sum(1)

        x, w, _ = _data((3, 4), device="gpu")
        fn = kit.compile(f)
        for _ in range(2):
            x.grad = None
            fn(x, w).sum().backward()
            got = kit.backend.to_device(x.grad._data, "cpu")
        x.grad = None
        f(x, w).sum().backward()
        np.testing.assert_allclose(got, kit.backend.to_device(x.grad._data, "cpu"), rtol=1e-12)
        (group,) = fn.explain()["groups"]
        assert group["ops"][-1] == "sum" and fn.explain()["counts"]["kernels"] == 1
        assert "__device__ double kit_fused_map(double i0, double i1)" in group["source"]


def test_without_a_cuda_compiler_gpu_groups_run_op_by_op():
    with fake_cupy.installed():  # ElementwiseKernel raises, as where CUDA cannot compile
        info = _compare(_data(6, device="gpu"))
        assert info["groups"] == [] and info["counts"]["fused_groups"] == 0


@gpu_test
def test_real_gpu_fused_kernels_equal_the_cpu():
    cpu = _run(kit.compile(_chain), _data(1000), kit.ones(1000, dtype=kit.float64))
    inputs = _data(1000, device="gpu")
    info = _compare(inputs, "cuda")
    gpu = _run(kit.compile(_chain), inputs, kit.ones(1000, dtype=kit.float64, device="gpu"))
    for a, b in zip(gpu, cpu, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12, equal_nan=True)
    assert info["groups"][0]["backend"] == "cuda"


@pytest.mark.parametrize("kernel", ["numba", "numpy"])
def test_division_by_zero_and_log_of_zero_give_inf_as_numpy(kernel, monkeypatch):
    if kernel == "numba":
        _numba()
    monkeypatch.setattr(config, "cpu_kernel", kernel)
    x = kit.tensor([0.0, -1.0, 2.0], requires_grad=True)
    fn = kit.compile(lambda x: (1 / (x * 2) + x).log())
    with np.errstate(all="ignore"):  # the trace runs eagerly, and NumPy warns (as kit does)
        fn(x)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the replay's fused kernel does not
        got = fn(x).detach().numpy()
    with np.errstate(all="ignore"):
        want = np.log(1 / (x.detach().numpy() * 2) + x.detach().numpy())
    np.testing.assert_allclose(got, want, rtol=1e-6)  # inf, nan, a number (libm: to 1 ulp)
    assert fn.explain()["groups"][0]["backend"] == kernel
