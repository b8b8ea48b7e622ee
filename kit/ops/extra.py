"""Issue 12's tensor functions (masked_fill, prod, all/any, cumsum, var/std, topk, gather,
scatter_add, einsum; the norms are in norms.py): composites over existing primitives, so they own
no gradient code and batch under vmap and run on the GPU through those primitives. The exception,
with its reason: cumsum is a primitive (PyTorch adds in order; a matmul with a triangle of ones
made inf * 0 = NaN, and kept the triangle)."""

from __future__ import annotations

import builtins
import warnings
from collections import namedtuple

import numpy as np

from kit import backend
from kit._tensor import Tensor
from kit.ops._record import data_of, dual, record
from kit.ops._registry import composite, primitive
from kit.ops.elementwise import eq, ne, sqrt, where
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


def _number_of(dtype, value):
    """A Python number of an integer or bool `dtype` (2.7 -> 2), or PyTorch's RuntimeError for
    one out of its range."""
    if dtype.kind == "b":
        return bool(value)
    number = int(value)
    if not np.iinfo(dtype).min <= number <= np.iinfo(dtype).max:
        raise RuntimeError(f"value cannot be converted to type {dtype} without overflow "
                           f"(kit.masked_fill, as PyTorch)")
    return number


def _along(x, axis, i):
    return getitem(x, (slice(None),) * axis + (i,))


@composite("prod", methods=("prod",), torch="prod")
def prod(x, dim=None, keepdim=False, *, dtype=None):
    """The product along `dim` (all elements if None), a chain of multiplications so that the
    gradient is right at zeros too: `kit.tensor([2., 3.]).prod()` is 6."""
    if dtype is not None:
        x = astype(x, dtype)
    elif x.dtype.kind in "bi" or x.dtype.kind == "u":
        x = astype(x, np.int64)  # integers and bools multiply in int64, as in PyTorch
    if dim is None:
        x, dim, keepdim = reshape(x, (-1,)), 0, False
    if not isinstance(dim, int):
        raise TypeError(f"kit.prod: dim must be one int (PyTorch's prod reduces one dim), got "
                        f"{dim!r}. Fix: call prod once per dim")
    axis = normalize_axis(dim, x.ndim, "prod")
    if not axis:  # a 0-d tensor
        return x * 1
    axis = axis[0]
    if x.shape[axis] == 0:
        out = sum_(x, axis) + 1  # the empty product
    else:
        out = _along(x, axis, 0)
        for i in range(1, x.shape[axis]):
            out = out * _along(x, axis, i)
    return unsqueeze(out, axis) if keepdim else out


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
    return record("cumsum", _cumsum_rule, backend.get_array_module(d).cumsum(d, axis), (x,), (),
                  axis)


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
    unbiased=False is correction=0)."""
    return _variance(x, dim, unbiased, keepdim, correction, "var")


def _variance(x, dim, unbiased, keepdim, correction, op):
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
                      UserWarning, stacklevel=3)
    centred = x - mean(x, axes, True) if n else x  # (the mean of nothing would warn)
    with np.errstate(divide="ignore", invalid="ignore"):
        return sum_(centred * centred, axes, keepdim) / max(0, n - c)


@composite("std", methods=("std",), torch="std")
def std(x, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """sqrt(var(x, ...)): the standard deviation, with var's correction; its gradient is 0
    where it is 0 (as PyTorch's), not sqrt's inf times 0."""
    return safe_root(_variance(x, dim, unbiased, keepdim, correction, "std"), 2)


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


@composite("scatter_add", methods=("scatter_add",), torch="scatter_add")
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
