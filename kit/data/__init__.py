"""Datasets and batching, written once: Dataset, TensorDataset, DataLoader, default_collate and
a seedable Generator. `kit.torch.utils.data` spells it as torch.utils.data.

>>> import kit
>>> from kit.data import DataLoader, TensorDataset
>>> data = TensorDataset(kit.arange(5.0), kit.arange(5))
>>> [y.tolist() for _, y in DataLoader(data, batch_size=2)]
[[0, 1], [2, 3], [4]]
"""

from kit.data.collate import default_collate
from kit.data.dataset import ConcatDataset, Dataset, Subset, TensorDataset, random_split
from kit.data.loader import DataLoader, Generator

__all__ = [
    "ConcatDataset", "DataLoader", "Dataset", "Generator", "Subset", "TensorDataset",
    "default_collate", "random_split",
]
