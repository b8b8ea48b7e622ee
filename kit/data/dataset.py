"""Map-style datasets: anything with `__getitem__(i)` and `__len__`.

>>> import kit
>>> from kit.data import TensorDataset
>>> ds = TensorDataset(kit.ones(3, 2), kit.zeros(3))
>>> len(ds), [t.shape for t in ds[0]]
(3, [(2,), ()])
"""

from __future__ import annotations

import math

from kit._tensor import Tensor


class Dataset:
    """Base class of map-style datasets: subclass it and define __getitem__ and __len__."""

    def __getitem__(self, index):
        raise NotImplementedError(
            f"{type(self).__name__} must define __getitem__(self, index) (and __len__)"
        )

    def __add__(self, other):
        return ConcatDataset([self, other])


class TensorDataset(Dataset):
    """Samples are rows: item i is (t[i] for each tensor), all tensors of one length."""

    def __init__(self, *tensors):
        if not tensors:
            raise ValueError("TensorDataset needs at least one tensor")
        for t in tensors:
            if not isinstance(t, Tensor):
                raise TypeError(
                    f"TensorDataset takes tensors, got {type(t).__name__}. Fix: kit.tensor(data)"
                )
        sizes = [t.shape[0] if t.ndim else None for t in tensors]
        if None in sizes or len(set(sizes)) != 1:
            raise ValueError(
                f"Size mismatch between tensors: TensorDataset needs tensors of one length "
                f"(dim 0), got shapes {[tuple(t.shape) for t in tensors]}"
            )
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    def __len__(self):
        return self.tensors[0].shape[0]


class Subset(Dataset):
    """The items of `dataset` at `indices`, in that order."""

    def __init__(self, dataset, indices):
        self.dataset = dataset
        self.indices = list(indices)

    def __getitem__(self, index):
        return self.dataset[self.indices[index]]

    def __len__(self):
        return len(self.indices)


def random_split(dataset, lengths, generator=None):
    """Split `dataset` into non-overlapping Subsets of the given lengths (or fractions summing
    to 1, the remainder dealt out one by one from the first), in a random order."""
    from kit._creation import _Random

    n = len(dataset)
    lengths = list(lengths)
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        sizes = [int(math.floor(n * frac)) for frac in lengths]
        for i in range(n - sum(sizes)):
            sizes[i % len(sizes)] += 1
        lengths = sizes
    if sum(lengths) != n:
        raise ValueError(
            "Sum of input lengths does not equal the length of the input dataset!"
        )
    rng = generator.rng if generator is not None else _Random.generator
    order = rng.permutation(n).tolist()
    out, start = [], 0
    for length in lengths:
        out.append(Subset(dataset, order[start:start + length]))
        start += length
    return out


class ConcatDataset(Dataset):
    """Several datasets one after another (what `a + b` gives)."""

    def __init__(self, datasets):
        self.datasets = list(datasets)

    def __len__(self):
        return sum(len(d) for d in self.datasets)

    def __getitem__(self, index):
        if index < 0:
            index += len(self)
        for dataset in self.datasets:
            if index < len(dataset):
                return dataset[index]
            index -= len(dataset)
        raise IndexError("ConcatDataset index out of range")
