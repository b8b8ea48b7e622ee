"""kit's optimisers, written once: the maths on tensors (`kit.optim.maths`), the torch.optim-
shaped classes over it, and learning-rate schedules. `kit.torch.optim` spells it as torch.optim.

>>> import kit
>>> from kit import nn, optim
>>> model = nn.Linear(2, 1)
>>> opt = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
>>> model(kit.ones(4, 2)).sum().backward()
>>> opt.step()
>>> opt.zero_grad()
>>> model.weight.grad is None
True
"""

from kit.optim import lr_scheduler, maths
from kit.optim.algorithms import SGD, Adam, AdamW, RMSprop
from kit.optim.optimizer import Optimizer

__all__ = ["SGD", "Adam", "AdamW", "Optimizer", "RMSprop", "lr_scheduler", "maths"]
