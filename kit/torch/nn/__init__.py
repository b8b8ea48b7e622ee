"""`torch.nn`, thin: only `torch.nn.functional` (kit has no modules or optimisers yet).

>>> import kit.torch as torch
>>> torch.nn.functional.softmax(torch.tensor([0.0, 0.0]), dim=0)
tensor([0.5000, 0.5000])
"""

from kit.torch.nn import functional

__all__ = ["functional"]
