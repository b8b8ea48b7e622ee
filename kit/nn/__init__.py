"""kit's module layer, written once: Module, Parameter, layers, losses, init and utils.

`kit.torch.nn` spells it as torch.nn (it is these classes); a gluon front end can build its Block
on the same registration and state-dict code.

>>> import kit
>>> from kit import nn
>>> net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
>>> net(kit.ones(3, 4)).shape
(3, 2)
"""

from kit.nn import functional, init, utils
from kit.nn.activations import (
    CELU,
    ELU,
    GLU,
    SELU,
    Hardsigmoid,
    Hardswish,
    Hardtanh,
    LogSigmoid,
    Mish,
    ReLU6,
    Softmin,
    Softsign,
    Tanhshrink,
)
from kit.nn.containers import ModuleDict, ModuleList, Sequential
from kit.nn.conv import AvgPool2d, Conv2d, MaxPool2d
from kit.nn.layers import (
    GELU,
    Dropout,
    Embedding,
    Flatten,
    Identity,
    LazyLinear,
    LeakyReLU,
    Linear,
    LogSoftmax,
    ReLU,
    Sigmoid,
    SiLU,
    Softmax,
    Softplus,
    Tanh,
)
from kit.nn.loss import (
    BCELoss,
    BCEWithLogitsLoss,
    CrossEntropyLoss,
    HuberLoss,
    KLDivLoss,
    L1Loss,
    MSELoss,
    NLLLoss,
    SmoothL1Loss,
)
from kit.nn.module import Module
from kit.nn.normalization import BatchNorm1d, BatchNorm2d, LayerNorm
from kit.nn.parameter import Parameter

__all__ = [
    "AvgPool2d", "BCELoss", "BCEWithLogitsLoss", "BatchNorm1d", "BatchNorm2d", "Conv2d",
    "CrossEntropyLoss", "Dropout", "Embedding", "Flatten", "GELU", "Identity", "LayerNorm",
    "LazyLinear", "LeakyReLU", "Linear", "LogSoftmax", "MSELoss", "MaxPool2d", "Module",
    "ModuleDict", "ModuleList", "NLLLoss", "Parameter", "ReLU", "Sequential", "SiLU", "Sigmoid",
    "Softmax", "Softplus", "Tanh", "functional", "init", "utils",
]
__all__ += ["CELU", "ELU", "GLU", "HuberLoss", "Hardsigmoid", "Hardswish", "Hardtanh",
            "KLDivLoss", "L1Loss", "LogSigmoid", "Mish", "ReLU6", "SELU", "SmoothL1Loss",
            "Softmin", "Softsign", "Tanhshrink"]

# issue: torch.nn API that real programs stop on (thresholds, norms, pools, losses, attention)
from kit.nn.activations import (  # noqa: E402
    Hardshrink,
    PReLU,
    Softshrink,
    Threshold,
)
from kit.nn.containers import (  # noqa: E402
    ParameterDict,
    ParameterList,
)
from kit.nn.conv import (  # noqa: E402
    AdaptiveAvgPool1d,
    AdaptiveAvgPool2d,
    AvgPool1d,
    Conv1d,
    MaxPool1d,
)
from kit.nn.distance import (  # noqa: E402
    CosineSimilarity,
    PairwiseDistance,
)
from kit.nn.layers import (  # noqa: E402
    Unflatten,
)
from kit.nn.loss import (  # noqa: E402
    CosineEmbeddingLoss,
    GaussianNLLLoss,
    HingeEmbeddingLoss,
    MarginRankingLoss,
    MultiLabelSoftMarginLoss,
    MultiMarginLoss,
    PoissonNLLLoss,
    SoftMarginLoss,
    TripletMarginLoss,
)
from kit.nn.multihead_attention import (  # noqa: E402
    MultiheadAttention,
)
from kit.nn.normalization import (  # noqa: E402
    GroupNorm,
    InstanceNorm1d,
    InstanceNorm2d,
    RMSNorm,
)

__all__ += ["AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AvgPool1d", "Conv1d",
            "CosineEmbeddingLoss", "CosineSimilarity", "GaussianNLLLoss", "GroupNorm",
            "Hardshrink", "HingeEmbeddingLoss", "MarginRankingLoss", "MaxPool1d",
            "MultiLabelSoftMarginLoss", "MultiMarginLoss", "MultiheadAttention", "PReLU",
            "PairwiseDistance", "ParameterDict", "ParameterList", "PoissonNLLLoss", "RMSNorm",
            "SoftMarginLoss", "Softshrink", "Threshold", "TripletMarginLoss", "Unflatten",
            "InstanceNorm1d", "InstanceNorm2d"]
