"""`gluon.nn`: the layers, as MXNet 1.x's gluon.nn spells them.

>>> import kit.mx as mx
>>> from kit.mx.gluon import nn
>>> net = nn.HybridSequential()
>>> net.add(nn.Dense(8, activation="tanh"), nn.Dense(3)); net.initialize(mx.init.Xavier())
>>> net.hybridize(); net(mx.nd.ones((2, 4))).shape
(2, 3)
"""

from kit.mx.gluon.block import Block, HybridBlock
from kit.mx.gluon.nn.activations import ELU, GELU, SELU, LeakyReLU, PReLU, Swish
from kit.mx.gluon.nn.basic_layers import (
    Activation,
    BatchNorm,
    Dense,
    Dropout,
    Embedding,
    Flatten,
    HybridLambda,
    HybridSequential,
    Lambda,
    LayerNorm,
    Sequential,
)
from kit.mx.gluon.nn.conv_layers import AvgPool2D, Conv2D, GlobalAvgPool2D, MaxPool2D

__all__ = [
    "Activation", "AvgPool2D", "BatchNorm", "Block", "Conv2D", "Dense", "Dropout", "ELU",
    "Embedding", "Flatten", "GELU", "GlobalAvgPool2D", "HybridBlock", "HybridLambda",
    "HybridSequential", "Lambda", "LayerNorm", "LeakyReLU", "MaxPool2D", "PReLU", "SELU",
    "Sequential", "Swish",
]
