"""Recordings shipped inside kit (kit/bench/recorded/, package data): found through the
installed package, declared as package data, and in step with the code that reads them."""

from pathlib import Path

import pytest

import kit.bench
import kit.distributed as dist
import kit.torch as torch

ROOT = Path(__file__).resolve().parents[1]


def test_recordings_are_declared_as_package_data():
    tomllib = pytest.importorskip("tomllib", reason="tomllib comes with Python 3.11")
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    patterns = config["tool"]["setuptools"]["package-data"]["kit.bench"]
    shipped = {p for pattern in patterns for p in (ROOT / "kit" / "bench").glob(pattern)}
    assert ROOT / "kit" / "bench" / "recorded" / "fusion_sweep.json" in shipped


def test_an_unknown_recording_names_the_ones_kit_ships():
    with pytest.raises(FileNotFoundError, match=r"no recording 'nope'; kit ships \[.*"
                                                r"'fusion_sweep'"):
        kit.bench.packaged_recording("nope")


def test_the_fusion_sweep_matches_the_fusion_plan_of_its_model():
    """Lesson 14 reads this recording: every (processes, threshold) of 1, 2 and 4 processes is
    there, with the buffer count kit plans for the recorded model today."""
    doc = kit.bench.packaged_recording("fusion_sweep")
    assert doc["schema"] == "kit.distributed.fusion/1" and doc["machine"]["cores"] >= 1
    widths = doc["model"]["widths"]
    layers = []
    for width_in, width_out in zip(widths, widths[1:], strict=False):
        layers += [torch.nn.Linear(width_in, width_out), torch.nn.ReLU()]
    named = list(torch.nn.Sequential(*layers[:-1]).named_parameters())
    assert doc["model"]["gradient_bytes"] == 4 * sum(p.numel() for _, p in named)
    thresholds = sorted({run["threshold_bytes"] for run in doc["runs"]})
    assert sorted((r["processes"], r["threshold_bytes"]) for r in doc["runs"]) == [
        (n, t) for n in (1, 2, 4) for t in thresholds]
    for run in doc["runs"]:
        assert run["buffers"] == len(dist.fusion_buckets(named, run["threshold_bytes"]))
        for part in ("step_ms", "compute_ms", "wait_ms"):
            stats = run[part]
            assert 0 <= stats["min"] <= stats["q1"] <= stats["median"] <= stats["q3"], run
