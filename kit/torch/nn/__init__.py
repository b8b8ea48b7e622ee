"""`torch.nn`: kit's module layer (kit.nn) under PyTorch's names, plus `torch.nn.functional`.

>>> import kit.torch as torch
>>> torch.nn.functional.softmax(torch.tensor([0.0, 0.0]), dim=0)
tensor([0.5000, 0.5000])
>>> torch.nn.Linear(2, 3)
Linear(in_features=2, out_features=3, bias=True)
"""

from kit.nn import (
    GELU,
    AvgPool2d,
    BatchNorm1d,
    BatchNorm2d,
    BCELoss,
    BCEWithLogitsLoss,
    Conv2d,
    CrossEntropyLoss,
    Dropout,
    Embedding,
    Flatten,
    Identity,
    LayerNorm,
    LazyLinear,
    LeakyReLU,
    Linear,
    LogSoftmax,
    MaxPool2d,
    Module,
    ModuleDict,
    ModuleList,
    MSELoss,
    NLLLoss,
    Parameter,
    ReLU,
    Sequential,
    Sigmoid,
    SiLU,
    Softmax,
    Softplus,
    Tanh,
    init,
    utils,
)
from kit.torch.nn import functional

__all__ = [
    "AvgPool2d", "BCELoss", "BCEWithLogitsLoss", "BatchNorm1d", "BatchNorm2d", "Conv2d",
    "CrossEntropyLoss", "Dropout", "Embedding", "Flatten", "GELU", "Identity", "LayerNorm",
    "LazyLinear", "LeakyReLU", "Linear", "LogSoftmax", "MSELoss", "MaxPool2d", "Module",
    "ModuleDict", "ModuleList", "NLLLoss", "Parameter", "ReLU", "Sequential", "SiLU", "Sigmoid",
    "Softmax", "Softplus", "Tanh", "functional", "init", "utils",
]
from kit.nn import (  # noqa: E402 - the ELU family, hard activations, L1/Huber/KL losses
    CELU,
    ELU,
    GLU,
    SELU,
    Hardsigmoid,
    Hardswish,
    Hardtanh,
    HuberLoss,
    KLDivLoss,
    L1Loss,
    LogSigmoid,
    Mish,
    ReLU6,
    SmoothL1Loss,
    Softmin,
    Softsign,
    Tanhshrink,
)

__all__ += ["CELU", "ELU", "GLU", "HuberLoss", "Hardsigmoid", "Hardswish", "Hardtanh",
            "KLDivLoss", "L1Loss", "LogSigmoid", "Mish", "ReLU6", "SELU", "SmoothL1Loss",
            "Softmin", "Softsign", "Tanhshrink"]
from kit.nn import (  # noqa: E402 - thresholds, norms, pools, losses, attention
    AdaptiveAvgPool1d,
    AdaptiveAvgPool2d,
    AvgPool1d,
    Conv1d,
    CosineEmbeddingLoss,
    CosineSimilarity,
    GaussianNLLLoss,
    GroupNorm,
    Hardshrink,
    HingeEmbeddingLoss,
    InstanceNorm1d,
    InstanceNorm2d,
    MarginRankingLoss,
    MaxPool1d,
    MultiheadAttention,
    MultiLabelSoftMarginLoss,
    MultiMarginLoss,
    PairwiseDistance,
    ParameterDict,
    ParameterList,
    PoissonNLLLoss,
    PReLU,
    RMSNorm,
    SoftMarginLoss,
    Softshrink,
    Threshold,
    TripletMarginLoss,
    Unflatten,
)

__all__ += ["AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AvgPool1d", "Conv1d",
            "CosineEmbeddingLoss", "CosineSimilarity", "GaussianNLLLoss", "GroupNorm",
            "Hardshrink", "HingeEmbeddingLoss", "MarginRankingLoss", "MaxPool1d",
            "MultiLabelSoftMarginLoss", "MultiMarginLoss", "MultiheadAttention", "PReLU",
            "PairwiseDistance", "ParameterDict", "ParameterList", "PoissonNLLLoss", "RMSNorm",
            "SoftMarginLoss", "Softshrink", "Threshold", "TripletMarginLoss", "Unflatten",
            "InstanceNorm1d", "InstanceNorm2d"]
