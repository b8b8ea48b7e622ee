"""kit.bench: statistics on known inputs (a fake clock), the async-launch trap, the overhead model
and crossover, the JSON document, the sweep, the plot data and the command line."""

import io
import json
import math
import subprocess
import sys

import numpy as np
import pytest

import kit
from kit import bench
from kit.bench import report
from kit.bench.__main__ import ProgressBar


class FakeClock:
    """A clock that only moves when the timed function (or a sync) says so."""

    def __init__(self):
        self.now = 0.0
        self.pending = 0.0

    def __call__(self):
        return self.now

    def work(self, seconds, asynchronous=False):
        """A call that takes `seconds`, either at once or queued until `sync()`."""
        if asynchronous:
            self.pending += seconds
        else:
            self.now += seconds

    def sync(self):
        self.now += self.pending
        self.pending = 0.0


def timed(durations, **kwargs):
    """time_call over a function whose successive calls take `durations` on a fake clock."""
    clock = FakeClock()
    it = iter(durations)
    asynchronous = kwargs.pop("asynchronous", False)
    fn = lambda: clock.work(next(it), asynchronous)  # noqa: E731
    sync = clock.sync if kwargs.pop("sync", False) else None
    return bench.time_call(fn, clock=clock, sync=sync, **kwargs)


# --- statistics ------------------------------------------------------------------------------
def test_statistics_of_known_times():
    m = bench.Measurement((4.0, 1.0, 100.0, 3.0, 2.0), 1, "fake")
    assert (m.median, m.q1, m.q3, m.iqr, m.mad) == (3.0, 2.0, 4.0, 2.0, 1.0)
    d = m.to_dict()
    assert (d["min_s"], d["max_s"], d["mean_s"], d["repeats"]) == (1.0, 100.0, 22.0, 5)


def test_warmup_calls_are_not_timed():
    m = timed([50.0, 60.0, 1.0, 2.0, 3.0], warmup=2, repeat=3, number=1, max_seconds=1e9)
    assert m.times == (1.0, 2.0, 3.0) and m.median == 2.0 and m.timer == "perf_counter"


def test_number_of_calls_per_repeat_is_divided_out():
    m = timed([1.0, 3.0, 2.0, 2.0], warmup=0, repeat=2, number=2, max_seconds=1e9)
    assert m.times == (2.0, 2.0) and m.number == 2


def test_number_is_calibrated_so_a_repeat_outlasts_the_clock_resolution():
    m = timed([1e-5] * 1000, warmup=0, repeat=3, min_time=2e-4, max_seconds=1e9)
    assert m.number == 20
    np.testing.assert_allclose(m.times, [1e-5] * 3)


def test_repeats_stop_after_max_seconds_but_not_before_min_repeat():
    m = timed([1.0] * 20, warmup=0, repeat=10, number=1, min_repeat=3, max_seconds=2.5)
    assert len(m.times) == 3
    m = timed([1.0] * 20, warmup=0, repeat=10, number=1, min_repeat=5, max_seconds=0.5)
    assert len(m.times) == 5


def test_async_launch_trap_and_its_fix():
    # Work queued on an asynchronous device: the clock around the launch sees nothing.
    lying = timed([0.5] * 10, warmup=0, repeat=3, number=1, asynchronous=True)
    honest = timed([0.5] * 10, warmup=0, repeat=3, number=1, asynchronous=True, sync=True)
    assert lying.median == 0.0 and honest.median == 0.5


def test_bad_settings_are_refused():
    with pytest.raises(ValueError, match="repeat >= 1"):
        bench.time_call(lambda: None, repeat=0)


def test_timers_by_device():
    assert isinstance(bench.timer_for("cpu"), bench.WallTimer)
    if not kit.backend.gpu_available():
        with pytest.raises(RuntimeError, match="timing on the GPU needs a GPU"):
            bench.timer_for("cuda")


def test_real_clock_times_are_positive_and_grow_with_the_work():
    small = bench.time_call(lambda: np.ones(10).sum(), repeat=3, max_seconds=0.05)
    assert small.median > 0 and small.number >= 1 and small.q1 <= small.median <= small.q3


# --- the overhead model and the crossover -----------------------------------------------------
def test_overhead_model_recovers_exact_parameters():
    sizes = np.array([1e2, 1e3, 1e4, 1e5, 1e6])
    overhead, rate = bench.fit_overhead_model(sizes, 5e-6 + sizes / 2e9)
    assert math.isclose(overhead, 5e-6, rel_tol=1e-9) and math.isclose(rate, 2e9, rel_tol=1e-9)
    np.testing.assert_allclose(bench.model_time(sizes, overhead, rate), 5e-6 + sizes / 2e9)


def test_overhead_model_needs_two_sizes():
    with pytest.raises(ValueError, match="two distinct sizes"):
        bench.fit_overhead_model([10, 10], [1.0, 2.0])


def test_model_crossover():
    # gpu: 20 us + n / 1e11; cpu: 1 us + n / 1e9  ->  n* = 19e-6 / (1e-9 - 1e-11)
    n = bench.model_crossover((20e-6, 1e11), (1e-6, 1e9))
    assert math.isclose(n, 19e-6 / (1e-9 - 1e-11))
    assert bench.model_crossover((20e-6, 1e9), (1e-6, 1e10)) is None  # never wins


def test_crossover_of_two_power_laws_is_exact_in_log_log():
    # power laws are straight lines in log-log, so interpolating between measured sizes is exact
    sizes = [1e2, 1e3, 1e5, 1e6]
    cpu = [1e-9 * n for n in sizes]
    gpu = [1e-7 * n**0.5 for n in sizes]  # equal where 1e-9 n = 1e-7 sqrt(n): n = 1e4
    assert math.isclose(bench.crossover_size(sizes[::-1], cpu[::-1], gpu[::-1]), 1e4)
    assert bench.crossover_size(sizes, cpu, [t * 1e3 for t in gpu]) is None  # never wins


def test_crossover_edges():
    assert bench.crossover_size([1, 10], [5, 5], [1, 1]) == 1.0  # wins everywhere
    # a noisy loss at 100 after a win at 10: the GPU *stays* faster only from 100..1000
    x = bench.crossover_size([1, 10, 100, 1000], [1, 10, 100, 1000], [5, 5, 200, 20])
    assert 100 < x < 1000
    with pytest.raises(ValueError, match="same non-zero length"):
        bench.crossover_size([1, 2], [1], [1, 2])


# --- the results document -----------------------------------------------------------------------
def row(workload, device, size, median, **extra):
    return {"workload": workload, "device": device, "size": size, "median_s": median,
            "q1_s": median * 0.9, "q3_s": median * 1.1, "iqr_s": median * 0.2,
            "mad_s": median * 0.1, "min_s": median * 0.8, "repeats": 5, "number": 1,
            "timer": "cuda_event" if device == "gpu" else "perf_counter", **extra}


def document(rows, gpu_reason="no GPU in this test"):
    doc = {"schema": report.SCHEMA, "date": "2026-01-02T03:04:05+00:00",
           "machine": {"platform": "test", "python": "3", "cpu": "test cpu", "cores": 4,
                       "gpu": None, "gpu_unavailable_reason": gpu_reason},
           "versions": {}, "config": {}, "results": rows, "targets": []}
    doc["targets"] = bench.evaluate_targets(doc)
    return bench.validate(doc)


@pytest.fixture(scope="module")
def small_sweep():
    return bench.run_sweep(["device_copy", "mlp", "matmul"], ["cpu"], quick=True)


def test_sweep_document_has_every_field(small_sweep, tmp_path):
    doc = small_sweep
    assert set(report.TOP_FIELDS) <= set(doc) and doc["schema"] == "kit.bench/1"
    assert set(report.MACHINE_FIELDS) <= set(doc["machine"]) and doc["machine"]["cores"] >= 1
    assert doc["versions"]["numpy"] == np.__version__ and doc["versions"]["kit"]
    assert [(r["workload"], r["size"]) for r in doc["results"]] == [
        ("device_copy", 256), ("device_copy", 4096), ("device_copy", 65536),
        ("mlp", 8), ("mlp", 32), ("matmul", 16), ("matmul", 32), ("matmul", 64)]
    for r in doc["results"]:
        assert r["device"] == "cpu" and 0 < r["min_s"] <= r["median_s"] <= r["q3_s"]
    copy = bench.find_row(doc, "device_copy", "cpu", 4096)
    assert copy["bytes"] == 8 * 4096 and math.isclose(copy["gb_per_s"],
                                                      copy["bytes"] / copy["median_s"] / 1e9)
    assert bench.find_row(doc, "matmul", "cpu", 64)["flops"] == 2 * 64**3
    path = tmp_path / "bench.json"
    bench.save_json(doc, path)
    assert bench.load_json(path) == json.loads(json.dumps(doc))


@pytest.mark.parametrize("breaks, match", [
    (lambda d: d.pop("machine"), "lacks the field 'machine'"),
    (lambda d: d.update(schema="other/2"), "schema is 'other/2'"),
    (lambda d: d["machine"].update(cores="four"), r"machine\['cores'\] must be int"),
    (lambda d: d["results"][0].pop("median_s"), r"results\[0\] lacks the field 'median_s'"),
    (lambda d: d["results"][0].update(size=1.5), r"results\[0\]\['size'\] must be int"),
    (lambda d: d["results"][0].update(device="tpu"), "unknown device 'tpu'"),
    (lambda d: d["results"][0].update(min_s=0.0), "0 < min_s <= median_s"),
])
def test_validate_names_the_bad_field(breaks, match):
    doc = document([row("matmul", "cpu", 64, 1e-3)])
    breaks(doc)
    with pytest.raises(ValueError, match=match):
        bench.validate(doc)


# --- sweeps and targets ----------------------------------------------------------------------
def test_plan_respects_devices_and_size_limits():
    steps = bench.plan(["matmul", "transfer_h2d"], ["cpu"])
    assert [(w.name, d, n) for w, d, n in steps] == [
        ("matmul", "cpu", n) for n in (64, 128, 256, 512, 1024, 2048)]  # cpu_max; no transfer
    assert bench.WORKLOADS["matmul"].sizes[-1] == 4096  # the GPU goes to the target's size
    with pytest.raises(ValueError, match="unknown workload"):
        bench.plan(["nope"])


def test_the_standard_sweep_measures_what_the_targets_need():
    w = bench.WORKLOADS
    assert 4096 in w["matmul"].sizes_for("gpu") and 4096 in w["matmul_raw"].sizes_for("gpu")
    assert 4096 in w["mlp"].sizes_for("cpu") and 4096 in w["mlp"].sizes_for("gpu")
    assert w["gelu_fused"].sizes_for("gpu")[-1] == w["device_copy"].sizes_for("gpu")[-1] == 2**26


def test_asking_for_a_missing_gpu_says_why():
    if kit.backend.gpu_available():
        pytest.skip("a GPU is usable here")
    with pytest.raises(RuntimeError, match="no GPU is usable: CuPy"):
        bench.plan(["matmul"], ["gpu"])


def test_progress_is_reported_per_step():
    calls = []
    bench.run_sweep(["device_copy"], ["cpu"], sizes=[64, 128], repeat=3, max_seconds=0.01,
                    progress=lambda *a: calls.append(a))
    assert calls == [(0, 2, "device_copy cpu elements=64"),
                     (1, 2, "device_copy cpu elements=128"), (2, 2, "done")]


def test_every_workload_runs_on_the_cpu_and_does_its_work():
    for w in bench.WORKLOADS.values():
        if "cpu" in w.devices:
            w.setup(w.quick_sizes[0], "cpu")()
    step = bench.WORKLOADS["mlp"].setup(4, "cpu")
    step()  # the MLP step really runs backward: every parameter gets a gradient
    assert all(p.grad is not None and p.grad.shape == p.shape for p in step.params)


def test_targets_are_unmeasured_without_gpu_rows():
    doc = document([row("mlp", "cpu", 4096, 1.0)])
    assert [t["status"] for t in doc["targets"]] == ["unmeasured"] * 3
    assert "mlp on gpu at size 4096 was not measured (no usable GPU: no GPU in this test)" in \
        doc["targets"][2]["detail"]


def test_targets_from_gpu_rows():
    n = 2**26
    rows = [row("matmul", "gpu", 4096, 1.05), row("matmul_raw", "gpu", 4096, 1.0),
            row("gelu_fused", "gpu", n, 1.5), row("device_copy", "gpu", n, 1.0),
            row("gelu_fused", "gpu", 1024, 9.0), row("device_copy", "gpu", 1024, 1.0),
            row("mlp", "cpu", 4096, 12.0), row("mlp", "gpu", 4096, 1.0)]
    targets = {t["name"]: t for t in document(rows, None)["targets"]}
    assert targets["matmul_vs_raw_cupy"]["status"] == "met"
    assert math.isclose(targets["matmul_vs_raw_cupy"]["value"], 1.05)
    fused = targets["fused_op_bandwidth"]  # judged at the largest size: 1 / 1.5 < 0.7
    assert fused["status"] == "missed" and math.isclose(fused["value"], 1 / 1.5)
    assert targets["mlp_gpu_speedup"]["status"] == "met" and targets["mlp_gpu_speedup"][
        "value"] == 12.0


# --- plots -----------------------------------------------------------------------------------
def crossing_doc():
    sizes = [2**10, 2**14, 2**18, 2**22]
    cpu = [row("elementwise_chain", "cpu", n, 1e-6 + n / 1e9) for n in sizes]
    gpu = [row("elementwise_chain", "gpu", n, 2e-5 + n / 1e11) for n in sizes]
    return document(cpu + gpu)


def test_plot_data_and_crossover():
    data = bench.plot_data(crossing_doc(), "elementwise_chain")
    assert sorted(data["series"]) == ["cpu", "gpu"] and data["size_name"] == "elements"
    assert data["series"]["gpu"]["sizes"] == [2**10, 2**14, 2**18, 2**22]
    assert 2**14 < data["crossover"] < 2**18  # the model's own crossover is ~19.2k
    exact = bench.model_crossover((2e-5, 1e11), (1e-6, 1e9))
    assert abs(math.log(data["crossover"] / exact)) < math.log(2)  # interpolation, not a fit


def test_plot_draws_each_device_and_marks_the_crossover(tmp_path):
    from matplotlib.figure import Figure

    ax = Figure().subplots()
    doc = crossing_doc()
    bench.plot_sweep(doc, "elementwise_chain", ax=ax, models={"model": ([1, 2], [1, 2])})
    assert ax.get_xscale() == ax.get_yscale() == "log"
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels == ["model", "cpu (median, IQR)", "gpu (median, IQR)"]
    marks = [line for line in ax.lines if line.get_linestyle() == ":"]
    assert len(marks) == 1 and marks[0].get_xdata()[0] == bench.plot_data(
        doc, "elementwise_chain")["crossover"]
    path = tmp_path / "plot.png"
    assert bench.save_plots(doc, path) == ["elementwise_chain"]
    assert path.read_bytes()[:4] == b"\x89PNG"


# --- the command line ------------------------------------------------------------------------
def test_progress_bar_writes_plain_lines_off_a_terminal():

    out = io.StringIO()
    bar = ProgressBar(out, width=10)
    bar(0, 4, "a")
    bar(4, 4, "done")
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("[..........] 0/4") and lines[0].endswith(" a")
    assert lines[1].startswith("[##########] 4/4")


def test_command_line_quick_run(tmp_path):
    out, png = tmp_path / "quick.json", tmp_path / "quick.png"
    proc = subprocess.run(
        [sys.executable, "-m", "kit.bench", "--quick", "--out", str(out), "--plot", str(png)],
        capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr
    doc = bench.load_json(out)
    steps = len(bench.plan(quick=True))  # every workload, on every usable device
    assert doc["config"]["quick"] is True and len(doc["results"]) == steps
    assert set(doc["config"]["workloads"]) == set(bench.WORKLOADS) - (
        set() if kit.backend.gpu_available() else {"transfer_h2d", "transfer_d2h"})
    assert f"{steps}/{steps}" in proc.stderr and "targets:" in proc.stdout
    assert proc.stdout.count(": unmeasured - ") == 3  # quick sizes never answer a target
    assert png.read_bytes()[:4] == b"\x89PNG"


def test_command_line_reports_bad_arguments(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "kit.bench", "--quick", "--out", str(tmp_path / "x.json"),
         "--workloads", "nope"], capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 2 and "unknown workload(s) ['nope']" in proc.stderr


@pytest.mark.parametrize("module", [
    "kit.bench", "kit.bench.analysis", "kit.bench.harness", "kit.bench.plot", "kit.bench.report",
    "kit.bench.sweep", "kit.bench.targets",
])
def test_docstring_examples_run(module):
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(module))
    assert result.failed == 0 and result.attempted > 0


def test_lesson_12_says_what_is_missing_without_kits_repository(monkeypatch, capsys):
    """Lesson 12 in a kit installed from a wheel (no benchmarks/recorded/ beside it): the
    recordings cell says so and the lesson goes on, GPU targets shown unmeasured."""
    nbformat = pytest.importorskip("nbformat")
    from pathlib import Path

    def no_repository(folder=None):
        raise FileNotFoundError("kit.bench.recordings: no folder /site/benchmarks/recorded")

    monkeypatch.setattr(bench, "recordings", no_repository)
    path = Path(__file__).resolve().parents[1] / "notebooks" / "12_cpu_vs_gpu.ipynb"
    cells = [c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"]
    (shown,) = [i for i, source in enumerate(cells) if "kit.bench.recordings()" in source]
    namespace = {"kit": kit}
    for source in cells[shown:shown + 3]:  # the recordings, their plots, the checked cell
        exec(compile(source, "lesson 12", "exec"), namespace)
    printed = capsys.readouterr().out
    assert printed.startswith("No recordings to read: kit.bench.recordings: no folder")
    assert printed.count(": unmeasured") == len(bench.TARGETS) and namespace["recordings"] == []
