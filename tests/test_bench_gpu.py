"""kit.bench on a GPU: its GPU code paths on the fake CuPy everywhere (workload placement,
CUDA-event timing, a sweep with a GPU, lesson 12's GPU branch), and on a real GPU where one is
usable. The fake computes on the CPU: nothing here says anything about GPU speed."""

import contextlib
import io
import time
from pathlib import Path

import fake_cupy
import pytest
from gpu_marks import gpu_test

import kit
from kit import bench


# --- the GPU code paths on a fake CuPy (NumPy arrays of another type: no GPU, no GPU numbers) --
@pytest.fixture
def fake_gpu():
    with fake_cupy.installed() as cupy:
        yield cupy


KERNEL_WORKLOADS = {"gelu_fused", "softmax_ce_fused"}  # CUDA code: the fake cannot compile it


def test_every_workload_computes_on_the_device_it_was_asked_for(fake_gpu):
    assert bench.default_devices() == ("cpu", "gpu")
    for w in bench.WORKLOADS.values():
        for device in w.devices:
            if device == "gpu" and w.name in KERNEL_WORKLOADS:
                continue
            result = w.setup(w.quick_sizes[0], device)()
            data = result._data if isinstance(result, kit.Tensor) else result
            expected = "cpu" if w.name == "transfer_d2h" else device
            assert kit.backend.device_of(data) == expected, f"{w.name} on {device}"


def test_kernel_workloads_need_a_real_gpu(fake_gpu):
    with pytest.raises(NotImplementedError, match="cannot compile CUDA kernels"):
        bench.WORKLOADS["gelu_fused"].setup(256, "gpu")()


def test_cuda_event_timer_reads_the_device_events(fake_gpu):
    timer = bench.timer_for("gpu")
    assert isinstance(timer, bench.CudaEventTimer) and timer.name == "cuda_event"
    assert timer.measure(lambda: time.sleep(0.005), 2) >= 0.01  # sleep lasts at least that


def test_sweep_with_a_gpu_times_it_with_events_and_records_it(fake_gpu):
    doc = bench.run_sweep(["elementwise_chain", "transfer_h2d"], None, quick=True)
    gpu_rows = [r for r in doc["results"] if r["device"] == "gpu"]
    assert [(r["workload"], r["size"]) for r in gpu_rows] == [
        ("elementwise_chain", n) for n in (256, 4096, 65536)] + [
        ("transfer_h2d", n) for n in (256, 4096, 65536)]
    assert {r["timer"] for r in gpu_rows} == {"cuda_event"}
    assert {r["timer"] for r in doc["results"] if r["device"] == "cpu"} == {"perf_counter"}
    machine = doc["machine"]
    assert machine["gpu"]["name"] == "Fake GPU (NumPy)"
    assert machine["gpu_unavailable_reason"] is None
    assert doc["versions"]["cupy"] == "0.0.0+fake" and doc["config"]["devices"] == ["cpu", "gpu"]
    assert bench.find_row(doc, "transfer_h2d", "gpu", 4096)["bytes"] == 4 * 4096
    assert sorted(bench.plot_data(doc, "elementwise_chain")["series"]) == ["cpu", "gpu"]


@pytest.mark.slow
def test_lesson_12_gpu_branch_keeps_the_checked_outputs(fake_gpu, monkeypatch):
    """Run lesson 12 in-process with a (fake) GPU: every cell runs, its live GPU cell measures,
    and every compared cell prints exactly what the stored notebook shows (made without a GPU)."""
    nbformat = pytest.importorskip("nbformat")
    import matplotlib.pyplot as plt

    monkeypatch.setattr(plt, "show", lambda *args, **kwargs: None)
    path = Path(__file__).resolve().parents[1] / "notebooks" / "12_cpu_vs_gpu.ipynb"
    nb = nbformat.read(path, as_version=4)
    namespace = {}
    try:
        for cell in nb.cells:
            if cell.cell_type != "code":
                continue
            printed = io.StringIO()
            program = "\n".join(line for line in cell.source.splitlines()
                                 if not line.startswith("%"))  # IPython magics: not Python
            with contextlib.redirect_stdout(printed):
                exec(compile(program, f"lesson 12 [{cell.execution_count}]", "exec"), namespace)
            if not cell.source.startswith("# NBVAL_IGNORE_OUTPUT"):
                stored = "".join(o.text for o in cell.outputs
                                 if o.output_type == "stream" and o.name == "stdout")
                assert printed.getvalue() == stored, f"cell {cell.execution_count}"
    finally:
        plt.close("all")
    assert namespace["live"] is not None  # the GPU branch ran
    assert namespace["gpu_prof"] is not None  # and the profile on the GPU, checked by its cell
    assert {r["device"] for r in namespace["live"]["results"]} == {"cpu", "gpu"}


# --- on a GPU -------------------------------------------------------------------------------
@gpu_test
def test_cuda_events_see_the_work_a_bare_wall_clock_misses():
    import time

    cupy = kit.backend.require_gpu("this test")
    a = cupy.ones((4096, 4096), dtype=cupy.float32)
    (a @ a).sum()  # warm up cuBLAS
    cupy.cuda.get_current_stream().synchronize()
    start = time.perf_counter()
    a @ a  # queued, not finished
    launch = time.perf_counter() - start
    m = bench.time_call(lambda: a @ a, device="gpu", repeat=3)
    assert m.timer == "cuda_event" and m.median > 0
    assert launch < m.median  # the launch returns before the 137 GFLOP product is done


@gpu_test
def test_gpu_sweep_has_both_devices_and_a_crossover_field():
    doc = bench.run_sweep(["elementwise_chain"], ["cpu", "gpu"], quick=True)
    assert {r["device"] for r in doc["results"]} == {"cpu", "gpu"}
    assert doc["machine"]["gpu"]["name"]
    assert "crossover" in bench.plot_data(doc, "elementwise_chain")
