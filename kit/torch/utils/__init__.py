"""`torch.utils`: only `torch.utils.data` (kit.data under PyTorch's names)."""

from kit.torch.utils import data

__all__ = ["data"]
