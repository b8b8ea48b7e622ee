"""`mx.operator`: MXNet's CustomOp / CustomOpProp contract and the op registry.

A registered Prop class is turned into a kit.Function subclass when it is called (see
kit/mx/_custom.py), so a CustomOp call is the same graph node as any built-in op or a
PyTorch-style Function.
"""

from __future__ import annotations

import inspect
import warnings


class CustomOp:
    """Base class of an MXNet custom operator: override forward and backward."""

    def __init__(self):
        pass

    def forward(self, is_train, req, in_data, out_data, aux):
        """Compute out_data from in_data; write each output with `self.assign(dst, req[i], y)`.
        The base version writes nothing (kit then reports the unwritten output)."""

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        """Compute in_grad from out_grad; write each with `self.assign(in_grad[i], req[i], g)`.
        The base version writes nothing (kit then reports the unwritten gradient)."""

    def assign(self, dst, req, src):
        """Write `src` into `dst` as `req` says: 'null' skips, 'write'/'inplace' overwrite,
        'add' accumulates (gradient accumulation with attach_grad(grad_req='add'))."""
        if req == "null":
            return
        if req in ("write", "inplace"):
            dst[:] = src
        elif req == "add":
            dst[:] += src
        else:
            raise ValueError(
                f"CustomOp.assign: unknown req {req!r}; it is one of 'null', 'write', "
                f"'inplace', 'add' (pass req[i] as MXNet gave it)"
            )


class CustomOpProp:
    """Base class of an operator's properties: arguments, outputs, shapes, types, dependencies."""

    def __init__(self, need_top_grad=True):
        self.need_top_grad_ = need_top_grad

    def infer_shape(self, in_shape):
        """(input shapes, output shapes, aux shapes); by default every output has in_shape[0]."""
        return in_shape, (in_shape[0],) * len(self.list_outputs()), ()

    def infer_type(self, in_type):
        """(input dtypes, output dtypes, aux dtypes); by default all are in_type[0]."""
        return (
            in_type,
            [in_type[0]] * len(self.list_outputs()),
            [in_type[0]] * len(self.list_auxiliary_states()),
        )

    def list_outputs(self):
        return ["output"]

    def list_arguments(self):
        return ["data"]

    def list_auxiliary_states(self):
        return []

    def declare_backward_dependency(self, out_grad, in_data, out_data):
        """The ids of the arrays backward reads: out_grad (unless need_top_grad is False),
        in_data and out_data by default."""
        deps = []
        if self.need_top_grad_:
            deps.extend(out_grad)
        deps.extend(in_data)
        deps.extend(out_data)
        return deps

    def create_operator(self, ctx, in_shapes, in_dtypes):
        """The CustomOp that does the work, for these input shapes and dtypes (args then aux).

        NOTE: kit passes the dtypes as NumPy types (numpy.float32); MXNet passes its integer
        type codes, which op code rarely reads.
        """
        return CustomOp()


class _Entry:
    """One registered op: its Prop class, its kit.Function subclass, the Prop's signature."""

    __slots__ = ("prop_cls", "function", "signature")

    def __init__(self, prop_cls, function):
        self.prop_cls = prop_cls
        self.function = function
        # read once here, not on every mx.nd.Custom call (it checks the call's keywords)
        try:
            self.signature = inspect.signature(prop_cls)
        except (TypeError, ValueError):
            self.signature = None


_REGISTRY: dict[str, _Entry] = {}


def register(reg_name):
    """Register a CustomOpProp subclass under `reg_name`, for mx.nd.Custom(..., op_type=reg_name).

    >>> import kit.mx as mx
    >>> @mx.operator.register("identity_doc")
    ... class IdentityProp(mx.operator.CustomOpProp):
    ...     pass
    >>> IdentityProp.__name__
    'IdentityProp'
    """
    if not isinstance(reg_name, str) or not reg_name:
        raise TypeError(
            f"mx.operator.register(reg_name): reg_name must be a non-empty string, got "
            f"{reg_name!r}. Fix: @mx.operator.register('my_op') above the Prop class"
        )

    def do_register(prop_cls):
        if not inspect.isclass(prop_cls):
            raise TypeError(
                f"mx.operator.register({reg_name!r}) got an instance of "
                f"{type(prop_cls).__name__}, not a class (MXNet crashes on this). Fix: decorate "
                f"the class itself: @mx.operator.register({reg_name!r}) above `class ...Prop`"
            )
        if not issubclass(prop_cls, CustomOpProp):
            raise TypeError(
                f"mx.operator.register({reg_name!r}): {prop_cls.__name__} is not a subclass of "
                f"mx.operator.CustomOpProp. Fix: class {prop_cls.__name__}"
                f"(mx.operator.CustomOpProp): ..."
            )
        if reg_name in _REGISTRY and _REGISTRY[reg_name].prop_cls is not CustomOpProp:
            warnings.warn(
                f"mx.operator.register: custom operator {reg_name!r} was registered before "
                f"({_REGISTRY[reg_name].prop_cls.__name__}); {prop_cls.__name__} replaces it",
                UserWarning,
                stacklevel=2,
            )
        from kit.mx._custom_function import make_function

        _REGISTRY[reg_name] = _Entry(prop_cls, make_function(reg_name))
        return prop_cls

    return do_register


def lookup(op_type):
    """The registry entry for `op_type`, or an MXNet-style error listing what exists."""
    from kit.mx.base import MXNetError

    entry = _REGISTRY.get(op_type)
    if entry is None:
        known = ", ".join(sorted(repr(n) for n in _REGISTRY)) or "none"
        raise MXNetError(
            f"Cannot find custom operator {op_type}. Registered: {known}. Fix: run the cell "
            f"with @mx.operator.register({op_type!r}) first, and check the spelling of op_type"
        )
    return entry


register("custom_op")(CustomOpProp)
