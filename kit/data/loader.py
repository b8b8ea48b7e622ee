"""`DataLoader`: batches from a dataset, optionally shuffled by a seedable `Generator`.

Loading always runs in the calling process: `num_workers` and `pin_memory` are accepted, so
code written for PyTorch runs unchanged, and give the same batches in the same order as
PyTorch's worker processes would (kit has no worker processes and no pinned memory; lessons are
small, and one process keeps errors at the user's line).

>>> import kit
>>> from kit.data import DataLoader, Generator, TensorDataset
>>> ds = TensorDataset(kit.arange(6))
>>> g = Generator().manual_seed(0)
>>> sorted(i for (batch,) in DataLoader(ds, batch_size=4, shuffle=True, generator=g)
...        for i in batch.tolist())
[0, 1, 2, 3, 4, 5]
"""

from __future__ import annotations

import numpy as np

from kit._creation import _Random
from kit.data.collate import default_collate


class Generator:
    """A random-number generator with its own state, seeded by `manual_seed` (NumPy's PCG64:
    the same seed gives the same stream in kit, not the one PyTorch's generator gives)."""

    def __init__(self, device="cpu"):
        self.device = device
        self._seed = 67280421310721  # PyTorch's default seed, for initial_seed()
        self.rng = np.random.default_rng(self._seed)

    def manual_seed(self, seed):
        self._seed = int(seed)
        self.rng = np.random.default_rng(self._seed)
        return self

    def initial_seed(self):
        return self._seed

    def seed(self):
        self.manual_seed(int(np.random.SeedSequence().entropy % 2**63))
        return self._seed


class DataLoader:
    """Iterates over `dataset` in batches of `batch_size` (shuffled each epoch if `shuffle`)."""

    def __init__(self, dataset, batch_size=1, shuffle=False, sampler=None, batch_sampler=None,
                 num_workers=0, collate_fn=None, pin_memory=False, drop_last=False,
                 generator=None):
        if not isinstance(num_workers, int) or num_workers < 0:
            raise ValueError(
                "num_workers option should be non-negative; use num_workers=0 to disable "
                "multiprocessing."
            )
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None and (batch_size != 1 or shuffle or sampler or drop_last):
            raise ValueError(
                "batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, "
                "and drop_last"
            )
        if batch_size is not None and (not isinstance(batch_size, int) or batch_size <= 0):
            raise ValueError(
                f"batch_size should be a positive integer value, but got batch_size={batch_size}"
            )
        self.dataset = dataset
        self.batch_size = batch_size
        self.shuffle = shuffle
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.drop_last = drop_last
        self.generator = generator
        self.num_workers = num_workers  # loading stays in this process (see the module note)
        self.pin_memory = pin_memory
        self.collate_fn = collate_fn if collate_fn is not None else (
            default_collate if batch_size is not None or batch_sampler is not None
            else _no_collate
        )

    def _indices(self):
        if self.sampler is not None:
            return iter(self.sampler)
        n = len(self.dataset)
        if not self.shuffle:
            return iter(range(n))
        rng = self.generator.rng if self.generator is not None else _Random.generator
        return iter(rng.permutation(n).tolist())

    def _batches(self):
        if self.batch_sampler is not None:
            yield from self.batch_sampler
            return
        batch = []
        for i in self._indices():
            batch.append(i)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __iter__(self):
        if self.batch_size is None and self.batch_sampler is None:
            for i in self._indices():
                yield self.collate_fn(self.dataset[i])
            return
        for batch in self._batches():
            yield self.collate_fn([self.dataset[i] for i in batch])

    def __len__(self):
        if self.batch_sampler is not None:
            return len(self.batch_sampler)
        n = len(self.sampler) if self.sampler is not None else len(self.dataset)
        if self.batch_size is None:
            return n
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)


def _no_collate(sample):
    return sample
