"""What a Tensor says about itself without computing (PyTorch's metadata methods): its element
size, strides and storage offset in elements, its device and dtype family. No op, no gradient.

>>> import kit.torch as torch
>>> x = torch.zeros(2, 3)[:, 1:]
>>> x.stride(), x.storage_offset(), x.element_size(), x.nbytes
((3, 1), 1, 4, 16)
"""

from __future__ import annotations

import math

from kit import _views


def _stride(self, dim=None):
    """`x.stride()`: how many elements apart consecutive indices of each dim lie; `x.stride(d)`
    for one dim. A contiguous tensor gets PyTorch's strides, also where a dim is 0 or 1 (NumPy
    gives an empty array strides of its own)."""
    d = self._data
    if d.flags.c_contiguous:
        strides, step = [], 1
        for n in reversed(d.shape):
            strides.append(step)
            step *= max(n, 1)
        strides = tuple(reversed(strides))
    else:
        strides = tuple(s // d.itemsize for s in d.strides)
    if dim is None:
        return strides
    if not d.ndim:
        raise IndexError(f"kit stride(): Dimension specified as {dim} but tensor has no "
                         f"dimensions")
    if not -d.ndim <= dim < d.ndim:
        raise IndexError(f"kit stride(): Dimension out of range (expected to be in range of "
                         f"[{-d.ndim}, {d.ndim - 1}], but got {dim})")
    return strides[dim]


def _storage_offset(self):
    """`x.storage_offset()`: the index of x's first element in the memory it shares with its
    base (0 for a tensor that owns its memory)."""
    d = self._data
    owner = _views._owner(d)
    if owner is d or not hasattr(owner, "__array_interface__") or not d.size:
        return 0
    return (_views._address(d) - _views._address(owner)) // d.itemsize


def _is_nonzero(self):
    """`x.is_nonzero()`: bool(x) of a one-element tensor; PyTorch's RuntimeError otherwise."""
    if self._data.size != 1:
        kind = "no values" if not self._data.size else "more than one value"
        raise RuntimeError(f"kit is_nonzero(): Boolean value of Tensor with {kind} is ambiguous. "
                           f"Fix: x.any() or x.all(), or index one element first")
    return bool(self._data.reshape(()))


def _is_same_size(self, other):
    """`x.is_same_size(y)`: whether the two shapes are equal (no broadcasting)."""
    return tuple(self.shape) == tuple(other.shape)


INFO = {
    "ndimension": lambda self: self._data.ndim,
    "nelement": lambda self: int(self._data.size),
    "element_size": lambda self: self._data.itemsize,
    "itemsize": property(lambda self: self._data.itemsize),
    "nbytes": property(lambda self: self._data.itemsize * math.prod(self._data.shape)),
    "is_complex": lambda self: self._data.dtype.kind == "c",
    "is_signed": lambda self: self._data.dtype.kind in "ifc",
    "is_cpu": property(lambda self: self.device == "cpu"),
    "is_cuda": property(lambda self: self.device == "gpu"),
    "get_device": lambda self: -1 if self.device == "cpu" else 0,
    "stride": _stride,
    "storage_offset": _storage_offset,
    "is_nonzero": _is_nonzero,
    "is_same_size": _is_same_size,
}
