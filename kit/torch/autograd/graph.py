"""`torch.autograd.graph`: saved-tensor hooks (kit/saved_tensors.py) under PyTorch's names.

>>> import kit.torch as torch
>>> x = torch.tensor([1.0, 2.0], requires_grad=True)
>>> with torch.autograd.graph.save_on_cpu():
...     y = (x * x).sum()
>>> y.backward(); x.grad
tensor([2., 4.])
"""

from kit.saved_tensors import save_on_cpu, saved_tensors_hooks

__all__ = ["save_on_cpu", "saved_tensors_hooks"]
