"""gluon.nn's parametrised activations: LeakyReLU, PReLU (a learned slope), ELU, SELU, Swish,
GELU, as composites of kit primitives.

>>> import kit.mx as mx
>>> from kit.mx.gluon import nn
>>> nn.LeakyReLU(0.1)(mx.nd.array([-2.0, 3.0])).asnumpy()
array([-0.2,  3. ], dtype=float32)
"""

from __future__ import annotations

from kit.mx import init as mx_init
from kit.mx.gluon.block import HybridBlock
from kit.mx.gluon.nn.basic_layers import apply
from kit.nn import functional
from kit.ops import elementwise

__all__ = ["ELU", "GELU", "PReLU", "SELU", "LeakyReLU", "Swish"]


def _leaky(x, slope):
    return elementwise.where(x > 0, x, x * slope)


class LeakyReLU(HybridBlock):
    """x for x > 0, alpha * x otherwise."""

    def __init__(self, alpha, **kwargs):
        if alpha < 0:
            raise ValueError(f"LeakyReLU: slope coefficient must be >= 0, got {alpha}")
        super().__init__(**kwargs)
        self._alpha = alpha

    def hybrid_forward(self, F, x):  # noqa: N803
        return apply(_leaky, x, slope=self._alpha)

    def __repr__(self):
        return f"LeakyReLU({self._alpha})"


class PReLU(HybridBlock):
    """LeakyReLU with a learned slope `alpha` (one per channel of axis 1, or one shared)."""

    def __init__(self, alpha_initializer=None, in_channels=1, **kwargs):
        super().__init__(**kwargs)
        init = mx_init.Constant(0.25) if alpha_initializer is None else alpha_initializer
        with self.name_scope():
            self.alpha = self.params.get("alpha", shape=(in_channels,), init=init)

    def hybrid_forward(self, F, x, alpha):  # noqa: N803
        def compute(x, alpha):
            shape = (1, -1) + (1,) * (x.ndim - 2) if alpha.shape[0] > 1 else (1,) * x.ndim
            return _leaky(x, alpha.reshape(shape))

        return apply(compute, x, alpha)


class ELU(HybridBlock):
    """x for x > 0, alpha * (exp(x) - 1) otherwise."""

    def __init__(self, alpha=1.0, **kwargs):
        super().__init__(**kwargs)
        self._alpha = alpha

    def hybrid_forward(self, F, x):  # noqa: N803
        return apply(lambda t: elementwise.where(t > 0, t, (t.clamp(max=0).exp() - 1)
                                                 * self._alpha), x)


class SELU(HybridBlock):
    """Scaled ELU with the self-normalising constants."""

    ALPHA, SCALE = 1.6732632423543772, 1.0507009873554805

    def hybrid_forward(self, F, x):  # noqa: N803
        return apply(lambda t: elementwise.where(t > 0, t, (t.clamp(max=0).exp() - 1)
                                                 * self.ALPHA) * self.SCALE, x)


class Swish(HybridBlock):
    """x * sigmoid(beta * x)."""

    def __init__(self, beta=1.0, **kwargs):
        super().__init__(**kwargs)
        self._beta = beta

    def hybrid_forward(self, F, x):  # noqa: N803
        return apply(lambda t: t * functional.sigmoid(t * self._beta), x)


class GELU(HybridBlock):
    """x * Phi(x), Phi the standard normal CDF (the exact form, as MXNet's)."""

    def hybrid_forward(self, F, x):  # noqa: N803
        return apply(functional.gelu, x)
