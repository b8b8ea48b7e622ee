"""Markers for tests that need a GPU: marked `gpu` (so `pytest -m gpu` selects them) and skipped,
with kit.backend's reason, where no GPU is usable."""

import pytest

from kit import backend

_REASON = f"no usable GPU: {backend.gpu_unavailable_reason()}"
needs_gpu = pytest.mark.skipif(not backend.gpu_available(), reason=_REASON)

# The "gpu" parameter of a test that runs on several devices carries both marks.
GPU_PARAM = pytest.param("gpu", marks=[pytest.mark.gpu, needs_gpu])
DEVICES = ["cpu", GPU_PARAM]


def gpu_test(fn):
    """Decorate a test that only makes sense on a GPU."""
    return pytest.mark.gpu(needs_gpu(fn))
