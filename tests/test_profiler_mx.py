"""`mx.profiler` spelt by kit.mx, end to end: set_config / set_state / dumps / dump, MXNet's
names (operators, `_backward_`, a CustomOp's `::pure_python` and the ops inside it), the
aggregate table and its JSON, pause and resume, the profiling objects. Programs adapted from
MXNet's own tests/python/unittest/test_profiler.py."""

import json
import threading
from pathlib import Path

import numpy as np
import pytest
from test_profiler import check_trace

import kit
import kit.mx as mx
from kit.mx import profiler


@pytest.fixture(autouse=True)
def fresh_profiler(monkeypatch):
    """Each test gets the process's profiler as a new process has it."""
    monkeypatch.setattr(profiler, "_PROFILER", profiler._Profiler())
    yield
    profiler.set_state("stop")
    assert kit.profiler.current() is None  # nothing left running in this thread


def enable(tmp_path, **config):
    profiler.set_config(profile_all=True, aggregate_stats=True,
                        filename=str(tmp_path / "profile.json"), **config)
    profiler.set_state("run")


class Sigmoid(mx.operator.CustomOp):
    def forward(self, is_train, req, in_data, out_data, aux):
        x = in_data[0].asnumpy()
        y = 1.0 / (1.0 + np.exp(-x))
        self.assign(out_data[0], req[0], mx.nd.array(y))
        mx.nd.zeros(shape=(100, 100)) * 2  # an op inside a CustomOp: "MySigmoid::..."

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        y = out_data[0].asnumpy()
        dy = out_grad[0].asnumpy()
        self.assign(in_grad[0], req[0], mx.nd.array(dy * (1.0 - y) * y))


@mx.operator.register("MySigmoid")
class SigmoidProp(mx.operator.CustomOpProp):
    def __init__(self):
        super().__init__(True)

    def infer_shape(self, in_shapes):
        return (in_shapes[0],), (in_shapes[0],), ()

    def create_operator(self, ctx, in_shapes, in_dtypes):
        return Sigmoid()


def test_custom_operator_profiling(tmp_path):
    enable(tmp_path)
    profiler.dumps(reset=True)
    x = mx.nd.array([0, 1, 2, 3])
    x.attach_grad()
    with mx.autograd.record():
        y = mx.nd.Custom(x, op_type="MySigmoid")
    y.backward()
    mx.nd.waitall()
    profiler.dump(False)
    stats = json.loads(profiler.dumps(format="json"))
    custom = stats["Time"]["Custom Operator"]
    assert {"MySigmoid::pure_python", "_backward_MySigmoid::pure_python",
            "MySigmoid::broadcast_mul"} <= set(custom)
    assert custom["MySigmoid::pure_python"]["Count"] == 1


def test_aggregate_counts_per_operator_and_backward_names(tmp_path):
    enable(tmp_path)
    profiler.dumps(reset=True)
    inp = mx.nd.zeros(shape=(100, 100))
    inp.attach_grad()
    with mx.autograd.record():
        y = mx.nd.sqrt(inp + 1)
        z = y * (inp + 1)
    z.backward()
    stats = json.loads(profiler.dumps(format="json"))["Time"]["operator"]
    assert stats["sqrt"]["Count"] == 1
    assert stats["broadcast_add"]["Count"] == 2
    assert stats["_backward_sqrt"]["Count"] == 1
    assert stats["_backward_broadcast_mul"]["Count"] == 1
    row = stats["sqrt"]
    assert row["Min"] <= row["Avg"] <= row["Max"] <= row["Total"]


def test_the_table_is_mxnets(tmp_path):
    enable(tmp_path)
    a = mx.nd.ones((10, 10))
    (a * a).exp()
    text = profiler.dumps()
    lines = text.splitlines()
    assert lines[1:3] == ["Profile Statistics:",
                          "\tNote the difference in units for different entries."]
    at = lines.index("operator")
    assert lines[at + 1] == "================="
    assert lines[at + 2].split() == ["Name", "Total", "Count", "Time", "(ms)", "Min", "Time",
                                     "(ms)", "Max", "Time", "(ms)", "Avg", "Time", "(ms)"]
    rows = [line.split() for line in lines[at + 4:] if line and not line.startswith("Device")]
    names = [r[0] for r in rows[:2]]
    assert sorted(names) == ["broadcast_mul", "exp"] and all(len(r) == 6 for r in rows[:2])
    assert "Device Storage" in lines  # profile_all: memory too
    storage = lines[lines.index("Device Storage") + 2]
    assert "Min Use  (kb)" in storage and "Time" not in storage


@pytest.mark.parametrize("sort_by", ["total", "avg", "min", "max", "count"])
@pytest.mark.parametrize("ascending", [False, True])
def test_aggregate_stats_sorting(tmp_path, sort_by, ascending):
    enable(tmp_path)
    a = mx.nd.ones((4, 4))
    for _ in range(3):
        a = a * 2
    a.exp().sum()
    stats = json.loads(profiler.dumps(format="json", sort_by=sort_by, ascending=ascending),
                       object_pairs_hook=dict)
    key = sort_by.capitalize()
    for items in stats["Time"].values():
        values = [item[key] for item in items.values()]
        assert values == sorted(values, reverse=not ascending)


def test_dump_writes_a_chrome_trace_with_tasks_counters_and_markers(tmp_path):
    enable(tmp_path)
    domain = profiler.Domain("PythonDomain")
    task = profiler.Task(domain, "step")
    frame = domain.new_frame("iteration")
    event = profiler.Event("load")
    counter = profiler.Counter(domain, "batches", 5)
    frame.start()
    task.start()
    event.start()
    mx.nd.ones((2, 2)).exp()
    event.stop()
    task.stop()
    frame.stop()
    counter += 1
    profiler.Marker(domain, "epoch-0").mark("process")
    path = profiler.dump()
    trace = json.loads(Path(path).read_text())
    check_trace(trace, {"step", "iteration", "load", "exp"})
    cats = {e["name"]: e["cat"] for e in trace["traceEvents"] if e["ph"] == "X"}
    assert cats["step"] == "PythonDomain" and cats["iteration"] == "PythonDomain,frame"
    assert cats["load"] == "event" and cats["exp"] == "operator"
    counters = [e["args"]["batches"] for e in trace["traceEvents"] if e["ph"] == "C"]
    assert counters == [5, 6]
    assert [e["s"] for e in trace["traceEvents"] if e.get("name") == "epoch-0"] == ["p"]
    stats = json.loads(profiler.dumps(format="json"))["Time"]["PythonDomain"]
    assert stats["batches"]["Total"] == 6 and stats["step"]["Count"] == 1


def test_pause_and_resume(tmp_path):
    enable(tmp_path)
    a = mx.nd.ones(3)
    a.exp()
    profiler.pause()
    a.sin()
    profiler.resume()
    a.cos()
    profiler.set_state("stop")
    a.tanh()
    names = set(json.loads(profiler.dumps(format="json"))["Time"]["operator"])
    assert names == {"exp", "cos"}


def test_reset_and_stats_only_when_asked(tmp_path):
    profiler.set_config(filename=str(tmp_path / "p.json"))  # aggregate_stats defaults to False
    profiler.set_state("run")
    mx.nd.ones(2).exp()
    assert "aggregate_stats=True" in profiler.dumps()
    enable(tmp_path)
    mx.nd.ones(2).exp()
    assert "exp" in profiler.dumps(reset=True)
    assert "exp" not in profiler.dumps()


def test_profile_imperative_off_leaves_operators_out(tmp_path):
    enable(tmp_path)
    profiler.set_state("stop")
    profiler.set_config(profile_symbolic=False, profile_imperative=False, aggregate_stats=True,
                        filename=str(tmp_path / "p.json"))
    profiler.set_state("run")
    task = profiler.Task(profiler.Domain("D"), "work")
    task.start()
    mx.nd.ones(2).exp()
    task.stop()
    stats = json.loads(profiler.dumps(format="json"))["Time"]
    assert set(stats) == {"D"}


def test_misuse_is_refused_with_a_clear_error(tmp_path):
    with pytest.raises(mx.MXNetError, match="Cannot find argument 'profile_everything'"):
        profiler.set_config(profile_everything=True)
    with pytest.raises(ValueError, match="'run' or 'stop'"):
        profiler.set_state("start")
    with pytest.raises(ValueError, match="sort_by"):
        enable(tmp_path)
        profiler.dumps(sort_by="median")
    with pytest.raises(NotImplementedError, match="kvstore server"):
        profiler.set_state("run", profile_process="server")
    errors = []
    t = threading.Thread(target=lambda: errors.append(_error(profiler.set_state, "stop")))
    t.start()
    t.join()
    assert "another thread" in str(errors[0])
    assert kit.profiler.current() is not None  # still running, and stopped by its own thread
    profiler.set_state("stop")
    assert kit.profiler.current() is None


def _error(fn, *args):
    try:
        fn(*args)
    except RuntimeError as exc:
        return exc
    return None


def test_each_dump_writes_what_came_after_the_last_one(tmp_path):
    """MXNet empties its queue of events as it writes them, so profiling a cell run twice in a
    notebook gives a trace of the second run, not of both."""
    def traced(path):
        return [e["name"] for e in json.loads(Path(path).read_text())["traceEvents"]
                if e["ph"] in ("X", "C")]

    counter = profiler.Counter(profiler.Domain("D"), "batches")
    for _ in range(2):  # the same cell, run twice
        enable(tmp_path)
        mx.nd.ones(2).exp()
        counter += 1
        profiler.set_state("stop")
        assert traced(profiler.dump()) == ["exp", "batches"]
    enable(tmp_path)
    mx.nd.ones(2).sin()
    profiler.dump(finished=False)
    mx.nd.ones(2).cos()
    assert traced(profiler.dump()) == ["cos"]
    stats = json.loads(profiler.dumps(format="json"))["Time"]  # the statistics keep everything
    assert stats["operator"]["exp"]["Count"] == 2 and stats["D"]["batches"]["Total"] == 2
