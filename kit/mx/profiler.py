"""`mx.profiler`: MXNet 1.x's profiler API on kit's profiler (kit.profiler).

    mx.profiler.set_config(profile_all=True, aggregate_stats=True, filename="profile.json")
    mx.profiler.set_state("run")
    ...                                # ops, CustomOps, backward
    mx.profiler.set_state("stop")
    print(mx.profiler.dumps())         # the aggregate statistics, one table per category
    mx.profiler.dump()                 # writes `filename`, a Chrome trace (Perfetto opens it)

Names are MXNet's: an op by its mx.nd name in the "operator" category, its backward
`_backward_<name>`; a CustomOp as `<op_type>::pure_python` (`_backward_<op_type>::pure_python`)
and the ops run inside it as `<op_type>::<name>`, in "Custom Operator"; a Task, Frame or Event
in its domain's category. `Domain`, `Task`, `Frame`, `Event`, `Counter`, `Marker` work as in
MXNet 1.x.

Where kit differs: MXNet times its engine's worker threads, kit runs every op in the calling
thread, so it records the thread that called `set_state('run')` (stop, pause and resume it from
that thread). kit writes the trace when `dump()` is called: `continuous_dump` and `dump_period`
are accepted and change nothing, and `profile_api` has no C API to time. Memory statistics
("Device Storage") describe the arrays ops allocated (count and sizes), not a pool's use.
"""

from __future__ import annotations

import json
import os
import threading
from time import perf_counter_ns

from kit import profiler as _core
from kit._modes import STATE
from kit.mx._profiler_stats import aggregate_table, mx_spelling
from kit.mx.base import MXNetError
from kit.profiler import _trace

__all__ = [
    "Counter", "Domain", "Event", "Frame", "Marker", "Task", "dump", "dump_profile", "dumps",
    "pause", "profiler_set_config", "profiler_set_state", "resume", "set_config", "set_state",
]

_DEFAULTS = {
    "profile_all": False, "profile_symbolic": True, "profile_imperative": True,
    "profile_memory": True, "profile_api": True, "filename": "profile.json",
    "continuous_dump": True, "dump_period": 1.0, "aggregate_stats": False,
    "profile_process": "worker",
}


class _Session(_core.profile):
    spelling = staticmethod(mx_spelling)
    process_name = "MXNet (kit)"


class _Profiler:
    """The process's one profiler, as MXNet has one: its settings and what it recorded."""

    def __init__(self):
        self.config = dict(_DEFAULTS)
        self.session = None  # the segment being recorded (None when stopped or paused)
        self.running = False
        self.events = []  # the events recorded since the last dump(), for the next trace
        self.stats = []  # the events dumps() adds up (reset=True clears them)
        self.counters = []  # (ns, thread, category, name, value), for dumps()
        self.counter_points = []  # the same, since the last dump(), for the next trace
        self.markers = []  # (ns, thread, category, name, scope), since the last dump()
        self.origin_ns = None

    def start_segment(self):
        config = self.config
        if self.origin_ns is None:
            self.origin_ns = perf_counter_ns()
        self.session = _Session(profile_memory=config["profile_all"] or config["profile_memory"])
        self.session.start()

    def stop_segment(self):
        session = self.session
        if session is not None:
            session.stop()  # first: from another thread it raises, and nothing changes
            self.session = None
            recorded = list(session.events())
            if not (self.config["profile_all"] or self.config["profile_imperative"]
                    or self.config["profile_symbolic"]):
                recorded = [e for e in recorded if e.category not in _OPERATORS]
            self.events += recorded
            self.stats += recorded

    def collect(self):
        """Take in what the running segment recorded so far (it goes on recording)."""
        if self.session is not None:
            self.stop_segment()
            self.start_segment()


_OPERATORS = ("operator", "Custom Operator")
_PROFILER = _Profiler()


def _check_process(profile_process):
    if profile_process != "worker":
        raise NotImplementedError(
            f"kit.mx.profiler: profile_process={profile_process!r}: kit has no kvstore server "
            f"to profile. Fix: profile the worker (the default)"
        )


def set_config(**kwargs):
    """Set the profiler's options (keywords only; the others go back to their defaults):
    filename, profile_all, profile_symbolic, profile_imperative, profile_memory, profile_api,
    continuous_dump, dump_period, aggregate_stats, profile_process."""
    unknown = sorted(set(kwargs) - set(_DEFAULTS))
    if unknown:
        raise MXNetError(
            f"Cannot find argument {unknown[0]!r}, Possible Arguments: "
            f"{', '.join(sorted(_DEFAULTS))} (mx.profiler.set_config)"
        )
    config = dict(_DEFAULTS)
    for key, value in kwargs.items():
        if isinstance(_DEFAULTS[key], bool) and isinstance(value, str):
            value = value.strip().lower() in ("true", "1")  # MXNet passes them as strings
        config[key] = value
    _check_process(config["profile_process"])
    _PROFILER.config = config


def profiler_set_config(mode="symbolic", filename="profile.json"):
    """Deprecated in MXNet: set_config(profile_<mode>=True, filename=filename)."""
    set_config(**{f"profile_{mode}": True, "filename": filename})


def set_state(state="stop", profile_process="worker"):
    """'run' starts recording this thread's ops, 'stop' ends it (both do nothing twice)."""
    _check_process(profile_process)
    if state not in ("run", "stop"):
        raise ValueError(f"mx.profiler.set_state: state must be 'run' or 'stop', got {state!r}")
    profiler = _PROFILER
    if state == "run" and not profiler.running:
        profiler.start_segment()
        profiler.running = True
    elif state == "stop" and profiler.running:
        profiler.stop_segment()
        profiler.running = False


def profiler_set_state(state="stop"):
    """Deprecated in MXNet: set_state(state)."""
    set_state(state)


def pause(profile_process="worker"):
    """Stop recording for a while (resume() goes on); what was recorded stays."""
    _check_process(profile_process)
    if _PROFILER.running:
        _PROFILER.stop_segment()


def resume(profile_process="worker"):
    """Record again after pause()."""
    _check_process(profile_process)
    if _PROFILER.running and _PROFILER.session is None:
        _PROFILER.start_segment()


def dump(finished=True, profile_process="worker"):
    """Write what was recorded since the last dump (as MXNet, which empties its queue of events
    as it writes them) to the configured filename as a Chrome trace; `finished=True` also stops
    the profiler."""
    _check_process(profile_process)
    profiler = _PROFILER
    profiler.collect()
    if finished:
        set_state("stop")
    origin = profiler.origin_ns if profiler.origin_ns is not None else perf_counter_ns()
    trace = _trace.chrome_trace(profiler.events, origin, lambda e: e.category,
                                _Session.process_name)
    trace["traceEvents"] += _extra_trace(profiler, origin)
    # MXNet empties its queue of events as it writes them: the next dump holds what came after
    profiler.events, profiler.counter_points, profiler.markers = [], [], []
    return _trace.write(profiler.config["filename"], trace)


def dump_profile():
    """Deprecated in MXNet: dump(True)."""
    dump(True)


def dumps(reset=False, format="table", sort_by="total", ascending=False):  # noqa: A002
    """The aggregate statistics recorded so far, as text (`format='table'`) or JSON: per
    category, each name's count and total, min, max and mean time in ms. Needs
    `set_config(aggregate_stats=True)`; `reset=True` starts the statistics afresh."""
    if format not in ("table", "json"):
        raise ValueError(f"mx.profiler.dumps: format must be 'table' or 'json', got {format!r}")
    profiler = _PROFILER
    profiler.collect()
    if not profiler.config["aggregate_stats"]:
        text = ("\nProfile Statistics:\n\tNo statistics were kept: call "
                "mx.profiler.set_config(aggregate_stats=True, ...) before set_state('run').\n")
        return text if format == "table" else json.dumps({"Time": {}, "Memory": {}, "Unit": {
            "Time": "ms", "Memory": "kb"}})
    text = aggregate_table(profiler.stats, profiler.counters, format, sort_by, ascending)
    if reset:
        profiler.stats = []
        profiler.counters = []
    return text


def _extra_trace(profiler, origin):
    out = []
    for ns, thread, category, name, value in profiler.counter_points:
        out.append({"ph": "C", "name": name, "cat": category, "pid": os.getpid(), "tid": thread,
                    "ts": round((ns - origin) / 1e3, 3), "args": {name: value}})
    for ns, thread, category, name, scope in profiler.markers:
        out.append({"ph": "i", "s": _SCOPES[scope], "name": name, "cat": category,
                    "pid": os.getpid(), "tid": thread, "ts": round((ns - origin) / 1e3, 3)})
    return out


_SCOPES = {"global": "g", "process": "p", "thread": "t", "task": "t", "marker": "t"}


# --- the profiling objects -------------------------------------------------------------------
class Domain:
    """Groups Tasks, Frames, Counters and Markers; its name is their category."""

    def __init__(self, name):
        if not name:
            raise ValueError("mx.profiler.Domain: the name must not be empty")
        self.name = str(name)

    def __str__(self):
        return self.name

    def new_task(self, name):
        return Task(self, name)

    def new_frame(self, name):
        return Frame(self, name)

    def new_counter(self, name, value=None):
        return Counter(self, name, value)

    def new_marker(self, name):
        return Marker(self, name)


class _Duration:
    """A named interval timed by start() and stop() in the profiled thread."""

    def __init__(self, name, category):
        self.name = str(name)
        self._category = category
        self._open = None

    def start(self):
        recorder = STATE.profiler
        if recorder is not None:
            event = recorder.begin(self.name, "range")
            event.category = self._category
            self._open = (recorder, event)

    def stop(self):
        if self._open is not None:
            recorder, event = self._open
            self._open = None
            recorder.end(event)

    def __str__(self):
        return self.name


class Task(_Duration):
    """A named piece of work in a thread; every pass is added into one statistic."""

    def __init__(self, domain, name):
        super().__init__(name, domain.name)


class Frame(_Duration):
    """A named period (a training iteration, say), shown in its own category."""

    def __init__(self, domain, name):
        super().__init__(name, f"{domain.name},frame")


class Event(_Duration):
    """A named interval in the "event" category."""

    def __init__(self, name):
        super().__init__(name, "event")


class Counter:
    """A value that changes over time: each change is a point in the trace."""

    def __init__(self, domain, name, value=None):
        self.domain = domain
        self.name = str(name)
        self.value = 0
        if value is not None:
            self.set_value(value)

    def _record(self):
        if _PROFILER.session is not None:
            point = (perf_counter_ns(), threading.get_native_id(), self.domain.name, self.name,
                     self.value)
            _PROFILER.counters.append(point)
            _PROFILER.counter_points.append(point)

    def set_value(self, value):
        self.value = int(value)
        self._record()

    def increment(self, delta=1):
        self.set_value(self.value + int(delta))

    def decrement(self, delta=1):
        self.set_value(self.value - int(delta))

    def __iadd__(self, delta):
        self.increment(delta)
        return self

    def __isub__(self, delta):
        self.decrement(delta)
        return self

    def __str__(self):
        return self.name


class Marker:
    """An instant in time, marked in the trace."""

    def __init__(self, domain, name):
        self.domain = domain
        self.name = str(name)

    def mark(self, scope="process"):
        if scope not in _SCOPES:
            raise ValueError(f"mx.profiler.Marker.mark: scope must be one of {sorted(_SCOPES)}, "
                             f"got {scope!r}")
        if _PROFILER.session is not None:
            _PROFILER.markers.append((perf_counter_ns(), threading.get_native_id(),
                                      self.domain.name, self.name, scope))
