"""Type promotion, as PyTorch does it (one function for every op with several operands).

Categories: bool < integer < floating. Two dtypes of one category promote as NumPy does (uint8 and
int8 give int16, float16 and float32 give float32); across categories the higher one's dtype wins
(int64 with float16 is float16, where NumPy gives float64). Operands come in three groups, by
priority: tensors with dimensions, 0-d tensors, Python numbers. A lower group changes the result
only when it brings a higher category, so `float32 tensor * float64 0-d tensor` stays float32 and
`int tensor * 2.5` is the default float dtype (float32).

>>> import numpy as np
>>> from kit._promotion import promote_types
>>> promote_types(np.dtype("int64"), np.dtype("float16"))
dtype('float16')
"""

from __future__ import annotations

import numpy as np

_CATEGORY = {"b": 0, "u": 1, "i": 1, "f": 2, "c": 3}
_INT64 = np.dtype("int64")
_BOOL = np.dtype("bool")


_DEFAULT_FLOAT = np.dtype("float32")  # set by kit.set_default_dtype (kit/_creation.py)


def default_float():
    """The dtype Python floats and integer-to-float results get (float32 unless changed)."""
    return _DEFAULT_FLOAT


def category(dtype) -> int:
    return _CATEGORY[dtype.kind]


def promote_types(a, b):
    """torch.promote_types on kit's dtypes."""
    if a is b or a == b:
        return a
    ca, cb = _CATEGORY[a.kind], _CATEGORY[b.kind]
    if ca != cb:
        return a if ca > cb else b
    return np.promote_types(a, b)


def _scalar_dtype(value):
    if isinstance(value, (bool, np.bool_)):
        return _BOOL
    if isinstance(value, (int, np.integer)):
        return _INT64
    return default_float()


def result_type(*operands):
    """The dtype of an elementwise op on `operands` (Tensors, arrays, Python numbers; None is
    skipped), by PyTorch's rules (torch.result_type)."""
    dims = zeros = scalars = None
    for v in operands:
        if v is None:
            continue
        dtype = getattr(v, "dtype", None)
        if dtype is None or isinstance(v, np.generic):
            scalars = _join(scalars, _scalar_dtype(v))
        elif v.ndim:
            dims = _join(dims, dtype)
        else:
            zeros = _join(zeros, dtype)
    return _combine(dims, _combine(zeros, scalars))


def _join(have, dtype):
    return dtype if have is None else promote_types(have, dtype)


def _combine(higher, lower):
    """PyTorch's combine_categories: the higher-priority group wins unless the lower one brings
    a higher category."""
    if higher is None:
        return lower
    if lower is None:
        return higher
    if _CATEGORY[higher.kind] >= 2:  # floating (or complex) is never raised by a lower group
        return higher
    if higher.kind == "b" or _CATEGORY[lower.kind] >= 2:
        return promote_types(higher, lower)
    return higher


def cast_scalar(value, dtype):
    """A Python number as an operand of an op computed in `dtype`: kept as a Python number (NumPy
    treats it as weak, as PyTorch does) unless it does not fit an integer dtype, where it wraps
    around as in PyTorch (uint8 tensor + (-1) is 255 + ...)."""
    if dtype.kind in "ui" and isinstance(value, int) and not isinstance(value, bool):
        info = np.iinfo(dtype)
        if not info.min <= value <= info.max:
            return np.array(value).astype(dtype)
    return value
