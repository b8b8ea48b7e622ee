"""In-place operations (`add_`, `mul_`, `x[i] = v`, `+=`...): they write into the tensor's storage.

Nothing recorded: the array is updated in place and the version counter bumped (a saved tensor
changed this way is caught before backward). Recorded: the op runs out of place on a copy of the
old value that carries the old history, the result is written into the storage, and the tensor
takes the result's history; on a view, the base's history is rewritten instead (CopySlices, in
kit/_views.py), so that the gradients of the base and of every view of it stay right.
"""

from __future__ import annotations

from kit import _views
from kit._promotion import category
from kit._tensor import Tensor, bump_version
from kit.grad_mode import STATE
from kit.ops._record import DtypeError, check_same_device, data_of
from kit.ops.movement import _index_arg, astype, index_put
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
    _check_writeable(name, t)
    t._data[...] = result._data
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


def _check_writeable(name, t):
    if not getattr(getattr(t._data, "flags", None), "writeable", True):
        raise RuntimeError(
            f"kit.{name}: unsupported operation: more than one element of the written-to tensor "
            f"refers to a single memory location (a view made by expand or broadcast_to). Fix: "
            f".clone() it before changing it in place"
        )


def _inplace(name, op, fast=None):
    """An in-place method: `op` is the out-of-place op; `fast(array, value)` updates a NumPy array
    in place when nothing records."""

    def method(self, other, *args, **kwargs):
        if not _recording(self, other):
            if fast is not None and not args and not kwargs:
                value = data_of(other)
                _check_writeable(name, self)
                try:
                    fast(self._data, value)
                except TypeError as exc:  # NumPy's casting error, e.g. int tensor += float
                    raise DtypeError(f"kit.{name}: {exc} (PyTorch: the result type can't be "
                                     f"cast to the desired output type)") from None
                except ValueError as exc:  # a shape that does not fit
                    if "broadcast" not in str(exc):
                        raise
                    raise _shape_error(name, self, getattr(value, "shape", ())) from None
            else:
                _check_writeable(name, self)
                result = op(Tensor(self._data), other, *args, **kwargs)
                if result.shape != self.shape:
                    raise _shape_error(name, self, getattr(other, "shape", ()))
                if result.dtype != self.dtype:
                    _check_cast(name, self, result)
                self._data[...] = result._data
            bump_version(self)
            return self
        return _write(name, self, op(_alias(self, name), other, *args, **kwargs))

    method.__name__ = name
    return method


def _fill_op(t, value):
    return index_put(t, Ellipsis, value)


def _zero_(self):
    return Tensor.fill_(self, 0)


def _setitem(self, index, value):
    if not _recording(self, value):
        v = data_of(value)
        if hasattr(v, "shape"):
            check_same_device("setitem", self._data, v)
        _check_writeable("setitem", self)
        self._data[_index_arg(index)] = v
        bump_version(self)
        return
    _write("setitem", self, index_put(_alias(self, "setitem"), index, value))


def _index_add_(self, dim, index, source, alpha=1):
    op = lambda t, src: index_add(t, dim, index, src, alpha)  # noqa: E731
    return _inplace("index_add_", op)(self, source)


def _clamp_(self, min=None, max=None):  # noqa: A002
    from kit.ops.elementwise import clamp

    op = lambda t, _: clamp(t, min, max)  # noqa: E731
    return _inplace("clamp_", op)(self, None)
