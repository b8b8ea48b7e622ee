"""Shared pytest fixtures for the kit test suite."""

import re

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


def pytest_collection_modifyitems(items):
    """A test run on the "gpu" parameter of `xp_device` is a GPU test: mark it, so that
    `pytest -m gpu` (scripts/gpu_check.sh) selects it along with the explicitly marked ones."""
    for item in items:
        callspec = getattr(item, "callspec", None)
        if callspec is not None and callspec.params.get("xp_device") == "gpu":
            item.add_marker(pytest.mark.gpu)


def pytest_terminal_summary(terminalreporter):
    """One line saying why tests were skipped, grouped by reason (-rfE lists only failures)."""
    counts = {}
    for report in terminalreporter.stats.get("skipped", []):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        reason = reason.removeprefix("Skipped: ")
        # one reason per kind, not per op: "kit.eq is not differentiable" -> "kit.<op> is ..."
        reason = re.sub(r"\bkit\.\w+", "kit.<op>", reason)
        counts[reason] = counts.get(reason, 0) + 1
    if counts:
        terminalreporter.write_line("skipped " + ", ".join(
            f"{n} ({reason})" for reason, n in sorted(counts.items(), key=lambda kv: -kv[1])))
