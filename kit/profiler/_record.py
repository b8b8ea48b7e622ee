"""Recording: the events one profiler sees in its thread, and the hooks that produce them.

A running profiler is one entry on the thread's stack of modes (kit/_modes.py), as a vmap level
is: it raises `depth` and `transforms` and points this thread's `dispatch` and `function` hooks
at its own, so every primitive (the registry's first statement, `if VMAP.depth: return
VMAP.dispatch(...)`) and every `Function.apply` (`if VMAP.transforms: ...`) reports to it, and it
sets `profiler`, which the engine reads once per backward pass to time each node. While none
runs, nothing changes on the hot path: those are the switches the code already read.

Clients that run work kit cannot see (kit.compile replaying a fused group, say) report it the
same way: `rec = current()`; if it is not None, `event = rec.begin(name, kind, phase)`, run,
`rec.end(event, outputs)`.
"""

from __future__ import annotations

import os
import sys
import threading
from collections import namedtuple
from time import perf_counter_ns

from kit import backend
from kit._modes import STATE, Mode, set_switch
from kit._tensor import Tensor
from kit.func import BatchedTensor
from kit.func._batched import _any_batched
from kit.profiler._stats import Timings

_KIT_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def current():
    """The Recorder of the profiler running in this thread, or None."""
    return STATE.profiler


class Event(Timings):
    """One timed interval in one thread: a primitive's forward, a backward node, a Function's
    forward (or its backward), a named range (`record_function`, a profiler step, a Task).

    `kind`: "op" (a built-in primitive), "function" (a user's Function or CustomOp), "range",
    "step" (a profile's `ProfilerStep#N`);
    `phase`: "forward", "backward" or None (a range); `op`: the op's name for ops and Functions
    (`name` is what tables show: "mul", "MulBackward0", "Square", "SquareBackward").
    Times are `perf_counter_ns` values; memory is the bytes of new arrays an event returned
    (`self_*`) and with those of the events nested in it.
    """

    __slots__ = (
        "name", "op", "kind", "phase", "category", "thread", "start_ns", "end_ns", "parent",
        "child_ns", "input_shapes", "stack", "device", "self_cpu_bytes", "self_gpu_bytes",
        "cpu_bytes", "gpu_bytes", "device_ns", "child_device_ns", "device_start_ns", "cuda",
        "id", "cpu_children", "function",
    )

    def __init__(self, name, op, kind, phase, thread, parent, index):
        self.name = name
        self.op = op
        self.kind = kind
        self.phase = phase
        self.category = None  # set by a front end's spelling (kit.mx's categories)
        self.thread = thread
        self.start_ns = self.end_ns = None
        self.parent = parent
        self.child_ns = 0
        self.input_shapes = None
        self.stack = None
        self.device = "cpu"
        self.self_cpu_bytes = self.self_gpu_bytes = self.cpu_bytes = self.gpu_bytes = 0
        self.device_ns = None  # measured with CUDA events (ops whose outputs are on the GPU)
        self.child_device_ns = 0
        self.device_start_ns = None  # on the device's clock, aligned with start_ns's
        self.cuda = None  # (start, end) CUDA events until the recording is finished
        self.id = index
        self.function = None  # the Function class, for kind "function"
        self.cpu_children = []
        if parent is not None:
            parent.cpu_children.append(self)

    @property
    def duration_ns(self):
        return self.end_ns - self.start_ns

    # PyTorch's FunctionEvent attributes (kit/profiler/_stats.py has the shared ones)
    count = 1

    @property
    def key(self):
        """The name events are added up under (PyTorch's: every "ProfilerStep#N" is one row)."""
        return "ProfilerStep*" if self.kind == "step" else self.name

    @property
    def cpu_parent(self):
        return self.parent

    @property
    def time_range(self):
        """(start, end) in microseconds."""
        return Interval(self.start_ns / 1e3, self.end_ns / 1e3)

    @property
    def _cpu_ns(self):
        return self.end_ns - self.start_ns

    @property
    def _self_cpu_ns(self):
        return self.end_ns - self.start_ns - self.child_ns

    @property
    def _device_ns(self):
        return self.device_ns or 0

    @property
    def _self_device_ns(self):
        return (self.device_ns or 0) - self.child_device_ns

    @property
    def cpu_memory_usage(self):
        return self.cpu_bytes

    @property
    def self_cpu_memory_usage(self):
        return self.self_cpu_bytes

    @property
    def device_memory_usage(self):
        return self.gpu_bytes

    @property
    def self_device_memory_usage(self):
        return self.self_gpu_bytes

    def __repr__(self):
        took = "open" if self.end_ns is None else f"{self.duration_ns / 1e3:.3f}us"
        return f"<Event {self.name!r} {self.phase or self.kind} {took} thread={self.thread}>"


Interval = namedtuple("Interval", ["start", "end"])


class Recorder:
    """What one profiler records in the thread that runs it, and how."""

    def __init__(self, record_shapes=False, profile_memory=False, with_stack=False, cuda=False):
        self.record_shapes = record_shapes
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.events = []  # in order of start
        self._open = []  # [(event, ids of arrays its direct children returned)], innermost last
        self.thread = threading.get_native_id()
        self.cupy = backend.require_gpu("profiling CUDA activity") if cuda else None
        self.start_ns = None
        self._cuda_start = None
        self.outer = None  # the switches the profiler's mode replaced (its hooks delegate there)
        self.level = 0  # `transforms` while no kit.func transform runs inside the profiler
        self.delegate = False
        self.muted = 0  # > 0 inside an in-place op: the ops computing it are not events

    # --- the interval API (the hooks below, record_function, clients) ------------------------
    def begin(self, name, kind="range", phase=None, op=None, inputs=()):
        """Open an event (returned, for `end`); it nests in the innermost open one."""
        open_ = self._open
        event = Event(name, name if op is None else op, kind, phase, self.thread,
                      open_[-1][0] if open_ else None, len(self.events))
        if self.record_shapes:
            event.input_shapes = _shapes(inputs)
        if self.with_stack:
            event.stack = _user_stack()
        self.events.append(event)
        open_.append((event, set() if self.profile_memory else None))
        if self.cupy is not None:
            start = self.cupy.cuda.Event()
            start.record()
            event.cuda = (start, None)
        event.start_ns = perf_counter_ns()  # last: the bookkeeping above is not timed
        return event

    def end(self, event, outputs=(), inputs=()):
        """Close `event`; `outputs` are what it returned (arrays or Tensors, nested in tuples or
        lists), `inputs` what it was given (a returned input is not new memory)."""
        end = perf_counter_ns()
        if event.end_ns is not None:  # closed already (the recording stopped first)
            return
        event.end_ns = end
        open_ = self._open
        index = len(open_) - 1
        while index >= 0 and open_[index][0] is not event:
            index -= 1
        if index >= 0:
            children = open_.pop(index)[1]
            siblings = open_[index - 1][1] if index > 0 else None
        else:
            children = siblings = None
        if self.profile_memory or self.cupy is not None:
            self._outputs(event, outputs, inputs, children, siblings)
        parent = event.parent
        if parent is not None:
            parent.child_ns += end - event.start_ns
            parent.cpu_bytes += event.cpu_bytes
            parent.gpu_bytes += event.gpu_bytes

    def _outputs(self, event, outputs, inputs, children, siblings):
        """Which device the event ran on, the bytes of the new arrays it returned, and the end
        of its time on the device."""
        given = {id(a) for a, _ in _arrays(inputs)}
        for array, new in _arrays(outputs):
            event.device = backend.device_of(array)
            key = id(array)
            if siblings is not None:
                siblings.add(key)  # the enclosing event did not make it either
            if not new or key in given or (children and key in children):
                continue
            if event.device == "gpu":
                event.self_gpu_bytes += array.nbytes
            else:
                event.self_cpu_bytes += array.nbytes
        event.cpu_bytes += event.self_cpu_bytes
        event.gpu_bytes += event.self_gpu_bytes
        if event.cuda is not None:
            if event.device == "gpu":
                end = self.cupy.cuda.Event()
                end.record()
                event.cuda = (event.cuda[0], end)
            else:
                event.cuda = None

    # --- start and finish ------------------------------------------------------------------
    def started(self):
        self.start_ns = perf_counter_ns()
        if self.cupy is not None:
            self.cupy.cuda.get_current_stream().synchronize()
            self._cuda_start = self.cupy.cuda.Event()
            self._cuda_start.record()

    def finish(self):
        """Close what is still open and read the device's clock (once, at the end)."""
        while self._open:
            self.end(self._open[-1][0])
        if self.cupy is not None:
            self._device_times()

    def _device_times(self):
        elapsed = self.cupy.cuda.get_elapsed_time  # milliseconds
        self.cupy.cuda.get_current_stream().synchronize()
        # children come after their parent in `events`: walking back adds each to its parent
        for event in reversed(self.events):
            if event.cuda is not None and event.cuda[1] is not None:
                start, end = event.cuda
                end.synchronize()
                event.device_ns = round(elapsed(start, end) * 1e6)
                since = elapsed(self._cuda_start, start)
                event.device_start_ns = self.start_ns + round(since * 1e6)
            elif event.child_device_ns:
                event.device_ns = event.child_device_ns
            event.cuda = None
            if event.device_ns is not None and event.parent is not None:
                event.parent.child_device_ns += event.device_ns

    # --- the hooks ------------------------------------------------------------------------
    def backward(self, node, grads, differentiable):
        """One node of the reverse pass (called by the engine in place of `node.apply`)."""
        custom = node.kind == "custom"
        event = self.begin(node.name(), "function" if custom else "op", "backward", node.op, grads)
        if custom:
            event.function = getattr(node, "function", None)
        try:
            in_grads = node.apply(grads, differentiable)
        except BaseException:
            self.end(event)
            raise
        self.end(event, in_grads, grads)
        return in_grads


class Recording(Mode):
    """The entry a running profiler keeps on its thread's stack of modes."""

    __slots__ = ("recorder",)

    def __init__(self, recorder):
        self.recorder = recorder

    def switches(self, state):
        if state.profiler is not None:
            raise RuntimeError(
                "kit.profiler: a profiler is already running in this thread; profilers do not "
                "nest (PyTorch silently records nothing in the outer one). Fix: use one profiler "
                "and mark the parts you want to tell apart with record_function('name')"
            )
        recorder = self.recorder
        recorder.outer = {"dispatch": state.dispatch, "function": state.function}
        # below it, hooks other than kit.func's (kit.compile's trace): every call goes there
        recorder.delegate = (state.dispatch is not type(state).dispatch
                             or state.function is not type(state).function)
        recorder.level = state.transforms + 1
        return {"depth": state.depth + 1, "transforms": recorder.level, "dispatch": _dispatch,
                "function": _function, "profiler": recorder}


def as_one_op(recorder, name, inputs, fn, *args):
    """`fn(*args)` as one op event `name` of a running `recorder` (an in-place op, MXNet's
    sgd_update), given `inputs` (Tensors, for record_shapes); the ops it runs inside are not
    events of their own."""
    event = recorder.begin(name, "op", "forward", name, inputs)
    recorder.muted += 1
    try:
        return fn(*args)
    finally:
        recorder.muted -= 1
        recorder.end(event, (), ())


def _dispatch(op, fn, *args, **kwargs):
    """A primitive called while a profiler runs (the registry's hook, kit/ops/_registry.py)."""
    recorder = STATE.profiler
    event = None if recorder.muted else recorder.begin(op, "op", "forward", op, args)
    try:
        if recorder.delegate or _any_batched(args) or _any_batched(kwargs.values()):
            out = recorder.outer["dispatch"](op, fn, *args, **kwargs)  # e.g. kit.func's vmap
        elif hasattr(fn, "__wrapped__"):  # a registry primitive: its body without the hook
            out = fn.__wrapped__(*args, **kwargs)  # so the primitives it calls are recorded
        else:  # a hand-written hook: the body runs with primitives undispatched
            depth = STATE.depth
            set_switch("depth", 0)
            try:
                out = fn(*args, **kwargs)
            finally:
                set_switch("depth", depth)
    except BaseException:
        if event is not None:
            recorder.end(event)
        raise
    if event is not None:
        recorder.end(event, out, args)
    return out


def _function(cls, args, kwargs):
    """Function.apply while a profiler runs (also kit.mx's CustomOp, which is a Function)."""
    recorder = STATE.profiler
    transforms = STATE.transforms
    event = recorder.begin(cls.__name__, "function", "forward", cls.__name__, args)
    event.function = cls
    try:
        if (recorder.delegate or transforms != recorder.level or _any_batched(args)
                or _any_batched(kwargs.values())):
            out = recorder.outer["function"](cls, args, kwargs)  # a kit.func transform's
        else:
            set_switch("transforms", transforms - 1)
            try:
                out = cls.apply(*args, **kwargs)
            finally:
                set_switch("transforms", transforms)
    except BaseException:
        recorder.end(event)
        raise
    recorder.end(event, out, args)
    return out


# --- helpers ---------------------------------------------------------------------------------
def _arrays(values):
    """(array, whether it is new storage) for the Tensors and arrays in `values` (nested in
    tuples or lists); a view's array is not new."""
    if isinstance(values, (tuple, list)):
        for v in values:
            yield from _arrays(v)
    elif type(values) is BatchedTensor:
        yield from _arrays(values.value)
    elif isinstance(values, Tensor):
        yield values._data, values._base is None
    elif hasattr(values, "nbytes") and hasattr(values, "base"):
        yield values, values.base is None


def _shapes(values):
    """PyTorch's `input_shapes`: one list per argument, [] for a non-tensor."""
    out = []
    for v in values:
        shape = getattr(v, "shape", None)
        out.append([] if shape is None else list(shape))
    return out


def _user_stack(limit=16):
    """The caller's frames outside kit, innermost first, as PyTorch prints them:
    'file.py(12): function'."""
    frame = sys._getframe(2)
    out = []
    while frame is not None and len(out) < limit:
        path = frame.f_code.co_filename
        if not path.startswith(_KIT_DIR):
            out.append(f"{path}({frame.f_lineno}): {frame.f_code.co_name}")
        frame = frame.f_back
    return out
