"""Module forms of kit/nn/functional_more.py's and functional_thresholds.py's activations
(torch.nn's ELU, SELU, CELU, Hardtanh, ReLU6, Softsign, Mish, Hardswish, Hardsigmoid, LogSigmoid,
Tanhshrink, Softmin, GLU, Softshrink, Hardshrink, Threshold, PReLU), printed as PyTorch prints
them.

>>> import kit
>>> from kit import nn
>>> nn.ELU(alpha=0.5)
ELU(alpha=0.5)
"""

from __future__ import annotations

from kit._creation import full
from kit.nn import functional as F  # noqa: N812 - the name PyTorch code uses
from kit.nn import init
from kit.nn.module import Module
from kit.nn.parameter import Parameter


class _Activation(Module):
    """An activation with options: `_fields` are shown in the repr, PyTorch's order; `inplace`
    is added when set."""

    _fields = ()

    def __init__(self, **options):
        super().__init__()
        for name, value in options.items():
            setattr(self, name, value)

    def extra_repr(self):
        shown = [f"{name}={getattr(self, name)}" for name in self._fields]
        if getattr(self, "inplace", False):
            shown.append("inplace=True")
        return ", ".join(shown)


class ELU(_Activation):
    """x where x > 0, else alpha * (exp(x) - 1)."""

    _fields = ("alpha",)

    def __init__(self, alpha=1.0, inplace=False):
        super().__init__(alpha=alpha, inplace=inplace)

    def forward(self, input):  # noqa: A002
        return F.elu(input, self.alpha, self.inplace)


class SELU(_Activation):
    """scale * elu(x, alpha), the self-normalising constants."""

    def __init__(self, inplace=False):
        super().__init__(inplace=inplace)

    def forward(self, input):  # noqa: A002
        return F.selu(input, self.inplace)


class CELU(_Activation):
    """x where x > 0, else alpha * (exp(x / alpha) - 1)."""

    _fields = ("alpha",)

    def __init__(self, alpha=1.0, inplace=False):
        super().__init__(alpha=alpha, inplace=inplace)

    def forward(self, input):  # noqa: A002
        return F.celu(input, self.alpha, self.inplace)


class Hardtanh(_Activation):
    """x clamped to [min_val, max_val]."""

    _fields = ("min_val", "max_val")

    def __init__(self, min_val=-1.0, max_val=1.0, inplace=False):
        super().__init__(min_val=min_val, max_val=max_val, inplace=inplace)

    def forward(self, input):  # noqa: A002
        return F.hardtanh(input, self.min_val, self.max_val, self.inplace)


class ReLU6(_Activation):
    """min(max(x, 0), 6)."""

    def __init__(self, inplace=False):
        super().__init__(inplace=inplace)

    def forward(self, input):  # noqa: A002
        return F.relu6(input, self.inplace)


class Mish(_Activation):
    """x * tanh(softplus(x))."""

    def __init__(self, inplace=False):
        super().__init__(inplace=inplace)

    def forward(self, input):  # noqa: A002
        return F.mish(input, self.inplace)


class Hardswish(_Activation):
    """x * relu6(x + 3) / 6."""

    def __init__(self, inplace=False):
        super().__init__(inplace=inplace)

    def forward(self, input):  # noqa: A002
        return F.hardswish(input, self.inplace)


class Hardsigmoid(_Activation):
    """relu6(x + 3) / 6."""

    def __init__(self, inplace=False):
        super().__init__(inplace=inplace)

    def forward(self, input):  # noqa: A002
        return F.hardsigmoid(input, self.inplace)


class Softsign(_Activation):
    """x / (1 + |x|)."""

    def forward(self, input):  # noqa: A002
        return F.softsign(input)


class LogSigmoid(_Activation):
    """log(sigmoid(x))."""

    def forward(self, input):  # noqa: A002
        return F.logsigmoid(input)


class Tanhshrink(_Activation):
    """x - tanh(x)."""

    def forward(self, input):  # noqa: A002
        return F.tanhshrink(input)


class Softmin(_Activation):
    """softmax(-x) along `dim`."""

    _fields = ("dim",)

    def __init__(self, dim=None):
        super().__init__(dim=dim)

    def forward(self, input):  # noqa: A002
        return F.softmin(input, self.dim)


class GLU(_Activation):
    """a * sigmoid(b), the halves of the input along `dim`."""

    _fields = ("dim",)

    def __init__(self, dim=-1):
        super().__init__(dim=dim)

    def forward(self, input):  # noqa: A002
        return F.glu(input, self.dim)


class Softshrink(_Activation):
    """x - lambd above lambd, x + lambd below -lambd, 0 between."""

    def __init__(self, lambd=0.5):
        super().__init__(lambd=lambd)

    def forward(self, input):  # noqa: A002
        return F.softshrink(input, self.lambd)

    def extra_repr(self):
        return str(self.lambd)


class Hardshrink(Softshrink):
    """x outside [-lambd, lambd], 0 inside."""

    def forward(self, input):  # noqa: A002
        return F.hardshrink(input, self.lambd)


class Threshold(_Activation):
    """`value` where x <= threshold, else x."""

    _fields = ("threshold", "value")

    def __init__(self, threshold, value, inplace=False):
        super().__init__(threshold=threshold, value=value, inplace=inplace)

    def forward(self, input):  # noqa: A002
        return F.threshold(input, self.threshold, self.value, self.inplace)


class PReLU(_Activation):
    """x where x > 0, else a learned slope times x: one slope, or one per channel (dim 1)."""

    _fields = ("num_parameters",)

    def __init__(self, num_parameters=1, init=0.25, device=None, dtype=None):
        super().__init__(num_parameters=num_parameters, init=init)
        self.weight = Parameter(full((num_parameters,), float(init), device=device,
                                     dtype=dtype))

    def reset_parameters(self):
        init.constant_(self.weight, self.init)

    def forward(self, input):  # noqa: A002
        return F.prelu(input, self.weight)
