"""`gluon.data`: Dataset, SimpleDataset, ArrayDataset and DataLoader, on kit.data's loader.

Batches are NDArrays: samples that are NDArrays are stacked, numbers and NumPy arrays become an
NDArray of their NumPy dtype, tuples are batched field by field (a list back, as MXNet).

>>> import kit.mx as mx
>>> data = mx.gluon.data.ArrayDataset(mx.nd.ones((5, 2)), mx.nd.arange(5))
>>> [y.asnumpy().tolist() for _, y in mx.gluon.data.DataLoader(data, batch_size=2)]
[[0.0, 1.0], [2.0, 3.0], [4.0]]
"""

from __future__ import annotations

import numpy as np

from kit import data as kit_data
from kit.mx import nd
from kit.mx.gluon.nn.basic_layers import apply
from kit.mx.ndarray import NDArray
from kit.ops import stack

__all__ = ["ArrayDataset", "DataLoader", "Dataset", "SimpleDataset", "default_batchify_fn"]


class Dataset(kit_data.Dataset):
    """Base class: `__getitem__(i)` and `__len__`; `transform(fn)` / `transform_first(fn)`."""

    def __len__(self):
        raise NotImplementedError(f"{type(self).__name__} must define __len__")

    def transform(self, fn, lazy=True):
        """A dataset of `fn(*sample)` (eager with lazy=False)."""
        out = _Transformed(self, fn)
        return out if lazy else SimpleDataset([out[i] for i in range(len(out))])

    def transform_first(self, fn, lazy=True):
        """Apply `fn` to the first field of each sample only (e.g. the image, not the label)."""
        return self.transform(_First(fn), lazy)


class _First:
    def __init__(self, fn):
        self._fn = fn

    def __call__(self, x, *rest):
        return (self._fn(x),) + rest if rest else self._fn(x)


class _Transformed(Dataset):
    def __init__(self, dataset, fn):
        self._dataset = dataset
        self._fn = fn

    def __len__(self):
        return len(self._dataset)

    def __getitem__(self, i):
        item = self._dataset[i]
        return self._fn(*item) if isinstance(item, tuple) else self._fn(item)


class SimpleDataset(Dataset):
    """A dataset over any sequence (a list, a NumPy array, an NDArray)."""

    def __init__(self, data):
        self._data = data

    def __len__(self):
        return len(self._data)

    def __getitem__(self, i):
        return self._data[i]


class ArrayDataset(Dataset):
    """Samples are rows of several arrays of one length: item i is (a[i], b[i], ...), or a[i]
    for one array. 1-D NDArrays are kept as NumPy, so their items are scalars (as MXNet)."""

    def __init__(self, *args):
        if not args:
            raise ValueError("ArrayDataset needs at least one array")
        self._length = len(args[0])
        self._data = []
        for i, data in enumerate(args):
            if len(data) != self._length:
                raise ValueError(
                    f"All arrays must have the same length; array[0] has length "
                    f"{self._length} while array[{i}] has {len(data)}."
                )
            if isinstance(data, NDArray) and data.ndim == 1:
                data = data.asnumpy()
            self._data.append(data)

    def __len__(self):
        return self._length

    def __getitem__(self, i):
        if len(self._data) == 1:
            return self._data[0][i]
        return tuple(data[i] for data in self._data)


def default_batchify_fn(data):
    """Stack a list of samples into a batch (see the module docstring)."""
    first = data[0]
    if isinstance(first, NDArray):
        return apply(lambda *ts: stack(list(ts), 0), *data)
    if isinstance(first, tuple):
        return [default_batchify_fn(list(field)) for field in zip(*data, strict=True)]
    values = np.asarray(data)
    return nd.array(values, dtype=values.dtype)


class DataLoader:
    """Batches of `batch_size` from `dataset`, shuffled each epoch with `shuffle`;
    `last_batch` is 'keep' (default) or 'discard'."""

    def __init__(self, dataset, batch_size=None, shuffle=False, sampler=None, last_batch=None,
                 batch_sampler=None, batchify_fn=None, num_workers=0, pin_memory=False,
                 prefetch=None, thread_pool=False, timeout=120):
        last_batch = "keep" if last_batch is None else last_batch
        if last_batch not in ("keep", "discard"):
            raise ValueError(
                f"DataLoader: last_batch={last_batch!r} is not supported by kit.mx ('rollover' "
                f"is not); use 'keep' or 'discard'"
            )
        if batch_sampler is None and batch_size is None:
            raise ValueError("batch_size must be specified unless batch_sampler is specified")
        self._loader = kit_data.DataLoader(
            dataset, batch_size=batch_size if batch_sampler is None else 1, shuffle=shuffle,
            sampler=sampler, batch_sampler=batch_sampler,
            collate_fn=batchify_fn or default_batchify_fn, num_workers=num_workers,
            drop_last=last_batch == "discard",
        )

    def __iter__(self):
        return iter(self._loader)

    def __len__(self):
        return len(self._loader)
