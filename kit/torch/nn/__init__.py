"""`torch.nn`: kit's module layer (kit.nn) under PyTorch's names, plus `torch.nn.functional`.

>>> import kit.torch as torch
>>> torch.nn.functional.softmax(torch.tensor([0.0, 0.0]), dim=0)
tensor([0.5000, 0.5000])
>>> torch.nn.Linear(2, 3)
Linear(in_features=2, out_features=3, bias=True)
"""

from kit.nn import (
    GELU,
    BatchNorm1d,
    BatchNorm2d,
    BCELoss,
    BCEWithLogitsLoss,
    CrossEntropyLoss,
    Dropout,
    Embedding,
    Flatten,
    Identity,
    LayerNorm,
    Linear,
    Module,
    ModuleDict,
    ModuleList,
    MSELoss,
    NLLLoss,
    Parameter,
    ReLU,
    Sequential,
    Sigmoid,
    Softmax,
    Softplus,
    Tanh,
    init,
    utils,
)
from kit.torch.nn import functional

__all__ = [
    "BCELoss", "BCEWithLogitsLoss", "BatchNorm1d", "BatchNorm2d", "CrossEntropyLoss", "Dropout",
    "Embedding", "Flatten", "GELU", "Identity", "LayerNorm", "Linear", "MSELoss", "Module",
    "ModuleDict", "ModuleList", "NLLLoss", "Parameter", "ReLU", "Sequential", "Sigmoid",
    "Softmax", "Softplus", "Tanh", "functional", "init", "utils",
]
