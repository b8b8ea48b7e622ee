"""`gluon.utils`: split_and_load (a batch onto each context) and clip_global_norm (rescale
gradients so that their joint 2-norm is at most max_norm), as MXNet 1.x's.

>>> import kit.mx as mx
>>> grads = [mx.nd.array([3.0]), mx.nd.array([4.0])]
>>> mx.gluon.utils.clip_global_norm(grads, 1.0), grads[0].asnumpy()
(5.0, array([0.6], dtype=float32))
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from kit.mx.ndarray import NDArray

__all__ = ["clip_global_norm", "split_and_load", "split_data"]


def split_data(data, num_slice, batch_axis=0, even_split=True):
    """`data` cut into `num_slice` parts along `batch_axis`."""
    size = data.shape[batch_axis]
    if even_split and size % num_slice != 0:
        raise ValueError(
            f"data with shape {data.shape} cannot be evenly split into {num_slice} slices along "
            f"axis {batch_axis}. Use a batch size that's multiple of {num_slice} or set "
            f"even_split=False to allow uneven partitioning of data."
        )
    if num_slice == 1:
        return [data]
    bounds = np.linspace(0, size, num_slice + 1).astype(int) if not even_split else [
        i * (size // num_slice) for i in range(num_slice + 1)]
    index = [slice(None)] * data.ndim
    parts = []
    for start, stop in zip(bounds[:-1], bounds[1:], strict=True):
        index[batch_axis] = slice(int(start), int(stop))
        parts.append(data[tuple(index)])
    return parts


def split_and_load(data, ctx_list, batch_axis=0, even_split=True):
    """One slice of `data` on each context of `ctx_list` (the whole batch for one context)."""
    if not isinstance(data, NDArray):
        from kit.mx import nd

        data = nd.array(data, ctx=ctx_list[0])
    if len(ctx_list) == 1:
        return [data.as_in_context(ctx_list[0])]
    parts = split_data(data, len(ctx_list), batch_axis, even_split)
    return [part.as_in_context(ctx) for part, ctx in zip(parts, ctx_list, strict=True)]


def clip_global_norm(arrays, max_norm, check_isfinite=True):
    """Scale `arrays` in place by max_norm / total_norm when their joint 2-norm exceeds
    max_norm; returns the norm before clipping (a float)."""
    if not arrays:
        raise ValueError("clip_global_norm: got no arrays")
    total = math.sqrt(sum(float((a.asnumpy().astype(np.float64) ** 2).sum()) for a in arrays))
    if check_isfinite and not math.isfinite(total):
        warnings.warn(
            UserWarning("nan or inf is detected. Clipping results will be undefined."),
            stacklevel=2,
        )
    scale = max_norm / (total + 1e-8)
    if scale < 1.0:
        with np.errstate(invalid="ignore", over="ignore"):  # inf * 0: undefined, as warned
            for a in arrays:
                a *= scale
    return total
