"""Markers for tests that need a GPU: marked `gpu` (so `pytest -m gpu` selects them) and skipped,
with kit.backend's reason, where no GPU is usable."""

import pytest

from kit import backend

_REASON = f"no usable GPU: {backend.gpu_unavailable_reason()}"
needs_gpu = pytest.mark.skipif(not backend.gpu_available(), reason=_REASON)

# Device parameters for tests that run on both: "gpu" carries both marks.
DEVICES = ["cpu", pytest.param("gpu", marks=[pytest.mark.gpu, needs_gpu])]


def gpu_test(fn):
    """Decorate a test that only makes sense on a GPU."""
    return pytest.mark.gpu(needs_gpu(fn))
