"""Array backends: NumPy always, CuPy when a GPU is really usable.

`xp` is always the module of the data (`get_array_module`), never a global. CuPy is probed once,
behind a guard that keeps the reason it cannot be used (not installed, no driver, no device),
because on a machine without a GPU `import cupy` succeeds and only the first real use fails.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "DEVICES",
    "device_of",
    "get_array_module",
    "gpu_available",
    "gpu_unavailable_reason",
    "normalize_device",
    "synchronize",
    "to_device",
]

DEVICES = ("cpu", "gpu")

_probe_done = False
_cupy = None
_reason: str | None = None


def _probe():
    """Import CuPy and touch the device once; remember why it failed."""
    global _probe_done, _cupy, _reason
    if _probe_done:
        return _cupy
    _probe_done = True
    try:
        import cupy
    except Exception as exc:  # ImportError, or a broken CUDA install raising at import
        _reason = f"CuPy is not installed ({type(exc).__name__}: {exc}); pip install 'kit[gpu]'"
        return None
    try:
        count = cupy.cuda.runtime.getDeviceCount()
        if count < 1:
            _reason = "CuPy is installed but CUDA reports no GPU device"
            return None
        cupy.arange(1)  # the first real use is what fails on a driverless machine
    except Exception as exc:
        _reason = f"CuPy is installed but no GPU is usable ({type(exc).__name__}: {exc})"
        return None
    _cupy = cupy
    return cupy


def gpu_available() -> bool:
    """True when CuPy imports and a CUDA device answers."""
    return _probe() is not None


def gpu_unavailable_reason() -> str | None:
    """Why the GPU cannot be used, or None when it can."""
    _probe()
    return _reason


def _is_cupy(array) -> bool:
    # NOTE: by module name, so that a CuPy array is recognised even before the probe ran.
    return type(array).__module__.startswith("cupy")


def get_array_module(*arrays):
    """The array module (numpy or cupy) of the given arrays.

    >>> get_array_module(np.zeros(2)) is np
    True
    """
    for a in arrays:
        if type(a) is not np.ndarray and _is_cupy(a):
            return _probe() or __import__("cupy")
    return np


def device_of(array) -> str:
    """"cpu" for NumPy data, "gpu" for CuPy data."""
    return "gpu" if type(array) is not np.ndarray and _is_cupy(array) else "cpu"


def normalize_device(device) -> str:
    """Map the accepted spellings ("cpu", "gpu", "cuda", "cuda:0", None) to "cpu" or "gpu"."""
    if device is None:
        return "cpu"
    name = str(getattr(device, "type", device)).lower()
    base = name.split(":", 1)[0]
    if base == "cpu":
        return "cpu"
    if base in ("gpu", "cuda"):
        return "gpu"
    raise ValueError(f"unknown device {device!r}: use 'cpu' or 'gpu' ('cuda' is accepted too)")


def require_gpu(what: str = "this operation"):
    """Return cupy, or raise a RuntimeError that says why the GPU cannot be used."""
    cupy = _probe()
    if cupy is None:
        raise RuntimeError(f"{what} needs a GPU, but none is usable: {_reason}")
    return cupy


def to_device(array, device: str):
    """Copy `array` to `device` ("cpu" or "gpu"); returns it unchanged if it is already there."""
    device = normalize_device(device)
    if device == device_of(array):
        return array
    if device == "cpu":
        return array.get()
    return require_gpu(f"moving data to device {device!r}").asarray(array)


def synchronize(device: str = "gpu") -> None:
    """Wait until queued GPU work has finished (a no-op on the CPU or without a GPU)."""
    if normalize_device(device) == "gpu" and _probe() is not None:
        _cupy.cuda.get_current_stream().synchronize()


# --- NumPy's floating-point warnings off, for a reverse pass ------------------------------------
# NOTE: as in PyTorch, inf and NaN in gradients propagate silently (detect_anomaly finds them),
# so a backward runs as under np.errstate(all="ignore"). That block costs about 1.7 us (it makes
# its settings anew on each entry); NumPy 2 keeps them in one context variable, which is set here
# to the settings made once: about 0.2 us, a few per cent of a small compiled training step.
# Without that variable (another NumPy), np.errstate itself.
try:
    from numpy._core._ufunc_config import _extobj_contextvar as _ERRORS  # noqa: N812
except ImportError:  # pragma: no cover - NumPy 1.x
    _ERRORS = None
if _ERRORS is not None:
    with np.errstate(all="ignore"):
        _IGNORED = _ERRORS.get()


def quiet():
    """Turn NumPy's floating-point warnings off in this context; give the result to `loud`."""
    if _ERRORS is None:
        state = np.errstate(all="ignore")
        state.__enter__()
        return state
    return _ERRORS.set(_IGNORED)


def loud(token):
    """Undo `quiet` (in a finally block)."""
    if _ERRORS is None:
        token.__exit__(None, None, None)
    else:
        _ERRORS.reset(token)
