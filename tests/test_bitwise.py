"""Integer division, bits and logic (kit/ops/bitwise.py) against PyTorch: values over edge values
bit for bit (the sign of zero included), the operators and their reflected forms, gradients,
in-place forms, errors, and mx.nd's MXNet-flavoured versions. (Dtypes: tests/test_promotion.py;
sample inputs for the generic registry tests: tests/op_samples.py.)"""

from __future__ import annotations

import itertools
import operator

import numpy as np
import pytest
from helpers import compare_torch

import kit
import kit.mx as mx
from tests.torch_oracle import libraries

LIBS = libraries()
FLOATS = [0.0, -0.0, 1.0, -1.0, 2.5, -2.5, 7.0, -7.0, 3.0, -3.0, np.inf, -np.inf, np.nan, 0.5]
INTS = [0, 1, -1, 7, -7, 3, -3, 2**63 - 1, -(2**63)]
DIVISIONS = ["floor_divide", "remainder", "fmod"]


def _pairs(values, nonzero=False):
    pairs = [(a, b) for a, b in itertools.product(values, repeat=2) if not nonzero or b != 0]
    return [a for a, _ in pairs], [b for _, b in pairs]


def _same_bits(ours, theirs):
    """Equal values and dtypes, NaN where NaN, and the same sign of every zero (a NaN's sign
    bit is not compared: it means nothing)."""
    a, b = np.asarray(ours.numpy()), theirs.numpy()
    assert str(ours.dtype) == str(theirs.dtype).replace("torch.", "")
    np.testing.assert_array_equal(a, b)
    number = ~np.isnan(a) if a.dtype.kind == "f" else np.ones(a.shape, bool)
    np.testing.assert_array_equal(np.signbit(a)[number], np.signbit(b)[number])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("op", DIVISIONS)
def test_float_division_matches_pytorch_bit_for_bit(op, dtype):
    torch = pytest.importorskip("torch")
    a, b = _pairs(FLOATS)
    ours = getattr(kit, op)(kit.tensor(a, dtype=dtype), kit.tensor(b, dtype=dtype))
    theirs = getattr(torch, op)(torch.tensor(a, dtype=getattr(torch, dtype)),
                                torch.tensor(b, dtype=getattr(torch, dtype)))
    _same_bits(ours, theirs)


@pytest.mark.parametrize("op", DIVISIONS)
def test_integer_division_matches_pytorch_with_int64_min(op):
    torch = pytest.importorskip("torch")
    a, b = _pairs(INTS, nonzero=True)
    ours = getattr(kit, op)(kit.tensor(a), kit.tensor(b))
    _same_bits(ours, getattr(torch, op)(torch.tensor(a), torch.tensor(b)))


def test_division_edges_without_pytorch():
    """Stored answers (PyTorch 2.13's) for the cases where NumPy differs or a user might guess."""
    x = kit.tensor([-7.0, 7.0, -0.0, 0.0])
    assert (x // 2).tolist() == [-4.0, 3.0, -0.0, 0.0]
    assert np.signbit((x % 3).numpy()).tolist() == [False, False, True, False]  # -0.0 % 3: -0.0
    assert (x % -3).tolist() == [-1.0, -2.0, -0.0, 0.0]
    assert kit.fmod(x, 3).tolist() == [-1.0, 1.0, -0.0, 0.0]
    assert (kit.tensor([1.0, -1.0, 0.0]) // 0).tolist()[:2] == [np.inf, -np.inf]
    assert (kit.tensor([-(2**63)]) // -1).tolist() == [-(2**63)]  # wraps, as in PyTorch
    assert (kit.tensor([200], dtype=kit.uint8) // -3).tolist() == [0]  # -3 wraps to 253


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int64"])
def test_bits_and_shifts_match_pytorch(dtype):
    torch = pytest.importorskip("torch")
    info = np.iinfo(dtype)
    values = sorted({0, 1, 3, 100, int(info.min), int(info.max), -1 % (int(info.max) + 1)})
    values = [v for v in values if info.min <= v <= info.max]
    x = np.array(values, dtype=dtype)
    shifts = np.array([0, 1, 7, 8, 63, 64, 65], dtype=np.int64)
    for name in ("bitwise_and", "bitwise_or", "bitwise_xor"):
        a, b = _pairs(values)
        ours = getattr(kit, name)(kit.tensor(np.array(a, dtype)), kit.tensor(np.array(b, dtype)))
        theirs = getattr(torch, name)(torch.tensor(np.array(a, dtype)),
                                      torch.tensor(np.array(b, dtype)))
        _same_bits(ours, theirs)
    _same_bits(kit.bitwise_not(kit.tensor(x)), torch.bitwise_not(torch.tensor(x)))
    for name in ("bitwise_left_shift", "bitwise_right_shift"):
        for s in shifts.tolist() + [-1]:
            ours = getattr(kit, name)(kit.tensor(x), s)
            _same_bits(ours, getattr(torch, name)(torch.tensor(x), s))


OPERATORS = {
    "//": operator.floordiv, "%": operator.mod, "&": operator.and_, "|": operator.or_,
    "^": operator.xor, "<<": operator.lshift, ">>": operator.rshift,
}


@pytest.mark.parametrize("symbol", sorted(OPERATORS))
def test_operators_and_their_reflected_forms(symbol):
    torch = pytest.importorskip("torch")
    fn = OPERATORS[symbol]
    x, y = [7, -8, 5, 0], [3, 2, -2, 1]
    for lib in (kit, torch):
        assert isinstance(fn(lib.tensor(x), 2), lib.Tensor)
    pairs = [(lambda lib: lib.tensor(x), lambda lib: lib.tensor(y)),
             (lambda lib: lib.tensor(x), lambda lib: 3),
             (lambda lib: 3, lambda lib: lib.tensor([1, 2, 3, 4])),
             (lambda lib: lib.tensor([True, False, True, True]), lambda lib: lib.tensor(y))]
    for left, right in pairs:
        _same_bits(fn(left(kit), right(kit)), fn(left(torch), right(torch)))


@pytest.mark.parametrize("torch", LIBS)
def test_invert_is_bitwise_on_integers_and_refused_on_floats(torch):
    assert (~torch.tensor([0, 5, -1])).tolist() == [-1, -6, 0]
    assert (~torch.tensor([0, 5], dtype=torch.uint8)).tolist() == [255, 250]
    assert (~torch.tensor([True, False])).tolist() == [False, True]
    with pytest.raises(TypeError, match="only implemented on integer and Boolean"):
        ~torch.tensor([1.0])
    with pytest.raises(NotImplementedError):
        torch.bitwise_not(torch.tensor([1.0]))


@pytest.mark.parametrize("torch", LIBS)
def test_logical_ops_take_any_dtype_and_give_bool(torch):
    f = torch.tensor([1.5, 0.0, float("nan"), -0.0], requires_grad=True)
    i = torch.tensor([2, 3, 0, 1])
    assert torch.logical_and(f, i).tolist() == [True, False, False, False]
    assert torch.logical_or(f, i).tolist() == [True, True, True, True]
    assert torch.logical_xor(f, i).tolist() == [False, True, True, True]
    assert torch.logical_not(f).tolist() == [False, True, False, True]  # NaN is true
    out = f.logical_and(i)
    assert out.dtype == torch.bool and not out.requires_grad and out.grad_fn is None
    g = torch.tensor([1.0, 0.0, 2.0])
    g.logical_or_(torch.tensor([0, 0, 0]))  # in place, in the tensor's own dtype
    assert g.tolist() == [1.0, 0.0, 1.0] and g.dtype == torch.float32
    with pytest.raises(TypeError, match="must be Tensor|must be a Tensor"):
        torch.logical_and(i, 1)


@pytest.mark.parametrize("torch", LIBS)
def test_misuse_raises_pytorchs_classes(torch):
    i, f, b = torch.tensor([3, 4]), torch.tensor([1.5, 2.0]), torch.tensor([True, False])
    for call in (lambda: i // torch.tensor([1, 0]), lambda: i % 0, lambda: torch.fmod(i, 0)):
        with pytest.raises(RuntimeError, match="ZeroDivisionError"):
            call()
    for call in (lambda: f & 1, lambda: f | i, lambda: f << 1, lambda: b // b, lambda: b % b,
                 lambda: torch.fmod(b, b), lambda: b << b, lambda: f.bitwise_xor_(i)):
        with pytest.raises(NotImplementedError):
            call()
    with pytest.raises(TypeError):
        torch.fmod(7, i)
    with pytest.raises(TypeError):
        torch.remainder(7, 3)
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type"):
        i.clone().floor_divide_(2.5)
    with pytest.raises(RuntimeError):
        torch.ones(2) % torch.ones(3)


@pytest.mark.parametrize("op", ["remainder", "fmod"])
@pytest.mark.parametrize("shapes", [((2, 3), (2, 3)), ((2, 3), (3,)), ((), (2, 1))])
def test_remainder_and_fmod_gradients_match_pytorch(op, shapes):
    rng = np.random.default_rng(3)
    a = rng.uniform(-5, 5, size=shapes[0])
    b = np.where(rng.random(shapes[1]) < 0.5, -1, 1) * rng.uniform(0.6, 2.0, size=shapes[1])
    torch = pytest.importorskip("torch")
    compare_torch(getattr(kit, op), getattr(torch, op), a, b)
    compare_torch(lambda x: getattr(kit, op)(x, -1.3), lambda x: getattr(torch, op)(x, -1.3), a)


def test_remainder_and_fmod_second_order():
    a = kit.tensor([[4.3, -2.2], [0.7, 5.1]], dtype=kit.float64, requires_grad=True)
    b = kit.tensor([1.3, -0.9], dtype=kit.float64, requires_grad=True)
    for op in (kit.remainder, kit.fmod):
        assert kit.gradgradcheck(lambda x, y, op=op: op(x * x, y) * x, (a, b))


@pytest.mark.parametrize("torch", LIBS)
def test_gradients_that_pytorch_does_not_implement_raise_on_backward(torch):
    x = torch.tensor([7.0, -3.5], requires_grad=True)
    for y in (x // 2, 7.0 // x, torch.floor_divide(x, x)):
        assert y.requires_grad  # recorded, as PyTorch records it
        with pytest.raises(RuntimeError, match="derivative for .*floor_divide is not implemented|"
                                               "the derivative of floor_divide is not "
                                               "implemented"):
            y.sum().backward()
    y = 7.0 % x  # remainder(number, tensor): PyTorch has no derivative for the tensor
    assert y.requires_grad
    with pytest.raises(RuntimeError, match="derivative"):
        y.sum().backward()
    for y in (x.detach().long() & 3, torch.logical_not(x)):
        assert not y.requires_grad


@pytest.mark.parametrize("torch", LIBS)
def test_in_place_forms(torch):
    t = torch.tensor([7, -7, 9])
    t //= 2
    t %= 3
    t <<= 2
    t |= 1
    t ^= 3
    t >>= 1
    t &= 6
    assert t.tolist() == [0, 4, 2] and t.dtype == torch.int64
    w = torch.tensor([5.5, -2.5], requires_grad=True)
    y = w * 1
    y %= 2  # recorded: the gradient of remainder flows through
    y.fmod_(1.0)
    y.sum().backward()
    assert w.grad.tolist() == [1.0, 1.0] and y.tolist() == [0.5, 0.5]
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        w.remainder_(2)


def test_mx_mod_and_logic_are_mxnets():
    """MXNet (mshadow_op::mod): `%` has the divisor's sign and gives 0 for a zero divisor; its
    logic ops give 1/0 in the array's dtype."""
    x, y = mx.nd.array([7.0, -7.0, 3.0, 5.0]), mx.nd.array([3.0, 3.0, 0.0, -2.0])
    x.attach_grad()
    y.attach_grad()
    with mx.autograd.record():
        z = mx.nd.broadcast_mod(x, y)
    z.backward()
    assert z.asnumpy().tolist() == [1.0, 2.0, 0.0, -1.0]
    assert y.grad.asnumpy().tolist() == [-2.0, 3.0, 0.0, 3.0]  # -floor(x / y)
    assert (x % 0).asnumpy().tolist() == [0.0, 0.0, 0.0, 0.0]
    assert not np.signbit((x % 0).asnumpy()).any()
    assert (8 % y).asnumpy().tolist() == [2.0, 2.0, 0.0, 0.0]
    logic = mx.nd.broadcast_logical_and(x, y)
    assert logic.dtype == np.float32 and logic.asnumpy().tolist() == [1.0, 1.0, 0.0, 1.0]
    assert mx.nd.logical_not(y).asnumpy().tolist() == [0.0, 0.0, 1.0, 0.0]
    assert mx.nd.broadcast_logical_xor(x, y).asnumpy().tolist() == [0.0, 0.0, 1.0, 0.0]
    assert mx.nd.broadcast_logical_or(y, y).asnumpy().tolist() == [1.0, 1.0, 0.0, 1.0]
