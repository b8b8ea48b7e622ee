"""`mx.gluon`: MXNet 1.x's imperative API on kit's engine: Block/HybridBlock, Parameter,
ParameterDict, the layers (`gluon.nn`), losses (`gluon.loss`), `Trainer` and `gluon.data`.

The maths is kit's module layer: layers call kit.nn.functional, the Trainer's optimisers call
kit/optim/maths.py, DataLoader is kit.data's. Training reads as in MXNet:

>>> import kit.mx as mx
>>> from kit.mx import autograd, gluon
>>> net = gluon.nn.Dense(1, in_units=2); net.initialize(mx.init.Zero())
>>> trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
>>> x, y = mx.nd.ones((4, 2)), mx.nd.ones((4, 1))
>>> with autograd.record():
...     loss = gluon.loss.L2Loss()(net(x), y)
>>> loss.backward(); trainer.step(4); net.bias.data().asnumpy()
array([0.1], dtype=float32)
"""

from kit.mx.gluon import data, loss, nn, utils
from kit.mx.gluon.block import Block, HybridBlock
from kit.mx.gluon.parameter import Constant, DeferredInitializationError, Parameter
from kit.mx.gluon.parameter_dict import ParameterDict
from kit.mx.gluon.trainer import Trainer

__all__ = [
    "Block", "Constant", "DeferredInitializationError", "HybridBlock", "Parameter",
    "ParameterDict", "Trainer", "data", "loss", "nn", "utils",
]
