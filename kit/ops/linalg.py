"""Linear algebra: matmul (batched, broadcasting, 1-D cases as NumPy), with dot, mm, outer."""

from __future__ import annotations

from kit._tensor import Tensor
from kit.ops._record import DtypeError, ShapeError, cross, pair, record
from kit.ops._registry import composite, primitive, reflected


def _matmul_rule(node, g, a, b):
    # NOTE: 1-D operands are promoted to matrices for the products and the added axis is
    # dropped again; batch axes that were broadcast are summed away by the engine.
    # NOTE: an operand is saved only if the other needs a gradient (record's `cross`): a is None
    # unless need[1], b None unless need[0].
    need = node.next_functions
    a_1d, b_1d = node.params
    if a_1d and b_1d:
        return (g * b if need[0] else None, g * a if need[1] else None)
    if a_1d:
        g = g.reshape(g.shape[:-1] + (1, g.shape[-1]))
        a = a.reshape((1, a.shape[0])) if need[1] else None
    if b_1d:
        g = g.reshape(g.shape + (1,))
        b = b.reshape((b.shape[0], 1)) if need[0] else None
    ga = gb = None
    if need[0]:
        ga = g @ b.swapaxes(-1, -2)
        if a_1d:
            ga = ga.reshape(ga.shape[:-2] + (ga.shape[-1],))
    if need[1]:
        gb = a.swapaxes(-1, -2) @ g
        if b_1d:
            gb = gb.reshape(gb.shape[:-1])
    return ga, gb


@primitive("matmul", grad=_matmul_rule, saves="a, b", batch="matmul",
           methods=("__matmul__", ("__rmatmul__", reflected), "matmul"), torch="matmul")
def matmul(a, b):
    """Matrix product with NumPy's rules: batched, broadcasting, 1-D operands allowed."""
    if not isinstance(a, Tensor) or not isinstance(b, Tensor):
        a, b, _, _ = pair(a, b, "matmul")
        if not isinstance(a, Tensor) or not isinstance(b, Tensor):
            raise TypeError("kit.matmul: both operands must be tensors or arrays, not scalars")
    x, y = a._data, b._data
    if x.ndim == 0 or y.ndim == 0:
        raise ShapeError("kit.matmul: both arguments need at least 1 dimension, got a 0-d tensor")
    try:
        out = x @ y
    except ValueError:
        k_a = x.shape[-1]
        k_b = y.shape[0] if y.ndim == 1 else y.shape[-2]
        raise ShapeError(
            f"kit.matmul: shapes {tuple(x.shape)} and {tuple(y.shape)} cannot be multiplied: the "
            f"last dimension of the first ({k_a}) must equal the "
            f"{'only' if y.ndim == 1 else 'second-to-last'} dimension of the second ({k_b})"
        ) from None
    if type(x) is not type(y):
        from kit.ops._record import check_same_device

        check_same_device("matmul", x, y)
    # NOTE: after the shapes, as PyTorch checks them: no type promotion in a product, no bools
    if x.dtype != y.dtype:
        raise DtypeError(f"kit.matmul: expected m1 and m2 to have the same dtype, but got: "
                         f"{x.dtype} != {y.dtype}. Fix: convert one, e.g. b.to(a.dtype)")
    if x.dtype == bool:
        raise NotImplementedError("\"matmul\" not implemented for 'Bool' (kit.matmul, as in "
                                  "PyTorch). Fix: convert first, e.g. a.int() @ b.int()")
    return record("matmul", _matmul_rule, out, (a, b), (a, b), (x.ndim == 1, y.ndim == 1), cross)


@composite("mm", methods=("mm",), torch="mm")
def mm(a, b):
    """Product of two matrices (2-D only, as torch.mm)."""
    if a.ndim != 2 or b.ndim != 2:
        raise ShapeError(f"kit.mm: expected 2-D tensors, got shapes {a.shape} and {b.shape}")
    return matmul(a, b)


@composite("dot", methods=("dot",), torch="dot")
def dot(a, b):
    """Inner product of two 1-D tensors (as torch.dot)."""
    if a.ndim != 1 or b.ndim != 1:
        raise ShapeError(
            f"kit.dot: 1D tensors expected, but got {a.ndim}D and {b.ndim}D tensors "
            f"(shapes {tuple(a.shape)} and {tuple(b.shape)})"
        )
    if a.shape != b.shape:
        raise ShapeError(
            f"kit.dot: inconsistent tensor size, expected tensor [{a.shape[0]}] and src "
            f"[{b.shape[0]}] to have the same number of elements"
        )
    return matmul(a, b)


@composite("outer", torch="outer")
def outer(a, b):
    """Outer product of two 1-D tensors; a composite: no gradient code of its own."""
    from kit.ops.movement import reshape

    return reshape(a, (-1, 1)) * reshape(b, (1, -1))
