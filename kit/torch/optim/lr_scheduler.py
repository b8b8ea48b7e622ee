"""`torch.optim.lr_scheduler`: kit's schedules (kit.optim.lr_scheduler) under PyTorch's names."""

from kit.optim.lr_scheduler import (
    CosineAnnealingLR,
    ExponentialLR,
    LambdaLR,
    LRScheduler,
    MultiStepLR,
    ReduceLROnPlateau,
    StepLR,
)

__all__ = [
    "CosineAnnealingLR", "ExponentialLR", "LRScheduler", "LambdaLR", "MultiStepLR",
    "ReduceLROnPlateau", "StepLR",
]
