"""`torch.utils`: `torch.utils.data` (kit.data under PyTorch's names) and
`torch.utils.checkpoint` (kit/checkpoint.py)."""

from kit.torch.utils import checkpoint, data

__all__ = ["checkpoint", "data"]
