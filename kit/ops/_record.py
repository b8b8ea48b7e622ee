"""How a primitive becomes a graph node, and the helpers its gradient rules share.

A primitive computes its output on arrays, then calls `record`, which attaches a Node only when grad
mode is on and an input requires grad. A rule is `rule(node, g, *saved)` and returns one gradient
per input. During a first-order backward `g` and the saved values are arrays; with create_graph
they are Tensors. Rules are written with operators and the `dual_*` helpers below, which accept
either, so one rule serves both.
"""

from __future__ import annotations

import itertools
import weakref

import numpy as np

from kit import _views, backend
from kit._anomaly import capture_stack
from kit._creation import _to_array
from kit._errors import ArgumentError, DimIndexError, DtypeError, ShapeError  # noqa: F401
from kit._promotion import cast_scalar, default_float, result_type
from kit._tensor import Tensor, version_counter
from kit.engine import NO_EDGE, OUTPUT, Node
from kit.grad_mode import STATE

# One shared output_meta tuple per (shape, dtype): fewer long-lived objects per recorded op, so
# the cyclic garbage collector, which scans them all as a graph grows, has less to do.
_META = {}
_VERSIONS = {
    v: v for v in itertools.chain.from_iterable(
        itertools.product((0, -1), repeat=n) for n in range(1, 4)
    )
}


def record(op, rule, out, inputs, saved=(), params=None, keep=None):
    """Wrap the array `out` as a Tensor; attach a Node if a Tensor input requires grad.

    A result whose array is a view of an input's array becomes a view of that input's base
    (kit/_views.py): no op has to say that it makes views. `keep(saved, edges)`, where an op
    gives one, drops (as None) what the gradients of the inputs that need one do not use.
    """
    y = Tensor(out)
    out = y._data
    enabled = STATE.enabled
    if out.base is not None:
        _views.mark(y, inputs, enabled)
    if not enabled:
        return y
    # NOTE: this runs once per recorded op; tuples grown in plain loops are the cheapest here.
    edges = ()
    need = False
    for t in inputs:
        if isinstance(t, Tensor):
            if t._base is not None:
                _views.refresh(t)  # its base changed in place since its history was made
            if t._rg:
                edges += (t._edge or t._leaf_edge(),)
                need = True
                continue
        edges += (NO_EDGE,)
    if not need:
        return y
    if keep is not None:
        saved = keep(saved, edges)
    versions = ()
    saves_output = False
    for v in saved:
        if isinstance(v, Tensor):
            versions += (v._vc[0],)
        elif v is OUTPUT:
            # A saved output starts at version 0 too: an in-place change of it must fail.
            versions += (0,)
            saves_output = True
        else:
            versions += (-1,)
    # NOTE: most are made of 0 (fresh tensors) and -1 (constants): share those, one long-lived
    # tuple fewer per recorded op for the cyclic GC to scan as a graph grows.
    versions = _VERSIONS.get(versions, versions)
    key = (out.shape, out.dtype)
    meta = _META.get(key)
    if meta is None:
        if len(_META) >= 4096:  # bounded: a program with ever new shapes must not grow it
            _META.clear()
        meta = _META[key] = (key,)
    node = Node(op, rule, edges, saved, versions, params, meta)  # typed when looked at (engine)
    if saves_output:
        node.out_data = out  # NOTE: a built-in op's one output, not a tuple (see engine.Node)
        node.out_vc = version_counter(y)
    y._rg = True
    y._grad_fn = node
    y._edge = (node, 0)
    if STATE.extras:  # NOTE: one read per op for both
        if STATE.anomaly:
            capture_stack(node, 2)  # record and the op's function
        if STATE.keep_outputs:
            node.out_ref = weakref.ref(y)
    return y


def cross(saved, edges):
    """`keep` for a product (mul, matmul, linear): each operand's gradient uses only the other
    operand, so an operand is kept only when the other one needs a gradient, as in PyTorch."""
    a, b = saved
    return (a if edges[1] else None, b if edges[0] else None)


def constant(value, like, op):
    """A non-Tensor operand: Python scalars stay (weakly typed, as in PyTorch), the rest become
    constant Tensors."""
    if isinstance(value, np.generic):  # checked first: np.float64 is also a Python float
        return value.item()
    if isinstance(value, (bool, int, float)):
        return value
    if isinstance(value, (list, tuple, np.ndarray)) or backend.device_of(value) == "gpu":
        return Tensor(_to_array(value, None, backend.device_of(like)))
    raise TypeError(
        f"kit.{op}: unsupported operand of type {type(value).__name__}; use a Tensor, a NumPy "
        f"array or a Python number"
    )


def _computed_in(dtype, op):
    """True division of integers or bools is computed in the default float dtype, from the
    operands' own values (PyTorch: uint8 tensor / 300 is x / 300.0, not x / (300 wrapped to
    uint8)); every other op computes in the promoted dtype."""
    return default_float() if op == "div" and dtype.kind in "biu" else dtype


def pair(a, b, op):
    """Operands of a binary op as (a, b, x, y): a, b Tensors or scalars; x, y their data, cast to
    the dtype PyTorch's type promotion gives (kit/_promotion.py)."""
    if isinstance(a, Tensor):
        x = a._data
        if not isinstance(b, Tensor):
            b = constant(b, x, op)
        if isinstance(b, Tensor):
            y = b._data
            if type(x) is not type(y):
                check_same_device(op, x, y)
            if x.dtype is not y.dtype:
                dtype = _computed_in(result_type(x, y), op)
                x = x if x.dtype == dtype else x.astype(dtype)
                y = y if y.dtype == dtype else y.astype(dtype)
            return a, b, x, y
        dtype = _computed_in(result_type(x, b), op)
        if x.dtype != dtype:
            x = x.astype(dtype)  # NOTE: int tensor op Python float gives float32, as in PyTorch
        return a, b, x, cast_scalar(b, dtype)
    if isinstance(b, Tensor):
        _, _, y, x = pair(b, a, op)
        a = constant(a, y, op)
        return a, b, (a._data if isinstance(a, Tensor) else x), y
    raise TypeError(f"kit.{op}: expected at least one Tensor operand")


def check_same_device(op, *arrays):
    devices = {backend.device_of(a) for a in arrays if hasattr(a, "shape")}
    if len(devices) > 1:
        raise RuntimeError(
            f"kit.{op}: expected all tensors to be on the same device, but found tensors on "
            f"{' and '.join(sorted(devices))}. Fix: move one explicitly, e.g. x.to('gpu') or "
            f"x.to('cpu')"
        )


def shape_error(op, *arrays, detail=""):
    shapes = " and ".join(str(tuple(getattr(a, "shape", ()))) for a in arrays)
    extra = f": {detail}" if detail else ""
    return ShapeError(f"kit.{op}: shapes {shapes} are not compatible{extra}")


def data_of(v):
    """The array behind a Tensor (or the value itself)."""
    return v._data if isinstance(v, Tensor) else v


def dual(tensor_fn, xp_name):
    """A function applying `tensor_fn` to a Tensor, or `xp.<xp_name>` to an array."""

    def fn(v, *args):
        if isinstance(v, Tensor):
            return tensor_fn(v, *args)
        return getattr(backend.get_array_module(v), xp_name)(v, *args)

    fn.__name__ = xp_name
    return fn


def as_dtype_of(mask, like):
    """A mask or weight array in the dtype of `like`'s data, so it never upcasts a gradient."""
    return mask.astype(data_of(like).dtype, copy=False)
