"""In-place operations (`add_`, `mul_`, `x[i] = v`, `+=`...): they write into the tensor's storage.

Nothing recorded: the array is updated in place and the version counter bumped (a saved tensor
changed this way is caught before backward). Recorded: the op runs out of place on a copy of the
old value that carries the old history, the result is written into the storage, and the tensor
takes the result's history; on a view, the base's history is rewritten instead (CopySlices, in
kit/_views.py), so that the gradients of the base and of every view of it stay right.
"""

from __future__ import annotations

import numpy as np

from kit import _views
from kit._promotion import category
from kit._tensor import Tensor, bump_version
from kit.grad_mode import STATE
from kit.ops._record import DtypeError, check_same_device, data_of
from kit.ops.movement import _check_masks, _index_arg, _is_basic, astype, index_put
from kit.ops.sorting import index_add


def _recording(t, other=None):
    return STATE.enabled and (
        t.requires_grad or (isinstance(other, Tensor) and other.requires_grad)
        or (t._base is not None and t._base._rg)  # a view made under no_grad: refused later
    )


def _alias(t, name):
    """A new Tensor with t's current value (a copy: the storage is about to change) and history;
    the out-of-place op runs on it, so what backward needs is never overwritten."""
    _views.check_inplace(t, name)
    old = Tensor(t._data.copy())
    old._rg, old._grad_fn, old._nr, old._edge = t._rg, t._grad_fn, t._nr, t._edge
    return old


def _write(name, t, result):
    """Write the recorded out-of-place `result` into t's storage; t (or its base) takes its
    history."""
    if result.shape != t.shape:
        raise _shape_error(name, t, result.shape)
    if result.dtype != t.dtype:
        _check_cast(name, t, result)
        result = astype(result, t.dtype)
    _writeable(name, t)[...] = result._data
    bump_version(t)
    retained = t._retains_grad and t._grad_fn is not None
    if retained:  # retain_grad follows the tensor to its new history, as in PyTorch
        t._grad_fn.pre_hooks[t._nr].pop("retain", None)
        t._retains_grad = False
    if t._base is None:
        t._rg, t._grad_fn, t._nr, t._edge = result._rg, result._grad_fn, result._nr, result._edge
    else:
        _views.copy_slices(t, result)
    if retained:
        t.retain_grad()
    _views.adopt_output(result, t)
    return t


def _shape_error(name, t, other_shape):
    return RuntimeError(
        f"kit.{name}: an in-place op cannot change the shape of the tensor it writes into: "
        f"shapes {list(t.shape)} and {list(other_shape)} do not broadcast to {list(t.shape)}. "
        f"Fix: use the out-of-place form (x = x + y)"
    )


def _check_cast(name, t, result):
    """PyTorch refuses an in-place result of a higher category (bool < integer < floating)."""
    if category(result.dtype) > category(t.dtype):
        raise DtypeError(
            f"kit.{name}: result type {result.dtype} can't be cast to the desired output type "
            f"{t.dtype} (an in-place op keeps the tensor's dtype). Fix: use the out-of-place "
            f"form (x = x + y) or convert x first, e.g. x = x.float()"
        )


def _writeable(name, t, index=None):
    """The array to write t's new values (or, for setitem, those at a basic `index`) into.

    NOTE: NumPy makes every expanded view read-only. PyTorch writes one where no two elements
    share memory (expand(-1, 3) of a (2, 3) tensor), and where they do it refuses in-place ops
    except fill_ (and zero_), which give every element the same value: those write through a
    writeable alias of the same memory."""
    d = t._data
    if getattr(getattr(d, "flags", None), "writeable", True):
        return d
    owner = _views._owner(d)
    region = d if index is None or not _is_basic(index) else d[index]
    if ((name == "fill_" or not _views.overlaps(region)) and isinstance(owner, np.ndarray)
            and owner.flags.writeable):
        offset = _views._address(d) - _views._address(owner)
        return np.ndarray(d.shape, d.dtype, owner, offset, d.strides)
    raise RuntimeError(
        f"kit.{name}: unsupported operation: more than one element of the written-to tensor "
        f"refers to a single memory location (a view made by expand or broadcast_to). Fix: "
        f".clone() it before changing it in place"
    )


def _inplace(name, op, fast=None):
    """An in-place method: `op` is the out-of-place op; `fast(array, value)` updates a NumPy array
    in place when nothing records."""
    shown = _profiled_name(name)
    logical = name.startswith("logical_")

    def method(self, other, *args, **kwargs):
        recorder = STATE.profiler
        if recorder is not None and not recorder.muted:
            # NOTE: under kit.profiler, one event of the in-place op's own name (aten::add_, as
            # PyTorch's); the out-of-place op computing it (this call again, muted) is none
            from kit.profiler._record import as_one_op

            return as_one_op(recorder, shown, (self, other),
                             lambda: method(self, other, *args, **kwargs))
        tracing = STATE.tracing
        if tracing is not None and tracing.inplace(self, op, other, args, kwargs):
            return self  # kit.compile recorded it as the out-of-place op
        if not _recording(self, other):
            if fast is not None and not args and not kwargs:
                value = data_of(other)
                try:
                    fast(_writeable(name, self), value)
                except TypeError as exc:  # NumPy's casting error, e.g. int tensor += float
                    raise DtypeError(f"kit.{name}: {exc} (PyTorch: the result type can't be "
                                     f"cast to the desired output type)") from None
                except ValueError as exc:  # a shape that does not fit
                    if "broadcast" not in str(exc):
                        raise
                    raise _shape_error(name, self, getattr(value, "shape", ())) from None
            else:
                target = _writeable(name, self)
                result = op(Tensor(self._data), other, *args, **kwargs)
                if result.shape != self.shape:
                    raise _shape_error(name, self, getattr(other, "shape", ()))
                if result.dtype != self.dtype:
                    _check_cast(name, self, result)
                target[...] = result._data
            bump_version(self)
            return self
        if logical and self.dtype.kind == "f":
            # NOTE: PyTorch records no node for an in-place logical op on a float tensor: its
            # values change, its history stays (the gradient passes as if the op were not
            # there); a comparison (lt_) records one with a zero gradient, below
            result = op(Tensor(self._data), other, *args, **kwargs)
            if result.shape != self.shape:
                raise _shape_error(name, self, getattr(other, "shape", ()))
            _writeable(name, self)[...] = result._data
            bump_version(self)
            return self
        old = _alias(self, name)
        result = op(old, other, *args, **kwargs)
        if result.dtype == np.bool_ and not result._rg and self.dtype.kind == "f":
            result = _zero_gradient(result, self.dtype, old, other)
        return _write(name, self, result)

    method.__name__ = name
    return method


def _zero_gradient(result, dtype, *operands):
    """A comparison's 1s and 0s written into a float tensor (`x.lt_(y)`) that records: PyTorch's
    node (LtBackward1) keeps the tensor requiring grad, with a zero gradient for each operand.
    sign(v) * 0 is that, and exactly 0 in value (sign(NaN) and sign(inf) are finite)."""
    from kit.ops.elementwise import sign

    result = astype(result, dtype)
    for v in operands:
        if isinstance(v, Tensor) and v.requires_grad:
            result = result + sign(v) * 0
    return result


# x += y is PyTorch's add_, x /= y its div_, x //= y its floor_divide_, ...
_DUNDER = {"truediv": "div", "floordiv": "floor_divide", "mod": "remainder", "and": "bitwise_and",
           "or": "bitwise_or", "xor": "bitwise_xor", "lshift": "bitwise_left_shift",
           "rshift": "bitwise_right_shift"}


def _profiled_name(name):
    if name.startswith("__i") and name.endswith("__"):
        base = name[3:-2]
        return _DUNDER.get(base, base) + "_"
    return name


def _fill_op(t, value):
    return index_put(t, Ellipsis, value)


def _zero_(self):
    return Tensor.fill_(self, 0)


def _setitem(self, index, value):
    tracing = STATE.tracing
    if tracing is not None and tracing.inplace(self, _put(index), value, (), {}):
        return
    if not _recording(self, value):
        v = data_of(value)
        if hasattr(v, "shape"):
            check_same_device("setitem", self._data, v)
        index = _index_arg(index)
        if type(index) is not slice:  # (a[:] = v, an optimiser's update, is the common one)
            _check_masks(index, self.shape)
        _writeable("setitem", self, index)[index] = v
        bump_version(self)
        return
    _write("setitem", self, index_put(_alias(self, "setitem"), index, value))


def _put(index):
    def setitem(t, value):
        return index_put(t, index, value)

    return setitem


def _index_add_(self, dim, index, source, alpha=1):
    op = lambda t, src: index_add(t, dim, index, src, alpha)  # noqa: E731
    return _inplace("index_add_", op)(self, source)


def _clamp_(self, min=None, max=None):  # noqa: A002
    from kit.ops.elementwise import clamp

    op = lambda t, _: clamp(t, min, max)  # noqa: E731
    return _inplace("clamp_", op)(self, None)


# --- the in-place form of an op with no operand: x.floor_(), x.tril_(1), x.nan_to_num_(0.0) ---
def no_operand(name, op):
    """`_inplace`'s method for an op that takes no second tensor to write from."""
    method = _inplace(name, lambda t, _, *args, **kwargs: op(t, *args, **kwargs))

    def inplace(self, *args, **kwargs):
        return method(self, None, *args, **kwargs)

    inplace.__name__ = name
    return inplace


# --- in-place view ops: x.unsqueeze_(0), x.t_() change x's shape, not its values ------------
def reshaping(name, op):
    """The in-place form of a view op: x takes the view's array and history (so x.grad_fn is
    UnsqueezeBackward, as PyTorch's), and its version counter is bumped; its values and memory
    stay."""

    def inplace(self, *args):
        if _recording(self):
            _views.check_inplace(self, name)
        result = op(self, *args)
        self._data = result._data
        bump_version(self)
        if _recording(self):
            self._rg, self._grad_fn, self._nr, self._edge = (
                result._rg, result._grad_fn, result._nr, result._edge)
        return self

    inplace.__name__ = name
    return inplace
