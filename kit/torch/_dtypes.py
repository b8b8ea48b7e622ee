"""PyTorch's dtype and device objects, as thin views of kit's (NumPy dtypes, "cpu"/"gpu")."""

from __future__ import annotations

import numpy as np

from kit import backend


class dtype:  # noqa: N801 - PyTorch's name
    """A kit dtype (a NumPy dtype) that prints as PyTorch's, e.g. `torch.float32`."""

    __slots__ = ("dtype", "_name")

    def __init__(self, numpy_dtype, name):
        # NumPy accepts any object with a `.dtype` attribute as a dtype, so these objects go
        # straight into kit's functions and NumPy calls: np.dtype(torch.float64) is float64.
        self.dtype = np.dtype(numpy_dtype)
        self._name = name

    def __repr__(self):
        return f"torch.{self._name}"

    def __eq__(self, other):
        try:
            return self.dtype == np.dtype(other)
        except TypeError:
            return NotImplemented

    def __hash__(self):
        return hash(self.dtype)  # so torch.float32 and kit.float32 find the same dict entry

    @property
    def is_floating_point(self) -> bool:
        return self.dtype.kind == "f"

    @property
    def is_complex(self) -> bool:
        return self.dtype.kind == "c"

    @property
    def is_signed(self) -> bool:
        return self.dtype.kind in "fic"

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize


float16 = half = dtype("float16", "float16")
float32 = float = dtype("float32", "float32")  # noqa: A001 - PyTorch's names
float64 = double = dtype("float64", "float64")
int8 = dtype("int8", "int8")
int16 = short = dtype("int16", "int16")
int32 = int = dtype("int32", "int32")  # noqa: A001
int64 = long = dtype("int64", "int64")
uint8 = dtype("uint8", "uint8")
bool = dtype("bool", "bool")  # noqa: A001
_BY_NUMPY = {d.dtype: d for d in (float16, float32, float64, int8, int16, int32, int64, uint8,
                                  bool)}


def of(numpy_dtype):
    """The torch-style dtype object for a kit (NumPy) dtype: of(np.dtype("float32")) is
    torch.float32."""
    return _BY_NUMPY[np.dtype(numpy_dtype)]


class device(str):  # noqa: N801 - PyTorch's name
    """`torch.device("cuda")`: kit's device string ("cpu" or "gpu") with PyTorch's `.type`.

    It is a str, so it compares equal to `x.device` and goes wherever kit takes a device.
    """

    def __new__(cls, type, index=None):  # noqa: A002 - PyTorch's keyword
        return super().__new__(cls, backend.normalize_device(str(type)))

    @property
    def type(self) -> str:
        return str(self)

    @property
    def index(self):
        return 0 if self == "gpu" else None

    def __repr__(self):
        return f"device(type='{self}')"
