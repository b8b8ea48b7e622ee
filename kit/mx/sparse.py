"""`mx.nd.sparse` for dense arrays: the elementwise ops and dot accept default-storage NDArrays
(what real custom-op code passes them); sparse storage types themselves are out of scope."""

from __future__ import annotations

from kit.mx import nd as _dense
from kit.mx._out_of_scope import SPARSE, OutOfScope
from kit.mx.ndarray import NDArray

__all__ = [
    "array", "cast_storage", "csr_matrix", "dot", "elemwise_add", "elemwise_div", "elemwise_mul",
    "elemwise_sub", "row_sparse_array", "zeros",
]

csr_matrix = OutOfScope("mx.nd.sparse.csr_matrix", SPARSE)
row_sparse_array = OutOfScope("mx.nd.sparse.row_sparse_array", SPARSE)


def _storage(stype, op):
    if stype not in (None, "default"):
        raise NotImplementedError(
            f"mx.nd.sparse.{op}: storage type {stype!r} is out of scope in kit.mx. Instead: "
            f"{SPARSE}"
        )


def _dense_only(name):
    def op(lhs, rhs, out=None):
        for value in (lhs, rhs):
            if isinstance(value, NDArray):
                _storage(value.stype, name)
        return getattr(_dense, name)(lhs, rhs, out=out)

    op.__name__ = op.__qualname__ = name
    op.__doc__ = f"mx.nd.{name} on default-storage (dense) arrays."
    return op


elemwise_add = _dense_only("elemwise_add")
elemwise_sub = _dense_only("elemwise_sub")
elemwise_mul = _dense_only("elemwise_mul")
elemwise_div = _dense_only("elemwise_div")


def dot(lhs, rhs, transpose_a=False, transpose_b=False, out=None):
    """mx.nd.dot on default-storage (dense) arrays."""
    return _dense.dot(lhs, rhs, transpose_a=transpose_a, transpose_b=transpose_b, out=out)


def cast_storage(data, stype):
    """A copy of `data` in storage type `stype` ('default' only in kit.mx)."""
    return data.tostype(stype)


def zeros(stype, shape, ctx=None, dtype=None):
    """Zeros of storage type `stype` ('default' only in kit.mx)."""
    _storage(stype, "zeros")
    return _dense.zeros(shape, ctx=ctx, dtype=dtype)


def array(source_array, ctx=None, dtype=None):
    """A dense NDArray (kit.mx keeps every array in default storage)."""
    return _dense.array(source_array, ctx=ctx, dtype=dtype)
