"""`mx.init` (also `mx.initializer`): weight initialisers as MXNet 1.x has them.

An initializer is called by a gluon Parameter with its name and a fresh NDArray, and writes the
values in place. Random draws come from kit's generator (`kit.manual_seed`), so the numbers differ
from MXNet's while the distributions do not. A subclass overrides `_init_weight(name, arr)`.

>>> import kit.mx as mx
>>> arr = mx.nd.zeros((2, 3))
>>> mx.init.Constant(0.5)("fc_weight", arr); arr.asnumpy()
array([[0.5, 0.5, 0.5],
       [0.5, 0.5, 0.5]], dtype=float32)
"""

from __future__ import annotations

import json
import math

from kit.nn import init as kit_init

__all__ = [
    "Constant", "InitDesc", "Initializer", "MSRAPrelu", "Normal", "One", "Uniform", "Xavier",
    "Zero", "create", "register",
]

_REGISTRY = {}


def register(klass):
    """Register an Initializer subclass under its lower-case class name (for `create('name')`).

    >>> import kit.mx as mx
    >>> @mx.init.register
    ... class Halves(mx.init.Initializer):
    ...     def _init_weight(self, name, arr):
    ...         arr[:] = 0.5
    >>> mx.init.create("halves")
    Halves()
    """
    if not (isinstance(klass, type) and issubclass(klass, Initializer)):
        raise TypeError(
            f"mx.init.register: expected an Initializer subclass, got {klass!r}. Fix: decorate "
            f"the class, not an instance"
        )
    _REGISTRY[klass.__name__.lower()] = klass
    return klass


def create(init):
    """An Initializer from an instance (returned as is) or a registered name ('xavier',
    'zeros', 'ones', 'uniform', 'normal', ...)."""
    if isinstance(init, Initializer):
        return init
    if isinstance(init, str):
        name = init.lower()
        if name in _REGISTRY:
            return _REGISTRY[name]()
        raise ValueError(
            f"mx.init.create: unknown initializer {init!r}. Known: {', '.join(sorted(_REGISTRY))}"
        )
    raise TypeError(
        f"mx.init.create: expected an Initializer or its name, got {type(init).__name__}"
    )


class InitDesc(str):
    """A parameter's name, with attributes (`'__init__'`: the parameter's own initializer)."""

    def __new__(cls, name, attrs=None, global_init=None):
        desc = super().__new__(cls, name)
        desc.attrs = attrs or {}
        desc.global_init = global_init
        return desc


class Initializer:
    """Base class: `init(name, arr)` fills `arr` in place by the name's pattern."""

    def __init__(self, **kwargs):
        self._kwargs = kwargs

    def dumps(self):
        """`'["name", {kwargs}]'`, MXNet's serialised form."""
        return json.dumps([type(self).__name__.lower(), self._kwargs])

    def __repr__(self):
        args = ", ".join(f"{k}={v!r}" for k, v in self._kwargs.items())
        return f"{type(self).__name__}({args})"

    def __call__(self, desc, arr):
        init = getattr(desc, "attrs", {}).get("__init__", "")
        if init:  # a parameter's own initializer wins over the name patterns
            create(init)._init_weight(desc, arr)
            return
        name = str(desc)
        if name.endswith("weight"):
            self._init_weight(name, arr)
        elif name.endswith(("bias", "beta", "running_mean", "moving_mean")):
            kit_init.zeros_(arr.tensor)
        elif name.endswith(("gamma", "running_var", "moving_var")):
            kit_init.ones_(arr.tensor)
        else:
            raise ValueError(
                f"Unknown initialization pattern for {name}. Default initialization is limited "
                f'to "weight", "bias", "gamma" (1.0) and "beta" (0.0). Fix: give the Parameter '
                f"its own init=mx.init.*"
            )

    def _init_weight(self, name, arr):
        raise NotImplementedError(
            f"{type(self).__name__} must override _init_weight(self, name, arr) and write into "
            f"arr, e.g. arr[:] = ..."
        )


class Zero(Initializer):
    """Fills with 0."""

    def _init_weight(self, name, arr):
        kit_init.zeros_(arr.tensor)


class One(Initializer):
    """Fills with 1."""

    def _init_weight(self, name, arr):
        kit_init.ones_(arr.tensor)


class Constant(Initializer):
    """Fills with `value` (a number, or an array broadcast to the parameter's shape)."""

    def __init__(self, value):
        super().__init__(value=value)
        self.value = value

    def _init_weight(self, name, arr):
        if isinstance(self.value, (int, float)):
            kit_init.constant_(arr.tensor, float(self.value))
        else:
            arr[:] = self.value


class Uniform(Initializer):
    """U(-scale, scale); scale 0.07 by default (gluon's default initializer)."""

    def __init__(self, scale=0.07):
        super().__init__(scale=scale)
        self.scale = scale

    def _init_weight(self, name, arr):
        kit_init.uniform_(arr.tensor, -self.scale, self.scale)


class Normal(Initializer):
    """N(0, sigma^2); sigma 0.01 by default."""

    def __init__(self, sigma=0.01):
        super().__init__(sigma=sigma)
        self.sigma = sigma

    def _init_weight(self, name, arr):
        kit_init.normal_(arr.tensor, 0.0, self.sigma)


class Xavier(Initializer):
    """Glorot's initialisation as MXNet spells it: scale = sqrt(magnitude / factor), factor the
    fan in, fan out or their mean ('avg'); U(-scale, scale) or N(0, scale^2).

    NOTE: MXNet's defaults (uniform, 'avg', magnitude 3) give sqrt(6 / (fan_in + fan_out)),
    PyTorch's xavier_uniform_ with gain 1.
    """

    def __init__(self, rnd_type="uniform", factor_type="avg", magnitude=3):
        super().__init__(rnd_type=rnd_type, factor_type=factor_type, magnitude=magnitude)
        if rnd_type not in ("uniform", "gaussian"):
            raise ValueError(f"Xavier: rnd_type must be 'uniform' or 'gaussian', got {rnd_type!r}")
        if factor_type not in ("avg", "in", "out"):
            raise ValueError(f"Xavier: factor_type must be 'avg', 'in' or 'out', got "
                             f"{factor_type!r}")
        self.rnd_type = rnd_type
        self.factor_type = factor_type
        self.magnitude = float(magnitude)

    def _init_weight(self, name, arr):
        shape = arr.shape
        if len(shape) < 2:
            raise ValueError(
                f"Xavier initializer cannot be applied to vector {name}. It requires at least "
                f"2D. Fix: give this parameter its own init, e.g. init=mx.init.Zero()"
            )
        receptive = math.prod(shape[2:])
        fan_in, fan_out = shape[1] * receptive, shape[0] * receptive
        factor = {"avg": (fan_in + fan_out) / 2.0, "in": fan_in, "out": fan_out}[self.factor_type]
        scale = math.sqrt(self.magnitude / factor)
        if self.rnd_type == "uniform":
            kit_init.uniform_(arr.tensor, -scale, scale)
        else:
            kit_init.normal_(arr.tensor, 0.0, scale)


class MSRAPrelu(Xavier):
    """He et al.'s initialisation for PReLU nets: Gaussian, magnitude 2 / (1 + slope^2)."""

    def __init__(self, factor_type="avg", slope=0.25):
        super().__init__("gaussian", factor_type, 2.0 / (1 + slope**2))
        self._kwargs = {"factor_type": factor_type, "slope": slope}


for _cls in (Zero, One, Constant, Uniform, Normal, Xavier, MSRAPrelu):
    register(_cls)
_REGISTRY["zeros"] = Zero
_REGISTRY["ones"] = One
