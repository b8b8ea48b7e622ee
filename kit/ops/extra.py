"""Issue 12's tensor functions (masked_fill, prod, all/any, cumsum, var/std, topk, gather,
scatter_add, einsum; the norms are in norms.py): mostly composites over existing primitives, so
they own no gradient code and batch under vmap and run on the GPU through those primitives. The
exceptions, with their reasons: cumsum is a primitive (PyTorch adds in order; a matmul with a
triangle of ones made inf * 0 = NaN, and kept the triangle); prod, var and std are primitives
(`product`, `variance`, `deviation`) with PyTorch's gradient formulas, which differ from a
composite's where infinities, NaN or zeros meet (result / x, NaN next to an inf; inf or NaN at
no degrees of freedom), and keep what PyTorch's nodes keep."""

from __future__ import annotations

import builtins
import warnings
from collections import namedtuple

import numpy as np

from kit import backend
from kit._tensor import Tensor
from kit.engine import OUTPUT
from kit.ops._record import data_of, dual, record
from kit.ops._registry import SAVED_NAMES, composite, primitive
from kit.ops.elementwise import eq, ne, sqrt, where, where_
from kit.ops.movement import astype, getitem, index_put_add, permute, reshape, unsqueeze
from kit.ops.reductions import all_if_none, mean, normalize_axis, one_dim
from kit.ops.reductions import sum as sum_
from kit.ops.sorting import sort

TopkResult = namedtuple("topk", ["values", "indices"])  # torch.return_types.topk


def _count(x, axes):
    return int(np.prod([x.shape[a] for a in axes])) if x.ndim else 1


@composite("masked_fill", methods=("masked_fill",), inplace=("masked_fill_",),
           torch="masked_fill")
def masked_fill(x, mask, value):
    """x with `value` where `mask` is True.

    >>> import kit
    >>> kit.tensor([1., 2.]).masked_fill(kit.tensor([True, False]), 0.)
    tensor([0., 2.])
    """
    m = data_of(mask)
    if m.dtype.kind != "b":
        raise TypeError(f"kit.masked_fill: mask must be a bool tensor, got {m.dtype}. Fix: "
                        f"pass mask.bool() (or a comparison such as x > 0)")
    if isinstance(value, Tensor) and value.ndim:
        raise RuntimeError(f"kit.masked_fill: value must be a number or a 0-dim tensor, got "
                           f"shape {tuple(value.shape)}. Fix: pass value.item()")
    if x.dtype.kind in "biu":  # the value in x's dtype, as PyTorch casts it (no float between)
        value = _number_of(x.dtype, value.item() if isinstance(value, Tensor) else value)
    out = where(mask, value, x)
    return out if out.dtype == x.dtype else astype(out, x.dtype)


def _number_of(dtype, value, op="masked_fill"):
    """A Python number of an integer or bool `dtype` (2.7 -> 2), or PyTorch's RuntimeError for
    one out of its range."""
    if dtype.kind == "b":
        return bool(value)
    number = int(value)
    if not np.iinfo(dtype).min <= number <= np.iinfo(dtype).max:
        raise RuntimeError(f"value cannot be converted to type {dtype} without overflow "
                           f"(kit.{op}, as PyTorch). Fix: a value in [{np.iinfo(dtype).min}, "
                           f"{np.iinfo(dtype).max}], or convert the input, e.g. x.float()")
    return number


def _along(x, axis, i):
    return getitem(x, (slice(None),) * axis + (i,))


@composite("prod", methods=("prod",), torch="prod")
def prod(x, dim=None, keepdim=False, *, dtype=None):
    """The product along `dim` (all elements if None); its gradient is PyTorch's: the product
    over the element where no element is 0, else the product of the others.

    >>> import kit
    >>> kit.tensor([2., 3.]).prod()
    tensor(6.)
    """
    if not isinstance(x, Tensor):
        raise TypeError(f"kit.prod: expected a Tensor, got {type(x).__name__}")
    if dtype is not None:
        x = astype(x, dtype)
    elif x.dtype.kind in "bi" or x.dtype.kind == "u":
        x = astype(x, np.int64)  # integers and bools multiply in int64, as in PyTorch
    if dim is None:
        return product(x, None, False)
    if not isinstance(dim, int):
        raise TypeError(f"kit.prod: dim must be one int (PyTorch's prod reduces one dim), got "
                        f"{dim!r}. Fix: call prod once per dim")
    axis = normalize_axis(dim, x.ndim, "prod")
    return product(x, axis[0] if axis else None, keepdim)


def _prod_rule(node, g, x, y):
    # NOTE: PyTorch's prod_backward: grad * result / input where no element of the input is 0
    # (so an inf or NaN anywhere makes the slice's gradient NaN, as there); else the product of
    # the other elements, from running products on both sides; a whole-tensor product with
    # several zeros has a zero gradient (outside create_graph, as PyTorch's shortcut).
    axis, keepdims = node.params
    d = data_of(x)
    if d.ndim == 0:
        return (g,)
    if axis is None:  # the whole tensor: along one flat axis
        shape, x, axis = d.shape, reshape(x, (-1,)) if isinstance(x, Tensor) else d.reshape(-1), 0
        d = data_of(x)
    elif not keepdims:
        g, y = _kept(g, axis), _kept(y, axis)
    zeros = d == 0
    if not zeros.any():
        out = g * (y / x)
    elif node.params[0] is None and not isinstance(g, Tensor) and int(zeros.sum()) > 1:
        out = backend.get_array_module(d).zeros_like(d)
    else:
        out = g * _others_product(x, axis)
    return (out.reshape(shape) if node.params[0] is None else out,)


def _kept(v, axis):
    return unsqueeze(v, axis) if isinstance(v, Tensor) else backend.get_array_module(v).expand_dims(
        v, axis)


def _others_product(x, axis):
    """Each element's product of the other elements along `axis` (PyTorch's
    prod_safe_zeros_backward: running products from the left and from the right, exclusive)."""
    lead = (slice(None),) * axis
    if not isinstance(x, Tensor):
        xp = backend.get_array_module(x)
        ones = xp.ones(x.shape[:axis] + (1,) + x.shape[axis + 1:], dtype=x.dtype)
        left = xp.cumprod(xp.concatenate([ones, x[lead + (slice(0, -1),)]], axis), axis)
        flipped = x[lead + (slice(None, 0, -1),)]  # x[1:], reversed
        right = xp.cumprod(xp.concatenate([ones, flipped], axis), axis)[lead + (slice(None, None,
                                                                                      -1),)]
        return left * right
    from kit.ops.movement import concatenate
    from kit.ops.statistics import cumprod

    ones = Tensor(backend.get_array_module(x._data).ones(
        x.shape[:axis] + (1,) + x.shape[axis + 1:], dtype=x.dtype))
    left = cumprod(concatenate([ones, getitem(x, lead + (slice(0, -1),))], axis), axis)
    right = cumprod(concatenate([ones, getitem(x, lead + (slice(None, 0, -1),))], axis), axis)
    return left * getitem(right, lead + (slice(None, None, -1),))


@primitive("product", grad=_prod_rule, saves="x, output", batch="product", public=False,
           profile="prod")
def product(x, axis, keepdims):
    """x's product along `axis` (an int, or None for all elements): prod's primitive."""
    d = x._data
    xp = backend.get_array_module(d)
    out = xp.asarray(xp.prod(d, axis=axis, keepdims=keepdims and axis is not None))
    if out.dtype != d.dtype:
        out = out.astype(d.dtype)
    return record("prod" if axis is None else "prod_dim", _prod_rule, out, (x,), (x, OUTPUT),
                  (axis, keepdims))


def _truth(x, dim, keepdim, op, test, found):
    axes = normalize_axis(dim, x.ndim, op)
    hits = sum_(astype(test(x, 0), np.int64), axes, keepdim)
    return found(hits, 0)


@composite("all", methods=("all",), torch="all")
def all(x, dim=None, keepdim=False):  # noqa: A001 - PyTorch's name
    """True where every element along `dim` is nonzero; a bool tensor, not differentiable."""
    return _truth(x, dim, keepdim, "all", eq, eq)


@composite("any", methods=("any",), torch="any")
def any(x, dim=None, keepdim=False):  # noqa: A001 - PyTorch's name
    """True where some element along `dim` is nonzero; a bool tensor, not differentiable."""
    return _truth(x, dim, keepdim, "any", ne, ne)


def require_floating(x, op):
    if x.dtype.kind not in "fc":
        raise RuntimeError(f"kit.{op}: expected a floating point tensor, got {x.dtype} (as in "
                           f"PyTorch). Fix: x.float().{op}(...)")


def _cumsum_rule(node, g):
    # NOTE: the running sum from the end (reversed, summed, reversed back): the gradient of a
    # running sum; spelt with cumsum itself, so it differentiates again under create_graph
    axis = node.params
    if axis is None:  # a 0-d tensor: itself
        return (g,)
    back = (slice(None),) * axis + (slice(None, None, -1),)
    return (_running_sum(g[back], axis)[back],)


@primitive("cumsum", grad=_cumsum_rule, batch="cumsum", methods=("cumsum",), torch="cumsum")
def cumsum(x, dim, dtype=None):
    """Running sums along `dim`, added in order as PyTorch's cumsum adds them (so an inf or a
    NaN spreads forward only); integers and bools sum in int64."""
    if not isinstance(x, Tensor):
        raise TypeError(f"kit.cumsum: expected a Tensor, got {type(x).__name__}")
    if dtype is not None:
        x = astype(x, dtype)
    elif x.dtype.kind in "biu":
        x = astype(x, np.int64)
    axis = one_dim(dim, x.ndim, "cumsum")
    d = x._data
    if not d.ndim:
        return record("cumsum", _cumsum_rule, d.copy(), (x,), (), None)
    out = backend.get_array_module(d).cumsum(d, axis)
    if out.dtype.kind in "fc":
        # NOTE: PyTorch's running sum starts from 0, so -0.0 + ... is never -0.0 there (NumPy
        # keeps x[0] itself); adding +0.0 changes exactly those signed zeros
        out += 0.0
    return record("cumsum", _cumsum_rule, out, (x,), (), axis)


_running_sum = dual(cumsum, "cumsum")


def _correction(unbiased, correction, op):
    if unbiased is not None and correction is not None:
        raise ValueError(f"kit.{op}: give unbiased= or correction=, not both")
    if unbiased is not None:
        return 1 if unbiased else 0
    return 1 if correction is None else correction


@composite("var", methods=("var",), torch="var")
def var(x, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """The variance over `dim`, divided by N - correction (PyTorch 2.x: correction=1 default;
    unbiased=False is correction=0). One node, VarBackward0, with PyTorch's gradient."""
    return variance(x, *_variance_args(x, dim, unbiased, keepdim, correction, "var"))


@composite("std", methods=("std",), torch="std")
def std(x, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """sqrt(var(x, ...)): the standard deviation, with var's correction. One node,
    StdBackward0: its gradient is 0 where it is 0, as PyTorch's (not sqrt's inf times 0)."""
    return deviation(x, *_variance_args(x, dim, unbiased, keepdim, correction, "std"))


def _variance_args(x, dim, unbiased, keepdim, correction, op):
    """(axes, keepdim, correction, whole) for the primitives, with PyTorch's checks and its
    warning for no degrees of freedom."""
    if not isinstance(x, Tensor):
        raise TypeError(f"kit.{op}: expected a Tensor, got {type(x).__name__}")
    require_floating(x, op)
    if unbiased is not None and not isinstance(unbiased, bool):
        raise TypeError(f"kit.{op}: unbiased must be a bool, got {unbiased!r}. Fix: "
                        f"correction=1 (or 0)")
    c = _correction(unbiased, correction, op)
    axes = normalize_axis(all_if_none(dim), x.ndim, op)
    n = _count(x, axes) if x.numel() else 0
    if n - c <= 0:
        # NOTE: PyTorch's warning and result: x / 0 is inf, 0 / 0 (one element, or none) NaN;
        # an empty input always warns (PyTorch's reduction factor is then 0), whatever the dims
        warnings.warn(f"{op}(): degrees of freedom is <= 0. Correction should be strictly less "
                      f"than the reduction factor (input numel divided by output numel).",
                      UserWarning, stacklevel=4)
    # NOTE: "whole" is PyTorch's case of no dim (or a 0-d input), whose gradient at no degrees
    # of freedom is NaN where x equals the mean and inf elsewhere. dim=[] reduces every dim as
    # dim=None does, and kit differentiates it so; PyTorch 2.13's backward treats dim=[] as
    # reducing nothing (N = 1: an inf gradient), which kit does not copy.
    whole = dim is None or x.ndim == 0 or (isinstance(dim, (tuple, list)) and not dim)
    return axes, bool(keepdim), c, whole


def _variance_array(d, axes, keepdims, correction):
    n = _count(d, axes) if d.size else 0
    centred = d - d.mean(axis=axes, keepdims=True) if n else d  # (the mean of nothing warns)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = (centred * centred).sum(axis=axes, keepdims=keepdims) / builtins.max(
            0, n - correction)
    return backend.get_array_module(d).asarray(out, dtype=d.dtype)


def _variance_grad(g, x, axes, keepdims, correction, whole):
    """PyTorch's var_backward: (2 / (N - correction)) * grad * (x - mean(x)), on arrays, or on
    Tensors under create_graph."""
    d = data_of(x)
    if d.size == 0:
        return backend.get_array_module(d).zeros_like(d) if not isinstance(x, Tensor) else \
            x * 0
    if not keepdims and axes:
        kept = tuple(1 if i in axes else n for i, n in enumerate(d.shape))
        g = g.reshape(kept)
    if isinstance(x, Tensor):
        centre = mean(x, axes, True)
    else:
        centre = d.mean(axis=axes, keepdims=True)
    dof = _count(d, axes) - correction
    if dof <= 0 and whole:
        inf_or_nan = where_(x == centre, np.nan, np.inf)
        if not isinstance(inf_or_nan, Tensor):
            inf_or_nan = inf_or_nan.astype(d.dtype)
        return g * inf_or_nan
    scale = 2.0 / dof if dof > 0 else np.inf
    return scale * g * (x - centre)


def _variance_rule(node, g, x):
    return (_variance_grad(g, x, *node.params),)


@primitive("variance", grad=_variance_rule, saves="x", batch="variance", public=False,
           profile="var")
def variance(x, axes, keepdims, correction, whole):
    """var's primitive: the variance over `axes` (a tuple), divided by N - correction."""
    out = _variance_array(x._data, axes, keepdims, correction)
    return record("var", _variance_rule, out, (x,), (x,), (axes, keepdims, correction, whole))


def _deviation_rule(node, g, x, y):
    # NOTE: PyTorch's std_backward: var's gradient of grad / (2 * std), 0 where std is 0
    gv = where_(y == 0, 0.0, g / (y * 2))
    if not isinstance(gv, Tensor) and gv.dtype != data_of(g).dtype:
        gv = gv.astype(data_of(g).dtype)
    return (_variance_grad(gv, x, *node.params),)


@primitive("deviation", grad=_deviation_rule, saves="x, output", batch="variance",
           public=False, profile="std")
def deviation(x, axes, keepdims, correction, whole):
    """std's primitive: the square root of the variance over `axes`."""
    d = x._data
    out = backend.get_array_module(d).sqrt(_variance_array(d, axes, keepdims, correction))
    return record("std", _deviation_rule, out, (x,), (x, OUTPUT),
                  (axes, keepdims, correction, whole))


# The nodes are named as PyTorch's (ProdBackward0/1, VarBackward0, StdBackward0), not after the
# primitives: what they keep is listed under those names too.
SAVED_NAMES.update(prod=("x", "output"), prod_dim=("x", "output"), var=("x",),
                   std=("x", "output"))


def safe_root(s, p):
    """s ** (1 / p), with a zero gradient (not NaN) where s is 0 (the norms and std): the root
    is taken of a safe value there, then replaced by 0 with where, which sends no gradient to
    the branch it discards."""
    zero = eq(s, 0)
    safe = where(zero, 1.0, s)
    return where(zero, 0.0, sqrt(safe) if p == 2 else safe ** (1.0 / p))


@composite("topk", methods=("topk",), torch="topk")
def topk(x, k, dim=-1, largest=True, sorted=True):  # noqa: A002 - PyTorch's keyword
    """(values, indices) of the k largest (smallest if largest=False) along `dim`, sorted (also
    when sorted=False: PyTorch leaves that order unspecified)."""
    if x.dtype.kind == "b":
        raise RuntimeError("kit.topk: does not support bool tensors (as PyTorch). Fix: x.int()")
    n = x.shape[one_dim(dim, x.ndim, "topk")] if x.ndim else 1
    if not 0 <= k <= n:
        raise RuntimeError(f"kit.topk: k={k} is out of range for a dimension of size {n} "
                           f"(expected 0 <= k <= {n})")
    values, indices = sort(x, dim, largest)
    if x.ndim == 0:
        return TopkResult(values, indices)
    axis = one_dim(dim, x.ndim, "topk")
    keep = (slice(None),) * axis + (slice(0, k),)
    return TopkResult(getitem(values, keep), getitem(indices, keep))


def _grid(index, dim, op):
    """The index tuple picking index[i][j][k] along `dim` (out[i][j][k] = x[i][index][k])."""
    idx = data_of(index)
    if idx.dtype.kind not in "iu":
        raise TypeError(f"kit.{op}: index must be an integer (int64) tensor, got {idx.dtype}. "
                        f"Fix: index.long()")
    xp = backend.get_array_module(idx)
    grids = list(xp.ix_(*[xp.arange(n) for n in idx.shape])) if idx.ndim else []
    # NOTE: a plain index Tensor goes in as itself, so the indexing node keeps it (PyTorch's
    # gather keeps its index): an in-place change of it before backward is an error
    grids[dim] = index if type(index) is Tensor else idx
    return tuple(grids)


def _check_index(x, dim, index, op):
    idx = data_of(index)
    dim = one_dim(dim, x.ndim, op)
    if idx.ndim != x.ndim:
        raise RuntimeError(f"kit.{op}: index has {idx.ndim} dims but the tensor has {x.ndim}; "
                           f"they must have the same number of dimensions")
    for a, (i, s) in enumerate(zip(idx.shape, x.shape, strict=True)):
        if a != dim and i > s:
            raise RuntimeError(f"kit.{op}: index size {i} exceeds the tensor's size {s} in "
                               f"dimension {a}")
    if idx.size and (int(idx.min()) < -x.shape[dim] or int(idx.max()) >= x.shape[dim]):
        raise IndexError(f"kit.{op}: index holds {int(idx.max())}, out of range for dimension "
                         f"{dim} of size {x.shape[dim]}")
    return dim


@composite("gather", methods=("gather",), torch="gather")
def gather(x, dim, index):
    """out[i][j] = x[i][index[i][j]] for dim=1 (PyTorch's gather); differentiable in x."""
    dim = _check_index(x, dim, index, "gather")
    return getitem(x, _grid(index, dim, "gather"))


@composite("scatter_add", methods=("scatter_add",), inplace=("scatter_add_",), torch="scatter_add")
def scatter_add(x, dim, index, src):
    """x with src[i][j] added at x[i][index[i][j]] for dim=1 (repeats accumulate)."""
    dim = _check_index(x, dim, index, "scatter_add")
    idx = data_of(index)
    too_big = idx.ndim == src.ndim and builtins.any(
        i > n for i, n in zip(idx.shape, src.shape, strict=True))
    if idx.ndim != src.ndim or too_big:
        raise RuntimeError(f"kit.scatter_add: index shape {tuple(idx.shape)} exceeds src shape "
                           f"{tuple(src.shape)}")
    part = getitem(src, tuple(slice(0, n) for n in idx.shape))
    return x + index_put_add(part, _grid(index, dim, "scatter_add"), tuple(x.shape))


def _einsum_spec(equation, n):
    equation = equation.replace(" ", "")
    if "." in equation:
        raise NotImplementedError(f"kit.einsum: ellipsis ('...') in {equation!r} is not "
                                  f"implemented. Fix: name every dimension with a letter")
    inputs, _, output = equation.partition("->")
    terms = inputs.split(",")
    if len(terms) != n:
        raise ValueError(f"kit.einsum: {equation!r} names {len(terms)} operands but {n} were "
                         f"given")
    for term in terms:
        if len(set(term)) != len(term):
            raise NotImplementedError(f"kit.einsum: a repeated index within one operand "
                                      f"({term!r} in {equation!r}: a diagonal or trace) is not "
                                      f"implemented. Fix: use x.diagonal() first")
    if "->" not in equation:  # implicit: the letters seen once, in alphabetical order
        letters = "".join(terms)
        output = "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    return terms, output


@composite("einsum", torch="einsum")
def einsum(equation, *operands):
    """Einstein summation, e.g. einsum('ij,jk->ik', a, b): each operand is laid out over all the
    letters (size 1 where it has none), the operands are multiplied, and the letters not in the
    output are summed. Ellipsis and repeated letters in one operand raise NotImplementedError."""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    terms, output = _einsum_spec(equation, len(operands))
    letters = list(dict.fromkeys(output + "".join(terms)))
    product = None
    for term, x in zip(terms, operands, strict=True):
        if len(term) != x.ndim:
            raise ValueError(f"kit.einsum: operand {term!r} has {x.ndim} dims, the equation "
                             f"names {len(term)}")
        order = sorted(range(len(term)), key=lambda a: letters.index(term[a]))
        laid = permute(x, *order) if order else x
        shape = [x.shape[term.index(c)] if c in term else 1 for c in letters]
        laid = reshape(laid, tuple(shape))
        product = laid if product is None else product * laid
    summed = tuple(range(len(output), len(letters)))
    return sum_(product, summed) if summed else product
