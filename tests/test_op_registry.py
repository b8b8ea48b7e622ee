"""Generic tests driven by the op registry, as PyTorch's OpInfo drives its tests.

Every declared op (kit/ops/_registry.py) runs its sample inputs (tests/op_samples.py) through
gradcheck and gradgradcheck in float64, against PyTorch (values and gradients), under vmap against
a Python loop, and on the GPU (real, or tests/fake_cupy.py); binary broadcasting ops also run a
grid of broadcast shapes. The registry checks below replace reading each primitive's bytecode.
"""

from __future__ import annotations

import pathlib
import re

import fake_cupy
import numpy as np
import pytest
from gpu_marks import GPU_PARAM
from helpers import check_op, compare_torch, host
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import mutually_broadcastable_shapes
from op_samples import (
    BROADCAST_DOMAINS,
    BROADCAST_SHAPES,
    NO_VMAP,
    NOT_DIFFERENTIABLE,
    PYTORCH,
    SAMPLES,
)

import kit
import kit.mx as mx
import kit.torch as ktorch
from kit import _modes
from kit._modes import Mode
from kit.func import vmap
from kit.func._batched import RULES
from kit.ops import (
    _registry,
    bitwise,
    composite,
    conv,
    elementwise,
    elementwise_math,
    elementwise_more,
    linalg,
    movement,
    nn,
    rearrange,
    reductions,
    selection,
    shapes_more,
    signal,
    sorting,
    square_matrices,
    statistics,
    vectors,
)
from kit.ops._registry import OPS

CASES = [pytest.param(name, i, id=f"{name}-{i}")
         for name, samples in SAMPLES.items() for i in range(len(samples))]
BINARY = [name for name, op in OPS.items() if op.batch == "broadcasting"
          and op.fn.__code__.co_argcount == 2 and name not in ("eq", "ne")
          and not name.startswith("logical") and name not in NOT_DIFFERENTIABLE]


def _inputs(sample, device="cpu"):
    def value(a):
        if isinstance(a, np.ndarray) and a.dtype.kind == "f":
            return kit.tensor(a, device=device, requires_grad=True)
        if isinstance(a, np.ndarray):
            return kit.tensor(a, device=device)
        return a

    return [value(a) for a in sample.args]


def _caller(name, sample):
    fn = OPS[name].fn
    if sample.call is None:
        return fn
    return lambda *inputs: sample.call(fn, *inputs)


def _reference(name, sample):
    """The PyTorch function to compare `sample` with (skips without PyTorch, or without one)."""
    torch = pytest.importorskip("torch")
    if sample.torch is None:
        pytest.skip(f"kit.{name} has no PyTorch function to compare with")
    if sample.torch is not PYTORCH:
        return lambda *inputs: sample.torch(torch, *inputs)
    op = OPS[name]
    reference = getattr(torch, op.torch[0] if op.torch else name)
    if sample.call is None:
        return reference
    return lambda *inputs: sample.call(reference, *inputs)


def _outputs(out):
    return list(out) if isinstance(out, (tuple, list)) else [out]


def _float_only(fn):
    """fn with its integer outputs (indices) dropped, for gradcheck."""
    def run(*inputs):
        outs = [o for o in _outputs(fn(*inputs)) if o.dtype.kind == "f"]
        return outs[0] if len(outs) == 1 else tuple(outs)

    return run


# --- the registry itself ---------------------------------------------------------------------
def test_every_declared_op_has_a_sample_input():
    assert sorted(set(OPS) - set(SAMPLES)) == [], "declare sample inputs in tests/op_samples.py"
    assert sorted(set(SAMPLES) - set(OPS)) == [], "samples for ops that are not declared"


def test_every_public_function_of_a_family_file_is_declared():
    """What kit.ops publishes comes from the registry, so an undeclared op would be invisible."""
    helpers = {"normalize_axis", "kept_shape", "expand_back", "shape_arg", "expand_shape",
               "where_", "fused_cross_entropy", "concatenate", "pair_arg", "out_size",
               "every_dim", "one_dim", "broadcast_shapes", "erfinv_array", "resolve_padding",
               "require_tensor", "all_if_none", "floating_input"}
    declared = {op.fn for op in OPS.values()}
    for module in (elementwise, reductions, movement, linalg, sorting, composite, bitwise, nn,
                   conv, elementwise_math, selection, rearrange, square_matrices, statistics,
                   signal, vectors, elementwise_more, shapes_more):
        for name, fn in vars(module).items():
            if callable(fn) and getattr(fn, "__module__", None) == module.__name__ and \
                    not name.startswith("_") and not isinstance(fn, type) and name not in helpers:
                assert fn in declared or name.endswith("_"), f"{module.__name__}.{name}"


class _Batching(Mode):
    """A mode that makes every primitive call the installed dispatch hook, as a vmap does."""

    __slots__ = ()

    def switches(self, state):
        return {"depth": 1}


def _dispatching(monkeypatch, hook):
    monkeypatch.setattr(_modes._Switches, "dispatch", staticmethod(hook))
    return _Batching()


def test_every_primitive_dispatches_to_its_batching_rule(monkeypatch):
    """The vmap test is in the generated wrapper of every primitive, under the declared name."""
    calls = []
    with _dispatching(monkeypatch, lambda op, fn, *args: calls.append((op, fn)) or "b"):
        for name, op in OPS.items():
            if op.kind == "primitive":
                sample = SAMPLES[name][0]
                assert _caller(name, sample)(*sample.args) == "b", name
                assert calls[-1] == (name, op.fn)
                assert RULES[name] is not None
    assert {op for op, _ in calls} == {n for n, op in OPS.items() if op.kind == "primitive"}


def test_a_primitive_is_one_function_with_the_vmap_test_in_front():
    """No wrapper around the forward (a call per op): the forward itself, recompiled from its
    own source and lines, with the test as its first statement."""
    for name, op in OPS.items():
        if op.kind == "primitive":
            code, forward = op.fn.__code__, op.fn.__wrapped__.__code__
            assert "forward" not in code.co_freevars + code.co_names, name
            assert (code.co_filename, code.co_firstlineno) == \
                (forward.co_filename, forward.co_firstlineno), name
            assert set(forward.co_names) <= set(code.co_names), name


def test_composites_have_no_gradient_code_and_no_batching_rule():
    for name, op in OPS.items():
        if op.kind == "composite":
            assert op.grad is None and op.batch is None and name not in RULES, name


def test_declared_gradient_rule_and_saved_values_are_the_ones_recorded():
    for name, op in OPS.items():
        if op.grad is None:
            continue
        sample = SAMPLES[name][0]
        inputs = _inputs(sample)
        out = _outputs(_caller(name, sample)(*inputs))[0]
        if any(out is t for t in inputs):
            continue  # nothing to do for this input (to the device it is on): no node
        if not any(getattr(t, "requires_grad", False) for t in inputs):
            continue  # an integer sample (heaviside: a float one could not run backward)
        assert out.grad_fn is not None and out.grad_fn.rule is op.grad, name
        saved = out.grad_fn.saved_values()
        declared = op.saves.split(", ") if op.saves else []
        assert len(saved) == len(declared), (name, op.saves)
        if "output" in declared:
            assert saved[declared.index("output")] is out._data, name


def test_declared_names_are_generated_everywhere():
    for op in OPS.values():
        assert (getattr(kit, op.fn.__name__, None) is op.fn) == op.public
        for method in op.methods:
            assert hasattr(kit.Tensor, method if isinstance(method, str) else method[0])
        for method in op.inplace:
            assert hasattr(kit.Tensor, method if isinstance(method, str) else method[0])
        for name in op.torch:
            assert getattr(ktorch, name) is op.fn and name in ktorch.__all__
        for name in op.mx:
            assert callable(getattr(mx.nd, name)) and name in mx.nd.__all__
        if op.batch is not None:
            assert RULES[op.name] is not None


@pytest.mark.parametrize(("name", "i"), CASES)
def test_each_declared_method_is_the_op(name, i):
    """`x.exp()`, `x + y`, `x.view(2, 6)`: the methods a declaration names give the op's result."""
    sample = SAMPLES[name][i]
    inputs = _inputs(sample)
    methods = [m for m in OPS[name].methods if isinstance(m, str)]
    if sample.call is not None or not inputs or not isinstance(inputs[0], kit.Tensor):
        pytest.skip("the sample is not called as fn(tensor, ...)")
    expected = [host(o) for o in _outputs(OPS[name].fn(*inputs))]
    for method in methods:
        got = _outputs(getattr(inputs[0], method)(*inputs[1:]))
        for g, e in zip(got, expected, strict=True):
            np.testing.assert_array_equal(host(g), e, err_msg=method)


def test_a_declaration_cannot_repeat_a_name_or_take_keyword_only_arguments():
    def add(a, b):
        return a

    with pytest.raises(ValueError, match="declared twice"):
        _registry.declare("add", add)

    def bad(x, *, k=1):
        return x

    with pytest.raises(TypeError, match="keyword-only"):
        _registry.declare("bad_op", bad)
    assert "bad_op" not in OPS


def test_the_readme_worked_example_is_the_real_declaration():
    root = pathlib.Path(__file__).parents[1]
    declaration, sample = re.findall(r"```py\n(.*?)```", (root / "README.md").read_text(), re.S)
    assert declaration in (root / "kit/ops/elementwise.py").read_text()
    assert sample.strip() in (root / "tests/op_samples.py").read_text()


def test_a_primitive_without_source_gets_the_plain_wrapper(monkeypatch):
    namespace = {}
    exec("def double(x, k=2):\n    return x * k\n", namespace)
    monkeypatch.setattr(_registry, "OPS", {})
    fn = _registry.declare("double", namespace["double"])
    assert fn(3) == 6 and fn(3, 3) == 9
    with _dispatching(monkeypatch, lambda op, f, *args: (op, f, args)):
        assert fn(3) == ("double", fn, (3, 2))


# --- the generic tests, over every sample --------------------------------------------------------
@pytest.mark.parametrize(("name", "i"), CASES)
def test_gradcheck(name, i):
    sample = SAMPLES[name][i]
    fn = _caller(name, sample)
    outs = _outputs(fn(*_inputs(sample)))
    if not any(o.requires_grad for o in outs) or name in NOT_DIFFERENTIABLE:
        pytest.skip(f"kit.{name} is not differentiable")
    check_op(_float_only(fn), *sample.args, order=sample.order, rtol=sample.rtol)


@pytest.mark.parametrize(("name", "i"), CASES)
def test_matches_torch(name, i):
    sample = SAMPLES[name][i]
    compare_torch(_caller(name, sample), _reference(name, sample), *sample.args)


def _broadcast_operands(name, shape_a, shape_b, rng):
    domains = BROADCAST_DOMAINS.get(name, (None, None))
    return [rng.uniform(-2, 2, size=shape) if f is None else f(rng.uniform(-2, 2, size=shape))
            for f, shape in zip(domains, (shape_a, shape_b), strict=True)]


@pytest.mark.parametrize("name", BINARY)
@pytest.mark.parametrize(("shape_a", "shape_b"), BROADCAST_SHAPES)
def test_broadcast_grid(name, shape_a, shape_b, xp_device):
    a, b = _broadcast_operands(name, shape_a, shape_b, np.random.default_rng(1))
    op = OPS[name]
    if op.grad is not None:
        check_op(op.fn, a, b, device=xp_device, order=2)
    torch = pytest.importorskip("torch")
    reference = getattr(torch, op.torch[0] if op.torch else name)
    compare_torch(op.fn, reference, a, b, device=xp_device)


@settings(max_examples=12, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(shapes=mutually_broadcastable_shapes(num_shapes=2, max_dims=3, max_side=3),
       name=st.sampled_from(BINARY), seed=st.integers(0, 2**16))
def test_broadcast_hypothesis(shapes, name, seed, xp_device):
    a, b = _broadcast_operands(name, *shapes.input_shapes, np.random.default_rng(seed))
    op = OPS[name]
    if op.grad is not None:
        check_op(op.fn, a, b, device=xp_device)
    out = op.fn(kit.tensor(a, device=xp_device), kit.tensor(b, device=xp_device))
    assert out.shape == shapes.result_shape


UNARY = [name for name, op in OPS.items() if op.batch == "elementwise" and op.public
         and SAMPLES[name][0].args[0].dtype.kind == "f"]


@pytest.mark.parametrize("name", UNARY)
@pytest.mark.parametrize("shape", [(), (5,)])
def test_elementwise_on_0d_and_1d(name, shape, xp_device):
    """The first sample's values (in the op's domain) as a 0-d and a 1-d tensor."""
    sample = SAMPLES[name][0]
    x = sample.args[0].flat[: int(np.prod(shape))].reshape(shape)
    fn = OPS[name].fn
    if OPS[name].grad is not None:
        check_op(fn, x, device=xp_device, order=2)
    compare_torch(fn, _reference(name, sample), x, device=xp_device)


@pytest.mark.parametrize(("name", "i"), CASES)
def test_vmap_matches_a_python_loop(name, i):
    """Each float input gets a batch of 3 (different data per sample), and so do bool and integer
    inputs of ops that take no float one (logical_and, bitwise_and); the rest (numbers, indices,
    masks) is shared."""
    if name in NO_VMAP:
        pytest.skip(f"kit.{name} reads its input's values (its result shape, or cummax's "
                    f"indices, depends on them): vmap refuses it")
    sample = SAMPLES[name][i]
    fn = _caller(name, sample)
    kinds = "f" if any(getattr(a, "dtype", None) == np.float64 for a in sample.args) else "biu"
    batched = [isinstance(a, np.ndarray) and a.dtype.kind in kinds for a in sample.args]
    stacks = [np.stack([_vary(a, k) for k in range(3)]) if b else a
              for a, b in zip(sample.args, batched, strict=True)]
    values = [kit.tensor(a) if isinstance(a, np.ndarray) else a for a in stacks]
    in_dims = tuple(0 if b else None for b in batched)
    got = _outputs(vmap(fn, in_dims=in_dims)(*values))
    loop = [_outputs(fn(*(v[k] if b else v for v, b in zip(values, batched, strict=True))))
            for k in range(3)]
    for j, out in enumerate(got):
        expected = np.stack([host(row[j]) for row in loop])
        np.testing.assert_allclose(host(out), expected, rtol=1e-6, atol=1e-9)


def _vary(a, k):
    if a.dtype.kind in "iu":
        return a * (k + 1)  # (the same zeros: a nonzero divisor stays nonzero)
    return a ^ (k == 1) if a.dtype.kind == "b" else a + 0.01 * k


@pytest.fixture(params=[GPU_PARAM, "fake-gpu"])
def gpu(request):
    """Device "gpu", real (skipped without one) or fake (tests/fake_cupy.py)."""
    if request.param == "fake-gpu":
        with fake_cupy.installed():
            yield "gpu"
    else:
        yield "gpu"


@pytest.mark.parametrize(("name", "i"), CASES)
def test_on_gpu_as_on_cpu(name, i, gpu):
    """Values and gradients on device "gpu" equal those on the CPU, and stay on the GPU."""
    sample = SAMPLES[name][i]
    fn = _caller(name, sample)
    results = []
    for device in ("cpu", gpu):
        inputs = _inputs(sample, device)
        outs = _outputs(fn(*inputs))
        loss = sum((o * (k + 1.0)).sum() for k, o in enumerate(outs) if o.requires_grad)
        if name != "to":
            assert all(o.device == device for o in outs), name
        if not isinstance(loss, int):
            loss.backward()
        grads = [host(t.grad) for t in inputs if isinstance(t, kit.Tensor) and t.grad is not None]
        results.append(([host(o) for o in outs], grads))
    (cpu_outs, cpu_grads), (gpu_outs, gpu_grads) = results
    for c, g in zip(cpu_outs + cpu_grads, gpu_outs + gpu_grads, strict=True):
        np.testing.assert_allclose(g, c, rtol=1e-10, atol=1e-12)
