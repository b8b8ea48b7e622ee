"""`torch.nn.functional` basics, all composites of kit primitives (no gradient code here).

>>> import kit.torch as torch
>>> import kit.torch.nn.functional as F
>>> F.relu(torch.tensor([-1.0, 0.0, 2.0]))
tensor([0., 0., 2.])
"""

from kit.ops.composite import cross_entropy, log_softmax, mse_loss, relu, softmax
from kit.ops.elementwise import sigmoid, tanh

__all__ = ["cross_entropy", "log_softmax", "mse_loss", "relu", "sigmoid", "softmax", "tanh"]
