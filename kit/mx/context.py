"""Devices as MXNet spells them: mx.cpu(), mx.gpu(0), `with ctx:`, mapped to kit's devices."""

from __future__ import annotations

from kit import backend
from kit.mx.base import MXNetError


class Context:
    """A device, `cpu(0)` or `gpu(0)`; also a `with` block that makes it the default."""

    _stack = []
    devtype2str = {1: "cpu", 2: "gpu"}

    def __init__(self, device_type, device_id=0):
        if isinstance(device_type, Context):
            device_type, device_id = device_type.device_type, device_type.device_id
        if device_type not in ("cpu", "gpu"):
            raise ValueError(
                f"mx.Context: unknown device type {device_type!r}; kit.mx knows 'cpu' and 'gpu'"
            )
        self.device_type = device_type
        self.device_id = int(device_id)

    @property
    def kit_device(self) -> str:
        """The kit device name ("cpu" or "gpu") that this context maps to."""
        return self.device_type

    def __eq__(self, other):
        return (
            isinstance(other, Context)
            and (self.device_type, self.device_id) == (other.device_type, other.device_id)
        )

    def __hash__(self):
        return hash((self.device_type, self.device_id))

    def __repr__(self):
        return f"{self.device_type}({self.device_id})"

    __str__ = __repr__

    def __enter__(self):
        Context._stack.append(self)
        return self

    def __exit__(self, *exc):
        Context._stack.pop()
        return False


def cpu(device_id=0):
    """The CPU context (MXNet's device_id is accepted and kept; kit has one CPU device).

    >>> import kit.mx as mx
    >>> mx.cpu()
    cpu(0)
    """
    return Context("cpu", device_id)


def gpu(device_id=0):
    """The GPU context; raises at once, with the reason, when no GPU is usable.

    NOTE: MXNet only fails when the first array is allocated there; failing here points at the
    line that asked for the GPU. Use `mx.context.num_gpus()` to choose a device.
    """
    if not backend.gpu_available():
        raise MXNetError(
            f"mx.gpu({device_id}): no usable GPU: {backend.gpu_unavailable_reason()}. Fix: use "
            f"mx.cpu(), or pick the device with `mx.gpu() if mx.context.num_gpus() else mx.cpu()`"
        )
    if int(device_id) != 0:
        raise MXNetError(f"mx.gpu({device_id}): kit uses a single GPU; use mx.gpu(0)")
    return Context("gpu", device_id)


def num_gpus():
    """How many GPUs kit can use: 1 when CuPy finds a usable device, else 0."""
    return 1 if backend.gpu_available() else 0


def current_context():
    """The context of the innermost `with ctx:` block, cpu(0) outside any."""
    return Context._stack[-1] if Context._stack else Context("cpu", 0)


def context_of(data):
    """The Context of an xp array."""
    return Context(backend.device_of(data), 0)
