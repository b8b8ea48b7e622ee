"""kit.profiler's core: which events a known program makes, how they nest, their memory, what
is left out (other threads, code outside the block), and the Chrome trace. Structure only: no
test asserts how long anything took, only that the times add up."""

import json
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import kit
import kit.mx as mx
import kit.torch as torch
from kit._modes import STATE
from kit.func import grad, vmap
from kit.profiler import profile, record_function


def counts(prof, phase=None):
    return {e.key: e.count for e in prof.key_averages()} if phase is None else {
        k: n for k, n in _counts(prof.events(), phase).items()}


def _counts(events, phase):
    out = {}
    for e in events:
        if e.phase == phase:
            out[e.key] = out.get(e.key, 0) + 1
    return out


class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 2 * x * g


class Cube(mx.operator.CustomOp):
    def forward(self, is_train, req, in_data, out_data, aux):
        self.assign(out_data[0], req[0], in_data[0] * in_data[0] * in_data[0])

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        self.assign(in_grad[0], req[0], 3 * in_data[0] * in_data[0] * out_grad[0])


@mx.operator.register("profiled_cube")
class CubeProp(mx.operator.CustomOpProp):
    def __init__(self):
        super().__init__(need_top_grad=True)

    def create_operator(self, ctx, shapes, dtypes):
        return Cube()


def program(n=3):
    """n muls and a sum forward, then backward: known counts per op."""
    x = kit.tensor(np.arange(12, dtype=np.float32).reshape(3, 4), requires_grad=True)
    w = kit.tensor(np.ones((3, 4), np.float32))
    h = x
    for _ in range(n):
        h = h * w
    loss = h.sum().exp()
    loss.backward()
    return x


def test_counts_per_op_equal_the_ops_run_forward_and_backward():
    with profile() as prof:
        program(3)
    assert _counts(prof.events(), "forward") == {"mul": 3, "sum": 1, "exp": 1}
    assert _counts(prof.events(), "backward") == {
        "ExpBackward0": 1, "SumBackward0": 1, "MulBackward0": 3}
    assert all(e.kind == "op" for e in prof.events())
    assert [e.count for e in prof.key_averages()] == [3, 1, 1, 1, 1, 3]


def test_user_function_and_custom_op_appear_under_their_names():
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    a = mx.nd.array([1.0, 2.0])
    a.attach_grad()
    with profile() as prof:
        Square.apply(x).sum().backward()
        with mx.autograd.record():
            y = mx.nd.Custom(a, op_type="profiled_cube")
        y.backward()
    events = {(e.name, e.phase): e for e in prof.events()}
    square = events[("Square", "forward")]
    assert square.kind == "function" and square.function is Square
    assert [c.name for c in square.cpu_children] == ["mul"]  # the ops it ran, inside it
    assert events[("SquareBackward", "backward")].kind == "function"
    assert ("profiled_cube", "forward") in events
    assert ("profiled_cubeBackward", "backward") in events
    cube_ops = [c.name for c in events[("profiled_cube", "forward")].cpu_children]
    assert cube_ops == ["mul", "mul"]


def test_record_function_ranges_nest_as_a_block_and_as_a_decorator():
    @record_function("step")
    def step(x):
        with record_function("forward"):
            y = (x * 2).sum()
        y.backward()

    x = kit.ones(3, requires_grad=True)
    with profile() as prof:
        step(x)
        step(x)
    steps = [e for e in prof.events() if e.name == "step"]
    assert len(steps) == 2 and all(e.parent is None and e.kind == "range" for e in steps)
    for s in steps:
        inner = [c.name for c in s.cpu_children]
        assert inner == ["forward", "SumBackward0", "MulBackward0"]
        forward = s.cpu_children[0]
        assert [c.name for c in forward.cpu_children] == ["mul", "sum"]
        for child in s.cpu_children:
            assert s.start_ns <= child.start_ns <= child.end_ns <= s.end_ns
    step(x)  # no profiler: the decorator does nothing
    assert len([e for e in prof.events() if e.name == "step"]) == 2


def test_self_times_add_up_to_the_top_level_times_within_wall_time():
    start = time.perf_counter_ns()
    with profile() as prof:
        with record_function("all"):
            program(5)
        program(2)
    wall = time.perf_counter_ns() - start
    events = prof.events()
    top = [e for e in events if e.parent is None]
    assert sum(e._self_cpu_ns for e in events) == sum(e._cpu_ns for e in top)
    assert sum(e._cpu_ns for e in top) <= wall
    assert all(e._self_cpu_ns >= 0 for e in events)
    total = prof.key_averages().total_average()
    assert total.self_cpu_time_total == pytest.approx(events.self_cpu_time_total)
    assert total.self_cpu_time_total * 1e3 <= wall


def test_memory_is_the_new_arrays_each_op_returns():
    x = kit.tensor(np.ones((3, 4), np.float32), requires_grad=True)
    with profile(profile_memory=True) as prof:
        y = x * x  # 48 bytes
        y.t()  # views: no new memory
        y.reshape(12)
        with record_function("outer"):
            Square.apply(y).sum().backward()
    rows = {e.name: e for e in prof.events() if e.phase != "backward"}
    assert rows["mul"].self_cpu_memory_usage == 48
    assert rows["transpose"].self_cpu_memory_usage == 0
    assert rows["reshape"].self_cpu_memory_usage == 0
    # the Function's output is its inner mul's: counted once, in the mul
    assert rows["Square"].self_cpu_memory_usage == 0 and rows["Square"].cpu_memory_usage == 48
    outer = rows["outer"]
    assert outer.self_cpu_memory_usage == 0
    assert outer.cpu_memory_usage == sum(c.cpu_memory_usage for c in outer.cpu_children)
    backward = {e.name: e for e in prof.events() if e.phase == "backward"}
    assert backward["SquareBackward"].cpu_memory_usage == 96  # 2 * x * g: two new arrays
    table = prof.key_averages().table()
    assert "CPU Mem" in table and "Self CPU Mem" in table
    with profile() as plain:
        x * x
    assert plain.events()[0].self_cpu_memory_usage == 0
    assert "CPU Mem" not in plain.key_averages().table()


def test_nothing_is_recorded_outside_the_block_and_the_hooks_are_put_back():
    dispatch, function = STATE.dispatch, STATE.function
    x = kit.ones(2, requires_grad=True)
    (x * 2).sum().backward()
    with profile() as prof:
        assert kit.profiler.current() is not None
        kit.exp(x)
    (x * 3).sum().backward()
    assert [e.name for e in prof.events()] == ["exp"]
    assert kit.profiler.current() is None
    assert (STATE.depth, STATE.transforms) == (0, 0)
    assert (STATE.dispatch, STATE.function) == (dispatch, function)


def test_ops_of_other_threads_are_not_recorded_and_each_thread_can_profile():
    x = kit.ones(3)
    results = {}

    def worker(name, op):
        with profile() as prof:
            op(x)
        results[name] = prof.events()

    with profile() as main:
        t = threading.Thread(target=lambda: [kit.exp(x) for _ in range(3)])
        t.start()
        t.join()
        kit.sin(x)
    assert [e.name for e in main.events()] == ["sin"]  # as PyTorch: the thread that started it
    threads = [threading.Thread(target=worker, args=(n, op))
               for n, op in (("a", kit.cos), ("b", kit.tanh))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [e.name for e in results["a"]] == ["cos"]
    assert [e.name for e in results["b"]] == ["tanh"]
    assert results["a"][0].thread != results["b"][0].thread


def test_a_profile_is_stopped_in_its_own_thread_and_profilers_do_not_nest():
    prof = profile()
    prof.start()
    errors = []
    t = threading.Thread(target=lambda: errors.append(_raises(prof.stop)))
    t.start()
    t.join()
    assert "another thread" in str(errors[0])
    inner = profile()
    with pytest.raises(RuntimeError, match="already running in this thread"):
        inner.start()
    prof.stop()
    with inner:  # refused before, usable now
        kit.ones(1).exp()
    assert [e.name for e in inner.events()] == ["exp"]
    with pytest.raises(RuntimeError, match="not running"):
        prof.step()


def _raises(fn):
    try:
        fn()
    except RuntimeError as exc:
        return exc
    return None


def test_an_error_inside_an_op_leaves_the_profile_closed_and_consistent():
    with pytest.raises(Exception, match="shapes"):
        with profile() as prof:
            kit.ones(2) + kit.ones(3)
    assert kit.profiler.current() is None
    (event,) = prof.events()
    assert event.name == "add" and event.end_ns >= event.start_ns


def test_transforms_give_the_same_results_under_the_profiler():
    class Scale(kit.Function):
        generate_vmap_rule = True

        @staticmethod
        def forward(x):
            return x * 3

        @staticmethod
        def setup_context(ctx, inputs, output):
            pass

        @staticmethod
        def backward(ctx, g):
            return g * 3

    xs = kit.tensor(np.arange(6, dtype=np.float64).reshape(2, 3))

    def f(x):
        return (Scale.apply(x).sin() * x).sum()

    expected = vmap(grad(f))(xs)
    with profile() as prof:
        got = vmap(grad(f))(xs)
    np.testing.assert_allclose(got.numpy(), expected.numpy())
    names = {e.name for e in prof.events()}
    assert {"Scale", "sin", "mul", "sum"} <= names


def test_create_graph_backward_records_the_ops_inside_each_node():
    x = kit.tensor([1.0, 2.0], requires_grad=True)
    with profile() as prof:
        (g,) = kit.grad((x * x * x).sum(), x, create_graph=True)
        g.sum().backward()
    first = [e for e in prof.events() if e.name == "MulBackward0" and e.parent is None]
    assert first and any(e.cpu_children for e in first)  # its rule ran recorded ops
    assert all(c.parent is e for e in first for c in e.cpu_children)


def test_with_stack_and_record_shapes():
    x = kit.ones((2, 3))
    with profile(record_shapes=True, with_stack=True) as prof:
        kit.matmul(x, x.t())
    matmul = next(e for e in prof.events() if e.name == "matmul")
    assert matmul.input_shapes == [[2, 3], [3, 2]]
    assert "test_profiler.py" in matmul.stack[0] and "test_with_stack" in matmul.stack[0]
    by_shape = prof.key_averages(group_by_input_shape=True)
    assert "Input Shapes" in by_shape.table()
    assert "Source Location" in prof.key_averages(group_by_stack_n=1).table()


def test_detect_anomaly_still_names_the_op_while_profiling():
    x = kit.tensor([0.0, 1.0], requires_grad=True)
    with profile() as prof, kit.detect_anomaly():
        with pytest.raises(RuntimeError, match="nan"):
            (x.sqrt() * 0).sum().backward()
    assert "SqrtBackward0" in [e.name for e in prof.events()]


def test_chrome_trace_is_valid_trace_event_format(tmp_path):
    with profile(record_shapes=True, profile_memory=True) as prof:
        with record_function("model"):
            program(2)
    path = prof.export_chrome_trace(tmp_path / "trace.json")
    trace = json.loads(Path(path).read_text())
    check_trace(trace, {"model", "mul", "MulBackward0"})
    memory = [e for e in trace["traceEvents"] if e["ph"] == "i" and e["name"] == "[memory]"]
    assert memory and all(e["args"]["Bytes"] > 0 for e in memory)
    prof.export_chrome_trace(tmp_path / "trace.json.gz")  # compressed when asked


def check_trace(trace, names, skip=()):
    """The Trace Event Format's complete events: ts/dur in us, pid/tid, nesting per thread
    (events of the categories in `skip` left out)."""
    events = [e for e in trace["traceEvents"] if e["ph"] == "X" and e.get("cat") not in skip]
    assert names <= {e["name"] for e in events}
    for e in events:
        assert isinstance(e["pid"], int) and isinstance(e["tid"], int)
        assert e["ts"] >= 0 and e["dur"] >= 0 and isinstance(e["name"], str)
    by_thread = {}
    for e in events:
        by_thread.setdefault((e["pid"], e["tid"]), []).append(e)
    for group in by_thread.values():
        group.sort(key=lambda e: (e["ts"], -e["dur"]))
        open_ends = []
        for e in group:
            while open_ends and open_ends[-1] <= e["ts"] + 1e-3:
                open_ends.pop()
            end = e["ts"] + e["dur"]
            assert not open_ends or end <= open_ends[-1] + 1e-3, f"{e['name']} overlaps"
            open_ends.append(end)


@pytest.mark.parametrize("module", ["kit.profiler", "kit.profiler._session", "kit.torch.profiler"])
def test_docstring_examples_run(module):
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(module))
    assert result.attempted > 0 and result.failed == 0


def test_a_client_reports_work_kit_cannot_see_as_events():
    """What kit.compile's replay does for a fused kernel: one event, its outputs' memory."""
    x = kit.ones(4)
    with profile(profile_memory=True) as prof:
        rec = kit.profiler.current()
        event = rec.begin("fused(mul, add, tanh)", kind="fused", phase="forward",
                          op="fused", inputs=(x,))
        out = kit.Tensor(np.tanh(x.numpy() * 2 + 1))
        rec.end(event, out, (x,))
    (row,) = prof.key_averages()
    assert (row.key, row.kind, row.count, row.self_cpu_memory_usage) == (
        "fused(mul, add, tanh)", "fused", 1, 16)
    check_trace(prof.chrome_trace(), {"fused(mul, add, tanh)"})


def test_a_profile_started_over_another_level_passes_every_call_through_it():
    """A profile inside another hook's block (kit.compile's trace) times each call and leaves
    running it to that hook."""
    from kit._modes import Mode

    seen = []

    class Spy(Mode):
        def switches(self, state):
            outer = state.dispatch

            def dispatch(op, fn, *args):
                seen.append(op)
                return outer(op, fn, *args)

            return {"depth": state.depth + 1, "dispatch": dispatch}

    x = kit.ones(2)
    with Spy(), profile() as prof:
        kit.exp(x)
    assert seen == ["exp"] and [e.name for e in prof.events()] == ["exp"]
