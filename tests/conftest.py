"""Shared pytest fixtures for the kit test suite."""

import numpy as np
import pytest


@pytest.fixture(autouse=True)
def _seed_numpy_global_rng():
    """Every test starts from the same NumPy global RNG state."""
    np.random.seed(0)


@pytest.fixture(params=["cpu", "gpu"])
def xp_device(request):
    """The device name to run a test on; "gpu" is skipped, with the reason, when unusable."""
    device = request.param
    if device == "gpu":
        # Imported here so that conftest loads even before kit.backend exists.
        from kit import backend

        if not backend.gpu_available():
            pytest.skip(f"no usable GPU: {backend.gpu_unavailable_reason()}")
    return device
