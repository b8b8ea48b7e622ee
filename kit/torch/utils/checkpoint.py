"""`torch.utils.checkpoint`: activation checkpointing (kit/checkpoint.py) under PyTorch's names.

>>> import kit.torch as torch
>>> from kit.torch.utils.checkpoint import checkpoint
>>> x = torch.tensor([1.0, 2.0], requires_grad=True)
>>> checkpoint(lambda h: h.sin().exp(), x, use_reentrant=False).sum().backward()
>>> x.grad
tensor([ 1.2534, -1.0331])
"""

from kit.checkpoint import CheckpointError, checkpoint, checkpoint_sequential

__all__ = ["CheckpointError", "checkpoint", "checkpoint_sequential"]
