"""`torch.serialization`: kit's save/load (kit.serialization) under PyTorch's names."""

from kit.serialization import add_safe_globals, get_safe_globals, load, save

__all__ = ["add_safe_globals", "get_safe_globals", "load", "save"]
