"""`torch.profiler` and `torch.autograd.profiler` spelt by kit.torch, run side by side with real
PyTorch 2.13 where it is installed: the API a user's code relies on (attributes, table columns,
schedules, trace files) behaves the same. Structure only, never times."""

import json
import re
import warnings

import pytest
from test_profiler import check_trace
from torch_oracle import is_kit, libraries

import kit.torch

LIBS = libraries()
# PyTorch warns about warmup=0 and about clearing events between cycles; kit has neither.
torch_warnings = pytest.mark.filterwarnings("ignore::UserWarning")


def columns(table):
    """The column titles of a profiler table (its second line)."""
    return re.split(r"\s{2,}", table.splitlines()[1].strip())


def inputs(torch):
    return torch.ones(3, 4, requires_grad=True), torch.ones(4, 5, requires_grad=True)


def small_program(torch, x, w):
    with torch.profiler.record_function("model"):
        y = (x @ w).exp().sum()
    y.backward()


@pytest.mark.parametrize("torch", LIBS)
def test_key_averages_rows_carry_pytorchs_attributes(torch):
    activity = torch.profiler.ProfilerActivity.CPU
    x, w = inputs(torch)
    with torch.profiler.profile(activities=[activity], record_shapes=True,
                                profile_memory=True) as prof:
        small_program(torch, x, w)
    averages = prof.key_averages()
    keys = [e.key for e in averages]
    assert "model" in keys and "aten::exp" in keys and "ExpBackward0" in keys
    for e in averages:
        assert isinstance(e.count, int) and e.count >= 1
        assert 0 <= e.self_cpu_time_total <= e.cpu_time_total + 1e-9
        assert e.cpu_time == pytest.approx(e.cpu_time_total / e.count)
        for name in ("cpu_memory_usage", "self_cpu_memory_usage", "device_time_total",
                     "self_device_time_total", "input_shapes"):
            getattr(e, name)
    exp = next(e for e in averages if e.key == "aten::exp")
    assert exp.self_cpu_memory_usage == 60  # 3 x 5 float32, the same in both
    by_shape = prof.key_averages(group_by_input_shape=True)
    assert [e.input_shapes for e in by_shape if e.key == "aten::exp"] == [[[3, 5]]]
    assert averages.self_cpu_time_total == pytest.approx(
        sum(e.self_cpu_time_total for e in averages))


@pytest.mark.parametrize("torch", LIBS)
def test_table_columns_are_pytorchs(torch):
    profile = torch.profiler.profile
    x, w = inputs(torch)
    with profile(record_shapes=True, profile_memory=True) as prof:
        small_program(torch, x, w)
    table = prof.key_averages().table(sort_by="cpu_time_total", row_limit=3)
    assert columns(table) == ["Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total",
                              "CPU time avg", "CPU Mem", "Self CPU Mem", "# of Calls"]
    lines = table.splitlines()
    assert len(lines) == 3 + 3 + 2  # rule, titles, rule, 3 rows, rule, total
    assert lines[-1].startswith("Self CPU time total: ")
    # sorted by total CPU time (which op comes first is a matter of timing: not asserted)
    ranked = sorted(prof.key_averages(), key=lambda e: e.cpu_time_total, reverse=True)
    assert [line.split()[0] for line in lines[3:6]] == [e.key for e in ranked[:3]]
    assert "model" in [e.key for e in ranked]
    shaped = prof.key_averages(group_by_input_shape=True).table(row_limit=2)
    assert columns(shaped)[-1] == "Input Shapes"
    with profile() as plain:
        x.exp()
    assert columns(plain.key_averages().table())[-2:] == ["CPU time avg", "# of Calls"]
    assert str(plain.key_averages()) == plain.key_averages().table()


def test_a_bad_sort_key_names_the_good_ones():
    with kit.torch.profiler.profile() as prof:
        kit.torch.ones(2).exp()
    with pytest.raises(ValueError, match="cpu_time_total"):
        prof.key_averages().table(sort_by="bogus")
    assert prof.key_averages().table(sort_by="self_cuda_time_total")  # PyTorch's cuda spelling


@pytest.mark.parametrize("torch", LIBS)
def test_chrome_trace_of_both_is_valid(torch, tmp_path):
    x, w = inputs(torch)
    with torch.profiler.profile() as prof:
        small_program(torch, x, w)
    prof.export_chrome_trace(str(tmp_path / "t.json"))
    trace = json.loads((tmp_path / "t.json").read_text())
    check_trace(trace, {"model", "aten::exp"}, skip={"Trace"})  # PyTorch's own span
    cats = {e["name"]: e.get("cat") for e in trace["traceEvents"] if e["ph"] == "X"}
    assert (cats["model"], cats["aten::exp"]) == ("user_annotation", "cpu_op")


@pytest.mark.parametrize("torch", LIBS)
def test_record_function_nests_and_decorates(torch):
    @torch.profiler.record_function("outer")
    def outer(x):
        with torch.profiler.record_function("inner"):
            return x.exp()

    with torch.profiler.profile() as prof:
        outer(torch.ones(2))
    parents = {e.name: (e.cpu_parent.name if e.cpu_parent is not None else None)
               for e in prof.events()}
    assert parents["outer"] is None
    assert parents["inner"] == "outer"
    assert parents["aten::exp"] == "inner"


@torch_warnings
@pytest.mark.parametrize("params", [
    {"wait": 1, "warmup": 1, "active": 2},
    {"wait": 0, "warmup": 0, "active": 1, "repeat": 3},
    {"wait": 2, "warmup": 1, "active": 3, "repeat": 2, "skip_first": 3},
    {"wait": 1, "warmup": 1, "active": 1, "skip_first": 2, "skip_first_wait": 1},
])
@pytest.mark.parametrize("torch", LIBS)
def test_schedule_actions_match_pytorchs(torch, params):
    s = torch.profiler.schedule(**params)
    expected = {
        (1, 1, 2): "NONE WARMUP RECORD RECORD_AND_SAVE",
        (0, 0, 1): "RECORD_AND_SAVE",
    }
    got = [s(step).name for step in range(16)]
    key = (params["wait"], params["warmup"], params["active"])
    if key in expected and len(params) == 3:
        assert got[:4] == expected[key].split()
    assert got == [kit.torch.profiler.schedule(**params)(step).name for step in range(16)]


@torch_warnings
@pytest.mark.parametrize("torch", LIBS)
def test_a_schedule_records_its_active_steps_and_hands_each_cycle_over(torch):
    saved = []

    def ready(prof):
        saved.append(sorted((e.key, e.count) for e in prof.key_averages()))

    x = torch.ones(3)
    with torch.profiler.profile(
        schedule=torch.profiler.schedule(wait=1, warmup=1, active=2, repeat=2),
        on_trace_ready=ready,
    ) as prof:
        for _ in range(10):
            x.exp()
            prof.step()
    cycle = [("ProfilerStep*", 2), ("aten::exp", 2)]
    assert saved == [cycle, cycle]
    assert prof.step_num == 10


@pytest.mark.parametrize("torch", LIBS)
def test_without_a_schedule_on_trace_ready_runs_once_at_the_end(torch):
    calls = []
    with torch.profiler.profile(on_trace_ready=lambda p: calls.append(len(p.events()))) as prof:
        torch.ones(2).exp()
        prof.step()
        torch.ones(2).exp()
    assert calls == [len(prof.events())]
    assert not [e for e in prof.events() if e.key == "ProfilerStep*"]



def recorded_after(torch, steps, acc_events=False, **params):
    """(key, count) of what a profile reports after `steps` steps of a schedule."""
    x = torch.ones(3)
    with torch.profiler.profile(schedule=torch.profiler.schedule(**params),
                                acc_events=acc_events) as prof:
        for _ in range(steps):
            x.exp()
            prof.step()
    return sorted((e.key, e.count) for e in prof.key_averages())


@torch_warnings  # PyTorch warns once per process about the dropped cycle: kit's warning below
@pytest.mark.parametrize("torch", LIBS)
def test_a_new_cycle_drops_the_last_ones_events(torch):
    five = [("ProfilerStep*", 5), ("aten::exp", 5)]
    # the loop ends on the step after the cycle, when the next cycle's warm-up has begun
    assert recorded_after(torch, 7, wait=0, warmup=2, active=5) == []
    assert recorded_after(torch, 9, wait=1, warmup=2, active=5) == []  # after a wait step
    assert recorded_after(torch, 6, wait=0, warmup=0, active=1) == [("ProfilerStep*", 1)]
    # a second cycle replaces the first; the wait step after it drops nothing
    assert recorded_after(torch, 8, wait=1, warmup=1, active=2) == [
        ("ProfilerStep*", 2), ("aten::exp", 2)]
    # repeat=1: no next cycle; acc_events=True: every cycle kept
    assert recorded_after(torch, 7, wait=0, warmup=2, active=5, repeat=1) == five
    assert recorded_after(torch, 10, wait=0, warmup=2, active=5, repeat=1) == five
    assert recorded_after(torch, 7, acc_events=True, wait=0, warmup=2, active=5) == five
    assert recorded_after(torch, 14, acc_events=True, wait=0, warmup=2, active=5) == [
        ("ProfilerStep*", 10), ("aten::exp", 10)]


def test_kit_says_when_a_cycle_is_dropped_and_only_then():
    with pytest.warns(UserWarning, match="new profiling cycle") as caught:
        recorded_after(kit.torch, 7, wait=0, warmup=2, active=5)
    assert len(caught) == 1 and "repeat=1" in str(caught[0].message)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        recorded_after(kit.torch, 7, wait=0, warmup=2, active=5, repeat=1)
        recorded_after(kit.torch, 14, acc_events=True, wait=0, warmup=2, active=5)


def test_the_dropped_cycle_warning_names_the_users_line():
    prof = kit.torch.profiler.profile()
    with prof:
        kit.torch.ones(2).exp()
    with pytest.warns(UserWarning, match="acc_events=True") as caught:
        with prof:  # a profile used again starts a new cycle, as in PyTorch
            kit.torch.ones(2).sin()
    assert caught[0].filename == __file__
    assert [e.key for e in prof.key_averages()] == ["aten::sin"]

def test_tensorboard_trace_handler_writes_one_trace_per_cycle(tmp_path):
    torch = kit.torch
    handler = torch.profiler.tensorboard_trace_handler(str(tmp_path / "tb"), worker_name="w")
    with pytest.warns(UserWarning, match="new profiling cycle"), torch.profiler.profile(
            schedule=torch.profiler.schedule(wait=0, warmup=1, active=1),
            on_trace_ready=handler) as prof:
        for _ in range(4):
            torch.ones(2).exp()
            prof.step()
    files = sorted((tmp_path / "tb").iterdir())
    assert len(files) == 2 and all(f.name.startswith("w.") for f in files)
    assert all(f.name.endswith(".pt.trace.json") for f in files)
    check_trace(json.loads(files[0].read_text()), {"aten::exp"})


@pytest.mark.parametrize("torch", LIBS)
def test_the_older_autograd_profiler_spelling(torch):
    x = torch.ones(3, requires_grad=True)
    with torch.autograd.profiler.profile(record_shapes=True) as prof:
        (x * 2).sum().backward()
    keys = [e.key for e in prof.key_averages()]
    assert keys[:2] == ["aten::mul", "aten::sum"] or "aten::mul" in keys
    assert "SumBackward0" in keys and "MulBackward0" in keys
    assert columns(prof.table())[0] == "Name"
    assert prof.self_cpu_time_total == pytest.approx(prof.function_events.self_cpu_time_total)
    assert prof.total_average().key == "Total"


def test_disabled_autograd_profiler_records_nothing():
    with kit.torch.autograd.profiler.profile(enabled=False) as prof:
        kit.torch.ones(2).exp()
    assert list(prof.function_events) == []  # PyTorch raises AttributeError here


def test_options_kit_does_not_have_are_refused_with_the_fix():
    for option in ("with_flops", "with_modules"):
        with pytest.raises(NotImplementedError, match="record_function"):
            kit.torch.profiler.profile(**{option: True})
    with pytest.raises(ValueError, match="ProfilerActivity.CPU"):
        kit.torch.profiler.profile(activities=["cpu"])


@pytest.mark.parametrize("torch", LIBS)
def test_custom_function_rows_are_named_by_the_class(torch):
    class Twice(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    x = torch.ones(2, requires_grad=True)
    with torch.profiler.profile() as prof:
        Twice.apply(x).sum().backward()
    keys = {e.key for e in prof.key_averages()}
    assert {"Twice", "TwiceBackward"} <= keys
    if is_kit(torch):
        assert kit.torch.profiler.supported_activities() >= {
            kit.torch.profiler.ProfilerActivity.CPU}


@torch_warnings
@pytest.mark.parametrize("torch", LIBS)
def test_optimizer_step_and_zero_grad_are_ranges_named_as_pytorchs(torch):
    """PyTorch's optimisers label their step and zero_grad in a profile
    ("Optimizer.step#SGD.step"), a user's subclass under its own name, twice nested when its step
    calls the base's (PyTorch wraps each class's step); ops inside nest in the range."""

    class Clipped(torch.optim.SGD):
        def step(self, closure=None):
            for group in self.param_groups:
                for p in group["params"]:
                    p.grad.clamp_(-1, 1)
            return super().step(closure)

    w = torch.ones(3, requires_grad=True)
    for optimizer in (torch.optim.SGD([w], lr=0.1), torch.optim.Adam([w]), Clipped([w], lr=0.1)):
        (w * 2).sum().backward()
        name = type(optimizer).__name__
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
            optimizer.step()
            optimizer.zero_grad()
        keys = [e.key for e in prof.events()]
        assert keys.count(f"Optimizer.step#{name}.step") == (2 if name == "Clipped" else 1), keys
        assert keys.count(f"Optimizer.zero_grad#{name}.zero_grad") == 1, keys
        if is_kit(torch) and name == "Clipped":
            outer, inner = (e for e in prof.events() if e.key == "Optimizer.step#Clipped.step")
            assert inner.cpu_parent is outer
            clamp = next(e for e in prof.events() if e.key == "aten::clamp_")
            assert clamp.cpu_parent is outer
    assert w.grad is None


@pytest.mark.parametrize("torch", LIBS)
def test_in_place_ops_are_one_event_of_their_own_name(torch):
    """x.clamp_(), x += y, x /= 2: one aten::clamp_, aten::add_, aten::div_ event each, as in
    PyTorch (kit computes them with the out-of-place op, which is not an event of its own)."""
    g = torch.ones(3)
    x = torch.ones(3, requires_grad=True) * 1
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        g.clamp_(-1, 1)
        g.add_(1)
        g += g
        g /= 2
        g.mul_(3)
        g.sub_(1)
        x.exp_()
        x.relu_()
    top = [e.key for e in prof.events() if e.cpu_parent is None]
    assert top == ["aten::clamp_", "aten::add_", "aten::add_", "aten::div_", "aten::mul_",
                   "aten::sub_", "aten::exp_", "aten::relu_"]
