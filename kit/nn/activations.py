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
    is added when set. Its forward is kit.nn.functional's `function` of the input, the fields
    in that order, then `inplace` where the module has it."""

    _fields = ()
    function = None

    def __init__(self, **options):
        super().__init__()
        for name, value in options.items():
            setattr(self, name, value)

    def forward(self, input):  # noqa: A002 - PyTorch's argument name
        args = [getattr(self, name) for name in self._fields]
        if "inplace" in self.__dict__:
            args.append(self.inplace)
        return getattr(F, self.function)(input, *args)

    def extra_repr(self):
        shown = [f"{name}={getattr(self, name)}" for name in self._fields]
        if getattr(self, "inplace", False):
            shown.append("inplace=True")
        return ", ".join(shown)


class _InPlace(_Activation):
    """An activation whose one option is `inplace`."""

    def __init__(self, inplace=False):
        super().__init__(inplace=inplace)


class ELU(_Activation):
    """x where x > 0, else alpha * (exp(x) - 1)."""

    function = "elu"
    _fields = ("alpha",)

    def __init__(self, alpha=1.0, inplace=False):
        super().__init__(alpha=alpha, inplace=inplace)


class SELU(_InPlace):
    """scale * elu(x, alpha), the self-normalising constants."""

    function = "selu"


class CELU(_Activation):
    """x where x > 0, else alpha * (exp(x / alpha) - 1)."""

    function = "celu"
    _fields = ("alpha",)

    def __init__(self, alpha=1.0, inplace=False):
        super().__init__(alpha=alpha, inplace=inplace)


class Hardtanh(_Activation):
    """x clamped to [min_val, max_val]."""

    function = "hardtanh"
    _fields = ("min_val", "max_val")

    def __init__(self, min_val=-1.0, max_val=1.0, inplace=False):
        super().__init__(min_val=min_val, max_val=max_val, inplace=inplace)


class ReLU6(_InPlace):
    """min(max(x, 0), 6)."""

    function = "relu6"


class Mish(_InPlace):
    """x * tanh(softplus(x))."""

    function = "mish"


class Hardswish(_InPlace):
    """x * relu6(x + 3) / 6."""

    function = "hardswish"


class Hardsigmoid(_InPlace):
    """relu6(x + 3) / 6."""

    function = "hardsigmoid"


class Softsign(_Activation):
    """x / (1 + |x|)."""

    function = "softsign"


class LogSigmoid(_Activation):
    """log(sigmoid(x))."""

    function = "logsigmoid"


class Tanhshrink(_Activation):
    """x - tanh(x)."""

    function = "tanhshrink"


class Softmin(_Activation):
    """softmax(-x) along `dim`."""

    function = "softmin"
    _fields = ("dim",)

    def __init__(self, dim=None):
        super().__init__(dim=dim)


class GLU(_Activation):
    """a * sigmoid(b), the halves of the input along `dim`."""

    function = "glu"
    _fields = ("dim",)

    def __init__(self, dim=-1):
        super().__init__(dim=dim)


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

    function = "threshold"
    _fields = ("threshold", "value")

    def __init__(self, threshold, value, inplace=False):
        super().__init__(threshold=threshold, value=value, inplace=inplace)


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
