"""The profiler on a GPU: CuPy runs ops asynchronously, so device time is read from CUDA events
recorded around each op (tests/fake_cupy.py for the code path everywhere; a real GPU where one
is usable). The fake computes on the CPU: its "device times" say nothing about a GPU."""

import json
import time
from pathlib import Path

import fake_cupy
import numpy as np
import pytest
from gpu_marks import gpu_test
from test_profiler import check_trace

import kit
import kit.torch
from kit.profiler import profile, record_function


@pytest.fixture
def fake_gpu():
    with fake_cupy.installed() as cupy:
        yield cupy


def gpu_program():
    x = kit.tensor(np.ones((8, 8), np.float32), device="gpu", requires_grad=True)
    y = kit.tensor(np.ones(3, np.float32))  # on the CPU: no device time
    with record_function("model"):
        loss = (x * x).exp().sum()
    loss.backward()
    y.sin()


def test_gpu_ops_get_device_time_and_device_memory(fake_gpu):
    with profile(profile_memory=True) as prof:  # cuda=None: on, since a GPU is usable
        gpu_program()
    events = {e.name: e for e in prof.events()}
    mul, sin, model = events["mul"], events["sin"], events["model"]
    assert mul.device == "gpu" and mul.device_ns is not None and mul.device_ns > 0
    assert mul.self_device_memory_usage == 8 * 8 * 4 and mul.self_cpu_memory_usage == 0
    assert sin.device == "cpu" and sin.device_ns is None and sin.self_cpu_memory_usage == 12
    # a range's device time is what ran on the device inside it
    assert model.device_ns == sum(c.device_ns for c in model.cpu_children)
    assert model.self_device_time_total == 0
    assert events["MulBackward0"].device_ns > 0
    table = prof.key_averages().table(sort_by="cuda_time_total")
    for title in ("Self CUDA", "CUDA total", "CUDA time avg", "CUDA Mem", "Self CUDA Mem"):
        assert title in table
    assert "Self CUDA time total" in table


def test_the_trace_draws_the_device_track(fake_gpu, tmp_path):
    with profile() as prof:
        gpu_program()
    trace = json.loads(Path(prof.export_chrome_trace(tmp_path / "t.json")).read_text())
    check_trace(trace, {"model", "mul"})
    kernels = [e for e in trace["traceEvents"] if e.get("cat") == "kernel"]
    assert {e["name"] for e in kernels} >= {"mul", "exp", "MulBackward0"}
    assert all(e["pid"] == 0 and e["ts"] >= 0 for e in kernels)
    names = [e["args"]["name"] for e in trace["traceEvents"] if e["ph"] == "M"]
    assert "GPU 0" in names


def test_torch_spelling_with_cuda_activity(fake_gpu):
    torch = kit.torch
    acts = torch.profiler.supported_activities()
    assert torch.profiler.ProfilerActivity.CUDA in acts
    x = torch.ones(4, device="cuda")
    with torch.profiler.profile(activities=acts) as prof:
        x.exp()
    (row,) = prof.key_averages()
    assert row.key == "aten::exp" and row.device_time_total > 0
    assert row.cuda_time_total == row.device_time_total


def test_cpu_only_profile_on_a_gpu_machine(fake_gpu):
    x = kit.ones(4, device="gpu")
    with profile(cuda=False) as prof:
        x.exp()
    assert prof.events()[0].device_ns is None
    assert "CUDA" not in prof.key_averages().table()


def test_asking_for_cuda_without_a_gpu_says_why():
    if kit.backend.gpu_available():
        pytest.skip("a GPU is usable here")
    with pytest.raises(RuntimeError, match="no GPU is usable"):
        profile(cuda=True)
    # PyTorch-style code asking for CUDA activity still runs, on the CPU
    torch = kit.torch
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        torch.ones(2).exp()
    assert [e.key for e in prof.key_averages()] == ["aten::exp"]


@gpu_test
def test_device_times_on_a_real_gpu():
    x = kit.randn(512, 512, device="gpu", requires_grad=True)
    kit.synchronize()
    start = time.perf_counter_ns()
    with profile(profile_memory=True) as prof:
        gpu_program()
        (x @ x).sum().backward()
    wall = time.perf_counter_ns() - start
    matmul = next(e for e in prof.events() if e.name == "matmul")
    assert matmul.device_ns > 0 and matmul.self_device_memory_usage == 512 * 512 * 4
    top = [e for e in prof.events() if e.parent is None]
    assert sum(e._device_ns for e in top) <= wall
