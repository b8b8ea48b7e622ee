"""A profiling session: `profile` (a block, or start/stop), its schedule, `record_function`.

The session records in the thread that starts it (as PyTorch's profiler does: work other threads
do meanwhile is not in it); a schedule turns recording on and off at `step()` calls, so the
steps it skips cost nothing.
"""

from __future__ import annotations

import contextlib
import enum
import sys
import threading
import warnings

from kit import backend
from kit._modes import STATE, enter, leave
from kit.profiler import _trace
from kit.profiler._record import _KIT_DIR, Recorder, Recording
from kit.profiler._stats import EventList


class ProfilerAction(enum.Enum):
    """What a schedule asks for at a step (PyTorch's names and values)."""

    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3


_RECORDING = (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE)
_CYCLE_ENDS = (ProfilerAction.NONE, ProfilerAction.RECORD_AND_SAVE)  # what a new cycle follows


def schedule(*, wait, warmup, active, repeat=0, skip_first=0, skip_first_wait=0):
    """PyTorch's schedule: after `skip_first` steps, cycles of `wait` idle steps, `warmup`
    steps, and `active` recorded steps (the last one saves: `on_trace_ready` runs), `repeat`
    times (0: for as long as steps come). `skip_first_wait=1` drops the first cycle's wait.

    >>> s = schedule(wait=1, warmup=1, active=2)
    >>> [s(step).name for step in range(5)]
    ['NONE', 'WARMUP', 'RECORD', 'RECORD_AND_SAVE', 'NONE']
    """
    for name, value in (("wait", wait), ("warmup", warmup), ("active", active),
                        ("repeat", repeat), ("skip_first", skip_first)):
        if not isinstance(value, int) or value < 0:
            raise ValueError(f"kit.profiler.schedule: {name} must be an int >= 0, got {value!r}")
    if active < 1:
        raise ValueError("kit.profiler.schedule: active must be at least 1 (the steps recorded)")
    cycle = wait + warmup + active

    def action(step):
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        if skip_first_wait:
            step += wait
        if repeat and step // cycle >= repeat:
            return ProfilerAction.NONE
        at = step % cycle
        if at < wait:
            return ProfilerAction.NONE
        if at < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if at < cycle - 1 else ProfilerAction.RECORD_AND_SAVE

    return action


class profile:  # noqa: N801 - PyTorch's name
    """Record every op, backward node, Function and `record_function` range the thread runs.

        with kit.profiler.profile(profile_memory=True) as prof:
            loss = model(x).sum()
            loss.backward()
        print(prof.key_averages().table(sort_by="cpu_time_total", row_limit=10))
        prof.export_chrome_trace("trace.json")  # open it in Perfetto or chrome://tracing

    `record_shapes`: each event keeps its inputs' shapes (`key_averages(group_by_input_shape=
    True)`); `profile_memory`: the bytes of the new arrays each op returns; `with_stack`: the
    Python lines that called it (`key_averages(group_by_stack_n=5)`); `cuda` (default: whether a
    GPU is usable): time work on the GPU with CUDA events, so a table gets device columns.
    `schedule` and `on_trace_ready(prof)`: record only some steps (`prof.step()`); as in
    PyTorch, a cycle that begins drops the events of the cycle before (`acc_events=True` keeps
    them, a schedule with `repeat=1` has one cycle).
    """

    spelling = None  # a front end's naming: fn(event) -> (name, category) (kit.torch, kit.mx)
    process_name = "python"

    def __init__(self, *, cuda=None, record_shapes=False, profile_memory=False,
                 with_stack=False, schedule=None, on_trace_ready=None, acc_events=False):
        if cuda and not backend.gpu_available():
            raise RuntimeError(
                f"kit.profiler: cannot profile CUDA activity, no GPU is usable: "
                f"{backend.gpu_unavailable_reason()}. Fix: leave it out (profile the CPU only)"
            )
        self.cuda = backend.gpu_available() if cuda is None else bool(cuda)
        self.record_shapes = bool(record_shapes)
        self.profile_memory = bool(profile_memory)
        self.with_stack = bool(with_stack)
        self.schedule = schedule
        self.on_trace_ready = on_trace_ready
        self.acc_events = acc_events
        self.step_num = 0
        self.current_action = None
        self._recorder = None  # the cycle being recorded
        self._mode = None
        self._step_range = None
        self._kept = []  # finished recordings whose events `events()` returns
        self._thread = None

    # --- running -------------------------------------------------------------------------
    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()
        return False

    def start(self):
        """Start the session in this thread (what entering the block does)."""
        if self._thread is not None:
            raise RuntimeError("kit.profiler: this profile is already running; call stop() first")
        self.step_num = 0
        self.current_action = self._action(0)
        if self.current_action in _RECORDING:
            self._begin()  # first: a profiler already running here refuses this one
        elif self.current_action is ProfilerAction.WARMUP:
            self._new_cycle()
        self._thread = threading.get_ident()

    def stop(self):
        """Stop the session (what leaving the block does); a recording in progress is saved."""
        self._check_thread("stop")
        self._thread = None
        self.current_action = None
        if self._recorder is not None:
            self._end(save=True)

    def step(self):
        """Mark the end of a training step: the schedule may start, save or stop recording."""
        self._check_thread("step")
        previous = self.current_action
        self.step_num += 1
        current = self.current_action = self._action(self.step_num)
        if previous in _RECORDING and (
            current not in _RECORDING or previous is ProfilerAction.RECORD_AND_SAVE
        ):
            self._end(save=previous is ProfilerAction.RECORD_AND_SAVE)
        elif self._recorder is not None and self.schedule is not None:
            self._next_step_range()
        if current in _RECORDING and self._recorder is None:
            self._begin()
        elif current is ProfilerAction.WARMUP and previous in _CYCLE_ENDS:
            self._new_cycle()

    def _action(self, step):
        return ProfilerAction.RECORD if self.schedule is None else self.schedule(step)

    def _check_thread(self, what):
        if self._thread is None:
            raise RuntimeError(f"kit.profiler: {what}() on a profile that is not running. Fix: "
                               f"call it inside the `with` block, or after start()")
        if self._thread != threading.get_ident():
            raise RuntimeError(
                f"kit.profiler: {what}() called from another thread than the one that started "
                f"the profile; a profile records and is stopped in its own thread"
            )

    def _begin(self):
        recorder = Recorder(self.record_shapes, self.profile_memory, self.with_stack, self.cuda)
        self._mode = enter(Recording(recorder))
        self._recorder = recorder
        self._new_cycle()
        recorder.started()
        if self.schedule is not None:
            self._next_step_range()

    def _new_cycle(self):
        """A cycle begins (its warm-up, or its recording without one): as PyTorch's profiler, drop
        the events of the cycles before unless `acc_events`, and say so."""
        if self.acc_events or not self._kept:
            return
        self._kept = []
        frame, level = sys._getframe(1), 2  # the warning names the first caller outside kit
        while frame is not None and frame.f_code.co_filename.startswith(_KIT_DIR):
            frame, level = frame.f_back, level + 1
        warnings.warn(
            "kit.profiler: a new profiling cycle began, so the events recorded before it were "
            "dropped (PyTorch drops them too): events() and key_averages() report the current "
            "cycle only. Fix: read each cycle in on_trace_ready, end the schedule with repeat=1, "
            "or pass acc_events=True to keep every cycle's events",
            UserWarning, stacklevel=level,
        )

    def _next_step_range(self):
        recorder = self._recorder
        if self._step_range is not None:
            recorder.end(self._step_range)
        self._step_range = recorder.begin(f"ProfilerStep#{self.step_num}", "step")

    def _end(self, save):
        recorder, self._recorder = self._recorder, None
        leave(self._mode)
        self._mode = self._step_range = None
        recorder.finish()
        if self.spelling is not None:
            for event in recorder.events:
                event.name, event.category = self.spelling(event)
        self._kept.append(recorder)
        if save and self.on_trace_ready is not None:
            self.on_trace_ready(self)

    # --- results -----------------------------------------------------------------------------
    def events(self):
        """Every event recorded (the last saved cycle's, with a schedule), in order of start."""
        events = [e for recorder in self._kept for e in recorder.events]
        return EventList(events, "cuda" if self.cuda else None, self.profile_memory,
                         self.export_chrome_trace)

    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0):
        """The events added up per name: an EventList whose `table()` prints PyTorch's table."""
        return self.events().key_averages(group_by_input_shape, group_by_stack_n)

    def export_chrome_trace(self, path):
        """Write the events as a Chrome trace (JSON; .gz compresses it); returns the path."""
        return _trace.write(path, self.chrome_trace())

    def chrome_trace(self):
        """The Chrome trace as a dict (what export_chrome_trace writes)."""
        if not self._kept:
            raise RuntimeError("kit.profiler: nothing was recorded yet; export after the block")
        return _trace.chrome_trace(self.events(), self._kept[0].start_ns, self._category,
                                   self.process_name)

    @staticmethod
    def _category(event):
        if event.category is not None:
            return event.category
        return "user_annotation" if event.kind in ("range", "step") else "cpu_op"


class record_function(contextlib.ContextDecorator):  # noqa: N801 - PyTorch's name
    """A named range in the profile: a block (`with record_function("forward"):`) or a
    decorated function; nothing happens while no profiler runs in the thread."""

    def __init__(self, name, args=None):
        self.name = str(name)
        self.args = args
        self._open = []  # [(recorder, event)] for nested or recursive use

    def __enter__(self):
        recorder = STATE.profiler
        event = recorder.begin(self.name, "range") if recorder is not None else None
        self._open.append((recorder, event))
        return self

    def __exit__(self, *exc):
        recorder, event = self._open.pop()
        if event is not None:
            recorder.end(event)
        return False
