"""`default_collate`: a list of samples -> one batch, as torch.utils.data's.

Tensors and NumPy arrays are stacked along a new dim 0, Python floats give a float64 tensor and
ints an int64 one (as PyTorch), strings stay a list, and tuples, lists and dicts are collated
field by field (a tuple of fields comes back as a list, as in PyTorch).

>>> import kit
>>> from kit.data import default_collate
>>> default_collate([(kit.ones(2), 0), (kit.zeros(2), 1)])
[tensor([[1., 1.],
        [0., 0.]]), tensor([0, 1])]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from kit._creation import tensor
from kit._tensor import Tensor, float64, int64
from kit.ops.movement import stack


def default_collate(batch):
    """Merge a list of samples into a batch (see the module docstring)."""
    elem = batch[0]
    if isinstance(elem, Tensor):
        return stack(list(batch), 0)
    if isinstance(elem, (np.ndarray, np.generic)):
        return stack([tensor(np.asarray(b)) for b in batch], 0)
    if isinstance(elem, bool):
        return tensor(batch)
    if isinstance(elem, float):
        return tensor(batch, dtype=float64)
    if isinstance(elem, int):
        return tensor(batch, dtype=int64)
    if isinstance(elem, (str, bytes)):
        return list(batch)
    if isinstance(elem, Mapping):
        return {key: default_collate([d[key] for d in batch]) for key in elem}
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):  # a namedtuple
        return type(elem)(*(default_collate(list(s)) for s in zip(*batch, strict=True)))
    if isinstance(elem, Sequence):
        if any(len(b) != len(elem) for b in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        return [default_collate(list(samples)) for samples in zip(*batch, strict=True)]
    raise TypeError(
        f"default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; "
        f"found {type(elem).__name__}. Fix: return one of those from the dataset, or pass "
        f"collate_fn="
    )
