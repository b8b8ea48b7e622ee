"""gluon `Parameter` and `ParameterDict`, as MXNet 1.x has them.

A Parameter holds one NDArray variable (its `data()`, made with attach_grad, so `mx.autograd`
writes its gradient into `grad()` by its `grad_req`). Its shape may have unknown (0) dimensions
until the first forward pass fills them in: MXNet's deferred initialisation.

>>> import kit.mx as mx
>>> p = mx.gluon.Parameter("w", shape=(2, 3), init=mx.init.One())
>>> p.initialize(); p.data().shape, float(p.grad().asnumpy().sum())
((2, 3), 0.0)
"""

from __future__ import annotations

import warnings

import numpy as np

from kit.grad_mode import no_grad
from kit.mx import init as mx_init
from kit.mx import nd
from kit.mx.base import MXNetError, scope
from kit.mx.context import Context, current_context
from kit.mx.ndarray import GRAD_REQS, NDArray


class DeferredInitializationError(MXNetError):
    """A Parameter's data was asked for before the first forward pass gave it a shape."""


def _one_ctx(ctx):
    if ctx is None:
        return current_context()
    if isinstance(ctx, (list, tuple)):
        if len(ctx) != 1:
            raise ValueError(
                f"kit.mx keeps one copy of each Parameter, on one device; got ctx={list(ctx)}. "
                f"Fix: pass one context, e.g. ctx=mx.cpu()"
            )
        ctx = ctx[0]
    if not isinstance(ctx, Context):
        raise TypeError(f"ctx must be an mx.Context such as mx.cpu(), got {ctx!r}")
    return ctx


def _known(shape):
    return shape is not None and all(n > 0 for n in shape)


class Parameter:
    """A weight of a Block: name, shape, dtype, initializer, grad_req and lr/wd multipliers."""

    def __init__(self, name, grad_req="write", shape=None, dtype=np.float32, lr_mult=1.0,
                 wd_mult=1.0, init=None, allow_deferred_init=False, differentiable=True,
                 stype="default", grad_stype="default"):
        if stype != "default" or grad_stype != "default":
            raise NotImplementedError(
                f"Parameter {name!r}: sparse storage ({stype!r}/{grad_stype!r}) is not in "
                f"kit.mx; use the default dense storage"
            )
        self.name = name
        self._shape = (shape,) if isinstance(shape, int) else (
            None if shape is None else tuple(shape))
        self.dtype = np.dtype(dtype).type
        self.lr_mult = lr_mult
        self.wd_mult = wd_mult
        self.init = init
        self._allow_deferred_init = allow_deferred_init
        self._differentiable = differentiable
        self._grad_req = grad_req if differentiable else "null"
        if self._grad_req not in GRAD_REQS:
            raise ValueError(f"grad_req must be one of {GRAD_REQS}, but got {grad_req!r}")
        self._var = None  # the NDArray variable once initialised
        self._deferred = None  # (init, ctx) while waiting for a shape

    def __repr__(self):
        return f"Parameter {self.name} (shape={self.shape}, dtype={np.dtype(self.dtype).name})"

    # --- shape and grad_req -------------------------------------------------------------
    @property
    def shape(self):
        return self._shape

    @shape.setter
    def shape(self, new_shape):
        new_shape = tuple(new_shape)
        if self._shape is not None:
            fits = len(self._shape) == len(new_shape) and all(
                old in (0, new) for old, new in zip(self._shape, new_shape, strict=True))
            if not fits:
                raise ValueError(
                    f"Parameter '{self.name}': expected shape {self._shape} is incompatible "
                    f"with given shape {new_shape} (only unknown dimensions, 0, may be filled in)"
                )
        self._shape = new_shape

    @property
    def grad_req(self):
        return self._grad_req

    @grad_req.setter
    def grad_req(self, req):
        if req not in GRAD_REQS:
            raise ValueError(f"grad_req must be one of {GRAD_REQS}, but got {req!r}")
        if not self._differentiable:
            req = "null"
        self._grad_req = req
        if self._var is not None:
            self._var.attach_grad(req)  # a fresh variable with a zero gradient, as MXNet

    # --- initialisation -----------------------------------------------------------------
    def initialize(self, init=None, ctx=None, default_init=None, force_reinit=False):
        """Create the data on `ctx` with `init` (else this Parameter's own init, else
        `default_init`, Uniform by default); deferred while the shape is unknown."""
        if self._var is not None and not force_reinit:
            warnings.warn(
                f"Parameter '{self.name}' is already initialized, ignoring. Set "
                f"force_reinit=True to re-initialize.", stacklevel=2,
            )
            return
        ctx = _one_ctx(ctx)
        if init is None:
            init = self.init if self.init is not None else (
                default_init if default_init is not None else mx_init.Uniform())
        self._var = None
        if not _known(self._shape):
            if self._allow_deferred_init:
                self._deferred = (init, ctx)
                return
            raise ValueError(
                f"Cannot initialize Parameter '{self.name}' because it has invalid shape: "
                f"{self._shape}. Fix: give the full shape (in_units, in_channels, ... for layers)"
            )
        self._finish_init(init, ctx)

    def _finish_init(self, init, ctx, values=None):
        arr = nd.zeros(self._shape, ctx=ctx, dtype=self.dtype)
        with scope(recording=False):
            if values is not None:
                arr[:] = values
            else:
                mx_init.create(mx_init.Uniform() if init is None else init)(
                    mx_init.InitDesc(self.name, {"__init__": init}), arr)
        arr.attach_grad(self._grad_req)
        self._var = arr
        self._deferred = None

    def _finish_deferred_init(self):
        if self._deferred is None:
            return
        if not _known(self._shape):
            raise DeferredInitializationError(
                f"Parameter '{self.name}' still has an unknown shape {self._shape} after shape "
                f"inference. Fix: give its full shape when creating it"
            )
        self._finish_init(*self._deferred)

    def _check(self):
        if self._var is not None:
            return self._var
        if self._deferred is not None:
            raise DeferredInitializationError(
                f"Parameter '{self.name}' has not been initialized yet because initialization "
                f"was deferred. Actual initialization happens during the first forward pass. "
                f"Please pass one batch of data through the network before accessing "
                f"Parameters. You can also avoid deferred initialization by specifying "
                f"in_units, num_features, etc., for network layers."
            )
        raise RuntimeError(
            f"Parameter '{self.name}' has not been initialized. Note that you should initialize "
            f"parameters and create Trainer with Block.collect_params() instead of Block.params "
            f"because the later does not include Parameters of nested child Blocks"
        )

    # --- data and gradient --------------------------------------------------------------
    def data(self, ctx=None):
        """The NDArray holding the values (the variable that autograd differentiates)."""
        return self._check()

    def list_data(self):
        return [self._check()]

    def grad(self, ctx=None):
        """The NDArray buffer that backward writes this Parameter's gradient into."""
        var = self._check()
        if self._grad_req == "null":
            raise RuntimeError(
                f"Cannot get gradient array for Parameter '{self.name}' because grad_req='null'"
            )
        return var.grad

    def list_grad(self):
        return [self.grad()]

    def list_ctx(self):
        if self._var is None and self._deferred is not None:
            return [self._deferred[1]]
        return [self._check().context]

    def set_data(self, data):
        """Overwrite the values in place (a deferred Parameter takes its shape from `data`)."""
        values = data if isinstance(data, NDArray) else nd.array(data, dtype=self.dtype)
        if self._var is None:
            if self._deferred is None:
                self._check()
            self.shape = values.shape
            self._finish_init(self._deferred[0], self._deferred[1], values)
            return
        if tuple(values.shape) != self._var.shape:
            raise ValueError(
                f"Parameter '{self.name}'.set_data: shape {tuple(values.shape)} does not match "
                f"the parameter's shape {self._var.shape}"
            )
        with no_grad():
            self._var.tensor.copy_(values.astype(self.dtype).tensor)

    def zero_grad(self):
        """Set the gradient buffer to 0 (needed between steps with grad_req='add')."""
        if self._var is None or self._grad_req == "null":
            return
        with no_grad():
            self._var.grad.tensor.zero_()

    def reset_ctx(self, ctx):
        """Move the data to `ctx` (a fresh variable there)."""
        ctx = _one_ctx(ctx)
        if self._var is None:
            if self._deferred is not None:
                self._deferred = (self._deferred[0], ctx)
            return
        self._var = self._var.as_in_context(ctx).copy()
        self._var.attach_grad(self._grad_req)

    def cast(self, dtype):
        """Change the dtype of the data (and gradient)."""
        self.dtype = np.dtype(dtype).type
        if self._var is not None:
            self._var = self._var.astype(self.dtype)
            self._var.attach_grad(self._grad_req)

    def _load_init(self, values, ctx=None, cast_dtype=False, dtype_source="current"):
        """Take the values loaded from a file (MXNet's load_parameters rules for dtype)."""
        if np.dtype(values.dtype) != np.dtype(self.dtype):
            if not cast_dtype:
                raise AssertionError(
                    f"Failed loading Parameter '{self.name}' from saved params: dtype "
                    f"incompatible expected {np.dtype(self.dtype).name} vs saved "
                    f"{np.dtype(values.dtype).name}. Set cast_dtype=True to cast the dtype of "
                    f"saved params."
                )
            if dtype_source == "saved":
                self.cast(values.dtype)
            else:
                values = values.astype(self.dtype)
        try:
            self.shape = values.shape
        except ValueError:
            raise AssertionError(
                f"Failed loading Parameter '{self.name}' from saved params: shape incompatible "
                f"expected {self._shape} vs saved {tuple(values.shape)}"
            ) from None
        if self._var is not None:
            self.set_data(values)
            return
        init, where = self._deferred if self._deferred is not None else (None, None)
        self._finish_init(init, _one_ctx(ctx if ctx is not None else where), values)

    def var(self):
        raise NotImplementedError(
            "Parameter.var() returns a symbol; kit.mx has no symbolic API (mx.sym). Use data() "
            "for the NDArray"
        )


class Constant(Parameter):
    """A Parameter that is not learned (grad_req 'null'), initialised to `value`."""

    def __init__(self, name, value):
        value = value if isinstance(value, NDArray) else nd.array(value)
        super().__init__(name, grad_req="null", shape=value.shape, dtype=value.dtype,
                         init=mx_init.Constant(value.asnumpy()))
        self.value = value
