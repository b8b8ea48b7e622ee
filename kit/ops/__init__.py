"""The op set, one module per family; kit.ops's names are generated from the op registry.

Every op is declared once, in its family file (kit/ops/_registry.py says how); this module
exports each declared op under its Python name, and kit/_tensor_methods.py makes the Tensor's
operators and methods from the same declarations.

Primitives (own gradient code): elementwise, reductions, movement, linalg, losses.
Composites (none): sorting.sort/index_add, composite.relu/softmax/log_softmax/mse_loss,
linalg.dot/mm/outer, movement.movedim/broadcast_to.
"""

from __future__ import annotations

from kit._tensor import Tensor, bump_version
from kit.grad_mode import STATE
from kit.ops import composite, elementwise, linalg, movement, reductions, sorting
from kit.ops._record import data_of
from kit.ops._registry import OPS

# The names the in-place section below calls (the rest of the namespace is generated).
from kit.ops.elementwise import clamp
from kit.ops.movement import index_put
from kit.ops.sorting import index_add

globals().update({op.fn.__name__: op.fn for op in OPS.values() if op.public})
concatenate = movement.cat  # NumPy's name for cat

__all__ = ["composite", "concatenate", "elementwise", "linalg", "movement", "reductions", "sorting"]
__all__ += sorted(op.fn.__name__ for op in OPS.values() if op.public)  # the generated names


# --- in-place operations --------------------------------------------------------------------
def _recording(t, other=None):
    return STATE.enabled and (
        t.requires_grad or (isinstance(other, Tensor) and other.requires_grad)
    )


def _alias(t):
    """A second Tensor object for t's current value and history, with its own version.

    The out-of-place op saves this alias, so the in-place change of `t` that follows cannot
    corrupt what backward needs.
    """
    if t.grad_fn is None and t.requires_grad:
        raise RuntimeError(
            "a leaf Variable that requires grad is being used in an in-place operation. Fix: "
            "do the update under `with kit.no_grad():`, or use an out-of-place op (x = x + 1)"
        )
    old = Tensor(t._data)
    old.requires_grad, old.grad_fn, old._nr, old._edge = t.requires_grad, t.grad_fn, t._nr, t._edge
    old._vc = [t._vc[0]]
    return old


def _rebase(t, result):
    """Make `t` hold `result`'s value and history (the in-place op's output)."""
    if result.dtype != t.dtype:
        result = movement.astype(result, t.dtype)
    t._data = result._data
    t.grad_fn, t._nr, t._edge = result.grad_fn, result._nr, result._edge
    t.requires_grad = result.requires_grad
    bump_version(t)
    return t


def _shape_error(name, t, other_shape):
    return RuntimeError(
        f"kit.{name}: an in-place op cannot change the shape of the tensor it writes into: "
        f"shapes {list(t.shape)} and {list(other_shape)} do not broadcast to {list(t.shape)}. "
        f"Fix: use the out-of-place form (x = x + y)"
    )


def _check_writeable(name, t):
    if not getattr(getattr(t._data, "flags", None), "writeable", True):
        raise RuntimeError(
            f"kit.{name}: this tensor is a read-only view (from expand or broadcast_to: several "
            f"elements share one memory location). Fix: .clone() it before changing it in place"
        )


def _inplace(name, op, fast=None):
    """An in-place method: fast NumPy in-place update when nothing records, else rebase."""

    def method(self, other, *args, **kwargs):
        if not _recording(self, other):
            if fast is not None and not args and not kwargs:
                value = data_of(other)
                try:
                    self._data = fast(self._data, value)
                except TypeError as exc:  # NumPy's casting error, e.g. int tensor += float
                    raise TypeError(f"kit.{name}: {exc}") from None
                except ValueError as exc:  # a shape that does not fit, or a read-only view
                    _check_writeable(name, self)
                    if "broadcast" not in str(exc):
                        raise
                    raise _shape_error(name, self, getattr(value, "shape", ())) from None
            else:
                _check_writeable(name, self)
                self._data[...] = op(Tensor(self._data), other, *args, **kwargs)._data
            bump_version(self)
            return self
        result = op(_alias(self), other, *args, **kwargs)
        if result.shape != self.shape:
            raise _shape_error(name, self, getattr(other, "shape", ()))
        return _rebase(self, result)

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
            from kit.ops._record import check_same_device

            check_same_device("setitem", self._data, v)
        index = movement._index_arg(index)
        _check_writeable("setitem", self)
        self._data[index] = v
        bump_version(self)
        return
    _rebase(self, index_put(_alias(self), index, value))


def _index_add_(self, dim, index, source, alpha=1):
    op = lambda t, src: index_add(t, dim, index, src, alpha)  # noqa: E731
    return _inplace("index_add_", op)(self, source)


def _clamp_(self, min=None, max=None):  # noqa: A002
    op = lambda t, _: clamp(t, min, max)  # noqa: E731
    return _inplace("clamp_", op)(self, None)


# --- Tensor methods: generated from the registry, see kit/_tensor_methods.py ------------------
def _clone(self):
    """A copy that stays in the graph (gradients flow back to the original)."""
    return self * 1 if self.requires_grad and STATE.enabled else Tensor(self._data.copy())

from kit import _tensor_methods  # noqa: E402 - it uses the in-place functions above

_tensor_methods.install()
