"""`torch.cuda`, the two calls lesson code uses to pick a device; kit's GPU is CuPy's."""

from kit import backend


def is_available() -> bool:
    """True when kit can run on a GPU (CuPy installed and a device usable).

    >>> import kit, kit.torch as torch
    >>> torch.cuda.is_available() == kit.backend.gpu_available()
    True
    """
    return backend.gpu_available()


def synchronize(device=None) -> None:
    """Wait for queued GPU work to finish (for timing); a no-op without a GPU."""
    backend.synchronize("gpu")
