"""`torch.utils.data`: kit's datasets and DataLoader (kit.data) under PyTorch's names.

>>> import kit.torch as torch
>>> from kit.torch.utils.data import DataLoader, TensorDataset
>>> len(DataLoader(TensorDataset(torch.zeros(10, 2)), batch_size=4, drop_last=True))
2
"""

from kit.data import (
    ConcatDataset,
    DataLoader,
    Dataset,
    Subset,
    TensorDataset,
    default_collate,
    random_split,
)

__all__ = [
    "ConcatDataset", "DataLoader", "Dataset", "Subset", "TensorDataset", "default_collate",
    "random_split",
]
