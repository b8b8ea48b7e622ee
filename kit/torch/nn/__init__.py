"""`torch.nn`: kit's module layer (kit.nn) under PyTorch's names, plus `torch.nn.functional`.

Every name kit.nn publishes is published here too (these are its classes, not copies); only
`functional` is kit.torch's own (kit/torch/nn/functional.py).

>>> import kit.torch as torch
>>> torch.nn.functional.softmax(torch.tensor([0.0, 0.0]), dim=0)
tensor([0.5000, 0.5000])
>>> torch.nn.Linear(2, 3)
Linear(in_features=2, out_features=3, bias=True)
"""

from importlib import import_module

from kit import nn as _nn
from kit.nn import *  # noqa: F403 - kit.nn's names, as listed in its __all__

# NOTE: imported by name: the star import above bound `functional` to kit.nn's, which a plain
# `from kit.torch.nn import functional` would return
functional = import_module("kit.torch.nn.functional")
__all__ = list(_nn.__all__)
