"""Order statistics and scans, as PyTorch has them: median and nanmedian, kthvalue, quantile and
nanquantile, count_nonzero, cumprod, logcumsumexp. All composites: the order statistics pick from
a stable sort with a one-hot mask (so the gradient reaches the element picked, as PyTorch's, and
they batch under vmap through sort and where); cumprod is a chain of multiplications (its
gradient is right at zeros, as PyTorch's); logcumsumexp is a logsumexp over a triangle.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from kit import backend
from kit._tensor import Tensor
from kit.ops._registry import composite
from kit.ops.elementwise import eq, ne, where
from kit.ops.elementwise_math import ceil, floor, lerp
from kit.ops.elementwise_math import round as round_
from kit.ops.extra import require_floating
from kit.ops.movement import astype, getitem, movedim, reshape, stack, unsqueeze
from kit.ops.reductions import logsumexp, normalize_axis
from kit.ops.reductions import sum as sum_
from kit.ops.selection import one_dim, require_tensor
from kit.ops.sorting import sort

MedianResult = namedtuple("median", ["values", "indices"])  # torch.return_types.median
NanmedianResult = namedtuple("nanmedian", ["values", "indices"])
KthvalueResult = namedtuple("kthvalue", ["values", "indices"])

_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _constant(array, like):
    return Tensor(backend.to_device(np.asarray(array), like.device))


def _pick(values, d, position):
    """values[..., position, ...] along dim d (position: a tensor with that dim kept, size 1),
    as a one-hot sum: the gradient reaches the element picked only, and vmap batches it."""
    n = values.shape[d]
    shape = [1] * values.ndim
    shape[d] = n
    hit = eq(_constant(np.arange(n).reshape(shape), values), position)
    zero = _constant(np.zeros((), values.dtype), values)
    picked = sum_(where(hit, values, zero), d, True)
    return picked if picked.dtype == values.dtype else astype(picked, values.dtype)


def _nan_count(x, d):
    return sum_(astype(ne(x, x), np.int64), d, True)


def _slices(x, dim, op):
    """x as 1-D (dim=None) or with `dim` checked: (x, d, n); PyTorch's error for an empty dim."""
    require_tensor(x, op)
    if dim is None:
        x = reshape(x, (-1,))
    d = one_dim(x, dim if dim is not None else 0, op)
    if x.ndim == 0:
        x, d = reshape(x, (1,)), 0
    n = x.shape[d]
    if n == 0 and dim is not None:
        raise IndexError(f"kit.{op}: expected reduction dim {d} to have non-zero size (as "
                         f"PyTorch)")
    return x, d, n


def _kept(t, x, d, keepdim, dim):
    """The picked slice (dim d kept, size 1) as the op returns it."""
    if dim is None:
        return reshape(t, (1,) * x.ndim if keepdim else ())
    if x.ndim == 0:
        return reshape(t, ())
    return t if keepdim else reshape(t, tuple(n for i, n in enumerate(t.shape) if i != d))


def _median(x, dim, keepdim, op, skip_nan):
    original = x
    x, d, n = _slices(x, dim, op)
    if dim is None and n == 0:  # the median of nothing is NaN, as PyTorch's
        return Tensor(backend.to_device(np.array(np.nan, dtype=x.dtype), x.device))
    values, indices = sort(x, d)
    nans = _nan_count(x, d)
    if skip_nan:  # nanmedian: the lower median of the numbers (NaN if there are none)
        count = nans * -1 + n
        position = where(eq(count, 0), 0, floor((count - 1) / 2).long())
    else:  # median: NaN (the first NaN's index) as soon as a slice holds one
        position = where(eq(nans, 0), (n - 1) // 2, nans * -1 + n)
    if dim is not None:
        result = MedianResult if op == "median" else NanmedianResult
        return result(*(_kept(_pick(t, d, position), original, d, keepdim, dim)
                        for t in (values, indices)))
    value = _pick(values, d, position).detach()
    if x.dtype.kind != "f":
        return reshape(value, ())
    # NOTE: as PyTorch's median(): the gradient is shared evenly among the elements equal to the
    # median (the NaNs, for a NaN median); a sum of those over their count gives that.
    hits = where(ne(value, value), ne(x, x), eq(x, value))
    zero = _constant(np.zeros((), x.dtype), x)
    return reshape(sum_(where(hits, x, zero)) / sum_(astype(hits, x.dtype)), ())


@composite("median", methods=("median",), torch="median")
def median(x, dim=None, keepdim=False):
    """The lower median: of all elements (a 0-d tensor; NaN if any is NaN), or (values,
    indices) along `dim` (the index is the median's in a stable sort, as PyTorch's)."""
    return _median(x, dim, keepdim, "median", skip_nan=False)


@composite("nanmedian", methods=("nanmedian",), torch="nanmedian")
def nanmedian(x, dim=None, keepdim=False):
    """median ignoring NaNs (NaN only where a slice holds nothing else)."""
    return _median(x, dim, keepdim, "nanmedian", skip_nan=True)


@composite("kthvalue", methods=("kthvalue",), torch="kthvalue")
def kthvalue(x, k, dim=-1, keepdim=False):
    """(values, indices) of the k-th smallest along `dim` (k from 1; NaN sorts last). At ties
    the index is the k-th in a stable sort; PyTorch's quickselect may name another of the tied
    elements (its choice is unspecified)."""
    if not isinstance(k, int) or isinstance(k, bool):
        raise TypeError(f"kit.kthvalue: k must be an int, got {k!r}")
    original = x
    x, d, n = _slices(x, dim, "kthvalue")
    if not 1 <= k <= n:
        raise RuntimeError(f"kit.kthvalue: selected number k={k} out of range for dimension {d} "
                           f"of size {n}")
    values, indices = sort(x, d)
    position = _constant(np.array(k - 1), x)
    return KthvalueResult(*(_kept(_pick(t, d, position), original, d, keepdim, dim)
                            for t in (values, indices)))


@composite("count_nonzero", methods=("count_nonzero",), torch="count_nonzero")
def count_nonzero(x, dim=None):
    """How many elements are nonzero (NaN counts), over `dim` (an int, a tuple, or all)."""
    axes = normalize_axis(dim, require_tensor(x, "count_nonzero").ndim, "count_nonzero")
    return sum_(astype(ne(x, 0), np.int64), axes)


# --- quantiles ------------------------------------------------------------------------------
def _q_values(q, x, op):
    if isinstance(q, Tensor):
        if q.ndim > 1:
            raise RuntimeError(f"kit.{op}: q must be a scalar or 1D tensor, got shape "
                               f"{tuple(q.shape)}")
        if q.dtype != x.dtype:
            raise RuntimeError(f"kit.{op}: the q tensor must have the input's dtype {x.dtype}, "
                               f"got {q.dtype}. Fix: q.to(x.dtype)")
        qs, one = [float(v) for v in np.ravel(backend.to_device(q._data, "cpu"))], q.ndim == 0
    else:
        qs, one = [float(q)], True
    for v in qs:
        if not 0 <= v <= 1:
            raise RuntimeError(f"kit.{op}: q must be in the range [0, 1] but got {v}")
    return qs, one


def _quantile(x, q, dim, keepdim, interpolation, op, skip_nan):
    require_floating(require_tensor(x, op), op)
    if interpolation not in _INTERPOLATIONS:
        raise RuntimeError(f"kit.{op}: interpolation must be one of {', '.join(_INTERPOLATIONS)}, "
                           f"but got {interpolation}")
    if x.numel() == 0:
        raise RuntimeError(f"kit.{op}: the input tensor must be non-empty")
    qs, one = _q_values(q, x, op)
    original = x
    x, d, n = _slices(x, dim, op)
    values = sort(x, d).values
    nans = _nan_count(x, d)
    # NOTE: as PyTorch: a slice with a NaN ranks every q at its last position, which sorts NaN
    # (quantile's answer is then NaN); nanquantile ranks among the numbers, NaN if there are none
    at_nan = _constant(np.array(n - 1, dtype=x.dtype), x)
    numbers = astype(nans * -1 + (n - 1), x.dtype)  # the last position holding a number
    results = []
    for v in qs:
        if skip_nan:
            rank = where(numbers < 0, at_nan, numbers * v)
        else:
            rank = where(nans > 0, at_nan, _constant(np.array(v * (n - 1), dtype=x.dtype), x))
        below, above = (round_(rank),) * 2 if interpolation == "nearest" else (floor(rank),
                                                                                ceil(rank))
        low = _pick(values, d, below.long())
        high = _pick(values, d, above.long())
        if interpolation in ("lower", "nearest"):
            out = low
        elif interpolation == "higher":
            out = high
        else:
            weight = 0.5 if interpolation == "midpoint" else rank - below
            out = lerp(low, high, weight)
        results.append(_kept(out, original, d, keepdim, dim))
    return results[0] if one else stack(results, 0)


@composite("quantile", methods=("quantile",), torch="quantile")
def quantile(x, q, dim=None, keepdim=False, *, interpolation="linear"):
    """The q-quantiles of x (over all elements, or along `dim`), by linear interpolation between
    the sorted values (or lower, higher, midpoint, nearest); NaN where a slice holds a NaN. A 1-D
    q gives one result per q, stacked in front."""
    return _quantile(x, q, dim, keepdim, interpolation, "quantile", skip_nan=False)


@composite("nanquantile", methods=("nanquantile",), torch="nanquantile")
def nanquantile(x, q, dim=None, keepdim=False, *, interpolation="linear"):
    """quantile ignoring NaNs."""
    return _quantile(x, q, dim, keepdim, interpolation, "nanquantile", skip_nan=True)


# --- scans ------------------------------------------------------------------------------------
@composite("cumprod", methods=("cumprod",), inplace=("cumprod_",), torch="cumprod")
def cumprod(x, dim, *, dtype=None):
    """Running products along `dim`: a chain of multiplications, so the gradient is right where
    x has zeros (as PyTorch's), and so are second derivatives; integers multiply in int64."""
    require_tensor(x, "cumprod")
    if dtype is not None:
        x = astype(x, dtype)
    elif x.dtype.kind in "biu":
        x = astype(x, np.int64)
    if x.ndim == 0:
        normalize_axis(dim, 0, "cumprod")
        return x * 1
    d = one_dim(x, dim, "cumprod")
    lead = (slice(None),) * d
    running = [getitem(x, lead + (0,))] if x.shape[d] else []
    for i in range(1, x.shape[d]):
        running.append(running[-1] * getitem(x, lead + (i,)))
    return stack(running, d) if running else x * 1


@composite("logcumsumexp", methods=("logcumsumexp",), torch="logcumsumexp")
def logcumsumexp(x, dim):
    """log(cumsum(exp(x))) along `dim`, stably: out_j is the logsumexp of x_0..x_j, computed as
    a logsumexp over a triangle of x (-inf above it), so no exp overflows or vanishes."""
    if require_tensor(x, "logcumsumexp").dtype.kind not in "f":
        raise NotImplementedError(f"\"logcumsumexp\" not implemented for {x.dtype} (kit."
                                  f"logcumsumexp, as in PyTorch). Fix: x.float()")
    if x.ndim == 0:
        normalize_axis(dim, 0, "logcumsumexp")
        return x * 1
    d = one_dim(x, dim, "logcumsumexp")
    n = x.shape[d]
    # (row j, column i): 0 where i <= j, -inf above the diagonal
    triangle = np.where(np.tri(n, dtype=bool), 0.0, -np.inf).astype(x.dtype)
    spread = unsqueeze(movedim(x, d, -1), -2) + _constant(triangle, x)
    return movedim(logsumexp(spread, -1), -1, d)
