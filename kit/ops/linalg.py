"""Linear algebra: matmul (batched, broadcasting, 1-D cases as NumPy), with dot, mm, outer."""

from __future__ import annotations

from kit._tensor import Tensor
from kit._tensor import bool_ as kit_bool
from kit.grad_mode import STATE
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
           methods=("__matmul__", ("__rmatmul__", reflected), "matmul"), torch="matmul",
           array=lambda xp, a, b: (a @ b, ()))
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


@composite("outer", methods=("outer", "ger"), torch=("outer", "ger"))
def outer(a, b):
    """Outer product of two 1-D tensors; a composite: no gradient code of its own."""
    from kit.ops.movement import reshape

    return reshape(a, (-1, 1)) * reshape(b, (1, -1))


# --- batched and fused products (issue 12: what real programs call), composites of matmul ----
def _same_dtype(op, *tensors):
    for t in tensors:
        if not isinstance(t, Tensor):
            raise TypeError(f"kit.{op}: expected Tensors, got a {type(t).__name__}")
    dtypes = {t.dtype for t in tensors}
    if len(dtypes) > 1:
        raise RuntimeError(f"kit.{op}: expected the operands to have one dtype, got "
                           f"{', '.join(sorted(map(str, dtypes)))} (as PyTorch). Fix: convert "
                           f"one, e.g. b.to(a.dtype)")


def _batches(a, b, op):
    _same_dtype(op, a, b)
    if a.ndim != 3 or b.ndim != 3:
        raise RuntimeError(f"kit.{op}: batch1 and batch2 must be 3-D tensors, got shapes "
                           f"{tuple(a.shape)} and {tuple(b.shape)}. Fix: matmul broadcasts "
                           f"batch dims")
    if a.shape[0] != b.shape[0] or a.shape[2] != b.shape[1]:
        raise RuntimeError(f"kit.{op}: expected batch2 of shape [{a.shape[0]}, {a.shape[2]}, "
                           f"*] for batch1 of shape {list(a.shape)}, got {list(b.shape)}")
    _same_dtype(op, a, b)


@composite("bmm", methods=("bmm",), torch="bmm")
def bmm(a, b):
    """Batches of matrix products, (b, n, m) @ (b, m, p) -> (b, n, p), without broadcasting."""
    _batches(a, b, "bmm")
    return matmul(a, b)


def _fused(x, product, beta, alpha):
    """beta * x + alpha * product, with x ignored when beta is 0 (its NaNs too, as PyTorch);
    integer operands keep their dtype."""
    out = product if alpha == 1 else alpha * product
    if beta != 0:
        out = (x if beta == 1 else beta * x) + out
    elif isinstance(x, Tensor) and x.requires_grad and STATE.enabled:
        # NOTE: PyTorch's x still gets a gradient, beta * g: zeros, not None (an optimiser
        # with momentum or weight decay updates it). x's values stay out: a zero taken from
        # where(False, x, 0), and subtracting +0 changes no value (-0 stays -0, unlike +0)
        from kit._creation import zeros
        from kit.ops.elementwise import where

        out = out - where(zeros(tuple(x.shape), dtype=kit_bool), x, 0.0)
    if out.dtype != product.dtype:
        from kit.ops.movement import astype

        out = astype(out, product.dtype)
    return out


def _check_broadcast(x, shape, op):
    from kit.ops.movement import broadcast_shapes

    if broadcast_shapes(tuple(x.shape), shape) != shape:
        raise RuntimeError(f"kit.{op}: input of shape {tuple(x.shape)} does not broadcast to "
                           f"the product's shape {shape}")


def _add_product(op, product_of, x, a, b, beta, alpha):
    """beta * x + alpha * product_of(a, b): addmm, baddbmm, addmv and addr, with their dtype and
    shape checks (x must broadcast to the product's shape)."""
    _same_dtype(op, x, a, b)
    product = product_of(a, b)
    _check_broadcast(x, tuple(product.shape), op)
    return _fused(x, product, beta, alpha)


@composite("addmm", methods=("addmm",), inplace=("addmm_",), torch="addmm")
def addmm(x, mat1, mat2, *, beta=1, alpha=1):
    """beta * x + alpha * (mat1 @ mat2) for 2-D mat1, mat2 (a linear layer's forward)."""
    return _add_product("addmm", mm, x, mat1, mat2, beta, alpha)


@composite("baddbmm", methods=("baddbmm",), inplace=("baddbmm_",), torch="baddbmm")
def baddbmm(x, batch1, batch2, *, beta=1, alpha=1):
    """beta * x + alpha * bmm(batch1, batch2) (attention scores with a bias)."""
    return _add_product("baddbmm", bmm, x, batch1, batch2, beta, alpha)


def _contracted(a, b, dims):
    if hasattr(dims, "tolist"):  # a Tensor
        dims = dims.tolist()
    if isinstance(dims, int):
        if dims < 0 or dims > min(a.ndim, b.ndim):
            raise RuntimeError(f"kit.tensordot: dims={dims} must be between 0 and "
                               f"{min(a.ndim, b.ndim)}")
        return list(range(a.ndim - dims, a.ndim)), list(range(dims))
    if not isinstance(dims, (tuple, list)) or len(dims) != 2:
        raise TypeError(f"kit.tensordot: dims must be an int or a pair of dim lists, got "
                        f"{dims!r}")
    dims_a, dims_b = ([d] if isinstance(d, int) else list(d) for d in dims)
    if len(dims_a) != len(dims_b):
        raise RuntimeError(f"kit.tensordot: both dimension lists should have the same length, "
                           f"got {dims_a} and {dims_b}")
    return [d % a.ndim for d in dims_a], [d % b.ndim for d in dims_b]


@composite("tensordot", torch="tensordot")
def tensordot(a, b, dims=2):
    """Sum of products over the dims `dims` names (an int: a's last and b's first that many;
    or two lists), as torch.tensordot: permute, flatten to matrices, one matmul."""
    from kit.ops.movement import permute, reshape

    _same_dtype("tensordot", a, b)
    dims_a, dims_b = _contracted(a, b, dims)
    for i, j in zip(dims_a, dims_b, strict=True):
        if a.shape[i] != b.shape[j]:
            raise RuntimeError(f"kit.tensordot: contracted dimensions need to match, but first "
                               f"has size {a.shape[i]} in dim {i} and second has size "
                               f"{b.shape[j]} in dim {j}")
    free_a = [i for i in range(a.ndim) if i not in dims_a]
    free_b = [j for j in range(b.ndim) if j not in dims_b]
    size = 1
    for i in dims_a:
        size *= a.shape[i]
    left = reshape(permute(a, *free_a, *dims_a), (-1, size))
    right = reshape(permute(b, *dims_b, *free_b), (size, -1))
    shape = tuple(a.shape[i] for i in free_a) + tuple(b.shape[j] for j in free_b)
    return reshape(matmul(left, right), shape)
