"""`torch.optim`: kit's optimisers (kit.optim) under PyTorch's names.

>>> import kit.torch as torch
>>> model = torch.nn.Linear(2, 1)
>>> opt = torch.optim.Adam(model.parameters(), lr=1e-2)
>>> type(opt).__name__, len(opt.param_groups[0]["params"])
('Adam', 2)
"""

from kit.optim import SGD, Adam, AdamW, Optimizer, RMSprop
from kit.torch.optim import lr_scheduler

__all__ = ["SGD", "Adam", "AdamW", "Optimizer", "RMSprop", "lr_scheduler"]
