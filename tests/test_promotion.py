"""Type promotion against PyTorch: every pair of dtypes, as n-d tensors, 0-d tensors and Python
numbers, through every binary op (the result's dtype and values, or the class of the error)."""

from __future__ import annotations

import itertools
import operator

import numpy as np
import pytest

import kit
import kit.torch as kt
from kit._promotion import promote_types, result_type

torch = pytest.importorskip("torch", reason="PyTorch is the oracle for type promotion")

DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64"]
SCALARS = {"bool": True, "int64": 2, "float32": 2.5}  # a Python number of each category
KINDS = [("nd", "nd"), ("nd", "0d"), ("0d", "nd"), ("nd", "py"), ("py", "nd"), ("0d", "0d"),
         ("0d", "py"), ("py", "0d")]
OPS = {
    "add": operator.add, "sub": operator.sub, "mul": operator.mul, "div": operator.truediv,
    "pow": operator.pow, "eq": operator.eq, "ne": operator.ne, "lt": operator.lt,
    "le": operator.le, "gt": operator.gt, "ge": operator.ge,
    "floor_divide": operator.floordiv, "remainder": operator.mod, "bitwise_and": operator.and_,
    "bitwise_or": operator.or_, "bitwise_xor": operator.xor, "left_shift": operator.lshift,
    "right_shift": operator.rshift,
}
FUNCTIONS = ["maximum", "minimum", "fmod", "logical_and", "logical_or", "logical_xor"]
OPS.update({name: lambda x, y, lib, name=name: getattr(lib, name)(x, y) for name in FUNCTIONS})


def _operand(lib, kind, name):
    if kind == "py":
        return SCALARS[name]
    data = [True, True] if name == "bool" else [1, 2]
    t = lib.tensor(data, dtype=getattr(lib, name))
    return t if kind == "nd" else t[1]


def _run(lib, op, x, y):
    fn = OPS[op]
    try:
        out = fn(x, y, lib) if op in FUNCTIONS else fn(x, y)
    except Exception as exc:  # noqa: BLE001 - the class is what is compared
        return type(exc).__name__
    if not hasattr(out, "dtype"):
        return ("python", out)
    data = out.detach().numpy() if lib is torch else out.numpy()
    return (str(out.dtype).replace("torch.", ""), np.asarray(data, np.float64).tolist())


def _cases():
    for ka, kb in KINDS:
        if ka == kb == "py":
            continue
        names_a = list(SCALARS) if ka == "py" else DTYPES
        names_b = list(SCALARS) if kb == "py" else DTYPES
        for a, b in itertools.product(names_a, names_b):
            yield ka, kb, a, b


def test_promote_types_is_pytorchs_on_every_pair():
    for a, b in itertools.product(DTYPES, repeat=2):
        ours = promote_types(np.dtype(a), np.dtype(b))
        theirs = torch.promote_types(getattr(torch, a), getattr(torch, b))
        assert str(ours) == str(theirs).replace("torch.", ""), (a, b)


def test_result_type_is_pytorchs_for_tensors_0d_tensors_and_numbers():
    for ka, kb, a, b in _cases():
        x, y = _operand(kt, ka, a), _operand(kt, kb, b)
        tx, ty = _operand(torch, ka, a), _operand(torch, kb, b)
        ours = result_type(x, y)
        if ka == "py" and kb == "py":
            continue
        theirs = torch.result_type(tx, ty) if ka != "py" else torch.result_type(ty, tx)
        assert str(ours) == str(theirs).replace("torch.", ""), (ka, kb, a, b)


@pytest.mark.parametrize("op", sorted(OPS))
def test_every_binary_op_promotes_as_pytorch(op):
    differences = []
    for ka, kb, a, b in _cases():
        ours = _run(kt, op, _operand(kt, ka, a), _operand(kt, kb, b))
        theirs = _run(torch, op, _operand(torch, ka, a), _operand(torch, kb, b))
        if ours != theirs:
            differences.append(((ka, a), (kb, b), ours, theirs))
    assert not differences, f"{len(differences)} differences, e.g. {differences[:4]}"


def test_kit_tensor_ops_use_the_same_function():
    x = kit.tensor([1.0, 2.0])
    assert (x * kit.tensor(2.0, dtype=kit.float64)).dtype == kit.float32  # 0-d does not raise
    assert (kit.tensor([1, 2]) * 2.5).dtype == kit.float32  # int tensor, Python float
    assert (kit.tensor([1, 2], dtype=kit.int64) + kit.tensor([1.0], dtype=kit.float16)).dtype \
        == kit.float16  # NumPy would say float64
    assert (kit.tensor([200], dtype=kit.uint8) + (-1)).tolist() == [199]  # wraps, as in PyTorch
