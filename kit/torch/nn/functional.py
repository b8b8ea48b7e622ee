"""`torch.nn.functional`, all composites of kit primitives (no gradient code here).

>>> import kit.torch as torch
>>> import kit.torch.nn.functional as F
>>> F.relu(torch.tensor([-1.0, 0.0, 2.0]))
tensor([0., 0., 2.])
"""

from kit.nn.functional import (  # issue 12's missing ops
    avg_pool1d,
    avg_pool2d,
    batch_norm,
    binary_cross_entropy,
    binary_cross_entropy_with_logits,
    conv1d,
    conv2d,
    cosine_similarity,
    cross_entropy,
    dropout,
    embedding,
    gelu,
    interpolate,
    layer_norm,
    leaky_relu,
    linear,
    log_softmax,
    max_pool1d,
    max_pool2d,
    mse_loss,
    nll_loss,
    normalize,
    one_hot,
    pad,
    pairwise_distance,
    relu,
    sigmoid,
    silu,
    softmax,
    softplus,
    tanh,
)

__all__ = [
    "avg_pool2d", "batch_norm", "binary_cross_entropy", "binary_cross_entropy_with_logits",
    "conv2d", "cross_entropy", "dropout", "embedding", "gelu", "layer_norm", "leaky_relu",
    "linear", "log_softmax", "max_pool2d", "mse_loss", "nll_loss", "relu", "sigmoid", "silu",
    "softmax", "softplus", "tanh",
]
__all__ += ["avg_pool1d", "conv1d", "cosine_similarity", "interpolate", "max_pool1d",
            "normalize", "one_hot", "pad", "pairwise_distance"]  # issue 12
from kit.nn.functional_more import *  # noqa: E402, F403 - the ELU family, hard activations, losses
from kit.nn.functional_more import __all__ as _more  # noqa: E402

__all__ += _more
# thresholds, in-place spellings, norms, adaptive pools, margin losses, attention
from kit.nn import attention as _attention  # noqa: E402, I001
from kit.nn import functional_losses as _losses  # noqa: E402
from kit.nn import functional_norm_pool as _norm_pool  # noqa: E402
from kit.nn import functional_thresholds as _thresholds  # noqa: E402
from kit.nn.attention import *  # noqa: E402, F403
from kit.nn.functional import instance_norm, leaky_relu_  # noqa: E402, F401 - listed below
from kit.nn.functional_losses import *  # noqa: E402, F403
from kit.nn.functional_norm_pool import *  # noqa: E402, F403
from kit.nn.functional_thresholds import *  # noqa: E402, F403

__all__ += ["instance_norm", "leaky_relu_", *_attention.__all__, *_losses.__all__,
            *_norm_pool.__all__, *_thresholds.__all__]
