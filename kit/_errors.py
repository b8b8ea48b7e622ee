"""kit's exception classes where PyTorch's class differs from the one kit raised before: each
derives from both, so that code written for PyTorch and code written for older kit both catch it
(issue 11: PyTorch's exception class for every misuse)."""

from __future__ import annotations


class DtypeError(RuntimeError, TypeError):
    """An op that does not take this dtype: PyTorch's RuntimeError, and a TypeError as kit raised
    before."""


class ArgumentError(TypeError, ValueError):
    """An argument of the wrong kind (a tuple of dims where PyTorch takes one int): PyTorch's
    TypeError, and a ValueError as kit raised before."""


class DimIndexError(IndexError, ValueError):
    """A dim out of range where kit raised a ValueError before: PyTorch's IndexError too."""


class ShapeError(RuntimeError, ValueError):
    """Operands whose shapes do not fit: a RuntimeError, as PyTorch raises, and a ValueError, as
    kit raised before (so both `except` clauses keep working)."""
