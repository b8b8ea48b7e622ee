"""torch.nn.functional's functions of vectors on kit's ops: normalize, cosine_similarity,
pairwise_distance (with the norms of kit/ops/norms.py, whose gradient is 0, not NaN, at a zero
vector) and one_hot. Composites: no gradient code."""

from __future__ import annotations

import numpy as np

from kit import backend
from kit._tensor import Tensor
from kit.ops._registry import composite
from kit.ops.elementwise import eq
from kit.ops.elementwise_math import clamp_min
from kit.ops.movement import astype, broadcast_shapes, expand, unsqueeze
from kit.ops.norms import vector_norm
from kit.ops.reductions import sum as sum_


@composite("normalize", public=False)
def normalize(x, p=2.0, dim=1, eps=1e-12):
    """x divided by its p-norm along `dim`, the norm clamped below at eps (a zero vector stays
    zero), as torch.nn.functional.normalize."""
    return x / clamp_min(vector_norm(x, p, dim, True), eps)


@composite("cosine_similarity", torch="cosine_similarity")
def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """The cosine of the angle between x1 and x2 along `dim` (broadcast together): each divided
    by its norm (clamped below at eps, so a zero vector gives 0), then the dot product, as
    PyTorch computes it."""
    shape = broadcast_shapes(tuple(x1.shape), tuple(x2.shape))
    x1, x2 = (t if tuple(t.shape) == shape else expand(t, shape) for t in (x1, x2))
    unit1 = x1 / clamp_min(vector_norm(x1, 2, dim, True), eps)
    unit2 = x2 / clamp_min(vector_norm(x2, 2, dim, True), eps)
    return sum_(unit1 * unit2, dim)


@composite("pairwise_distance", torch="pairwise_distance")
def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """The p-norm of x1 - x2 + eps along the last dim (eps keeps the gradient finite where
    x1 == x2), as torch.nn.functional.pairwise_distance."""
    return vector_norm(x1 - x2 + eps, p, -1, keepdim)


@composite("one_hot", public=False)
def one_hot(x, num_classes=-1):
    """An int64 tensor with a trailing dim of num_classes (the largest class + 1 if -1): 1 at
    each element's class, 0 elsewhere; not differentiable."""
    if not isinstance(x, Tensor) or x.dtype != np.int64:
        raise RuntimeError("kit.one_hot: one_hot is only applicable to index tensor of type "
                           "LongTensor (int64). Fix: x.long()")
    d = backend.to_device(x._data, "cpu") if type(x) is Tensor else None
    if num_classes == -1:
        if d is None:
            raise NotImplementedError("vmap: kit.one_hot needs num_classes under vmap (the "
                                      "classes cannot be counted per sample)")
        if d.size == 0:
            raise RuntimeError("kit.one_hot: can not infer total number of classes from empty "
                               "tensor. Fix: give num_classes")
        num_classes = int(d.max()) + 1
    if d is not None and d.size:
        if d.min() < 0:
            raise RuntimeError("kit.one_hot: class values must be non-negative")
        if d.max() >= num_classes:
            raise RuntimeError(f"kit.one_hot: class values must be smaller than num_classes "
                               f"({num_classes}), got {int(d.max())}")
    classes = Tensor(backend.to_device(np.arange(num_classes), x.device))
    return astype(eq(unsqueeze(x, -1), classes), np.int64)
