"""The one stack of modes: grad mode, vmap levels, kit.func transforms, jvp, kit.mx's modes.

As in functorch's interpreter stack and HIPS autograd's trace stack, every mode is one entry on
one stack: entering a block pushes it, leaving the block pops it (also when the block raises;
decorated generators re-enter it around each resume, kit/grad_mode.py). Each thread has its own
stack, so grad mode and kit.mx's recording are per thread, as in PyTorch and MXNet.

An entry sets some of the thread's switches (below) and popping it puts their earlier values
back. The hot path reads them as attributes of `STATE` (also `kit.ops._vmap.VMAP`), this
thread's switches: every primitive asks `VMAP.depth` ("is a vmap active?"), every recorded op
`STATE.enabled` ("is grad mode on?").

>>> import kit
>>> from kit._modes import STATE, stack
>>> with kit.no_grad():
...     [type(mode).__name__ for mode in stack()], STATE.enabled
(['no_grad'], False)
>>> stack(), STATE.enabled
([], True)
"""

from __future__ import annotations

import threading


class _Switches(threading.local):
    """This thread's stack of modes and the switches they set.

    NOTE: the defaults are class attributes, not set in __init__: a thread reads them until it
    sets its own, and a threading.local without __init__ reads faster.
    """

    entries = None  # [(mode, the values it replaced)], innermost last (made on first use)
    grad = True  # grad mode (is_grad_enabled)
    inference = False  # inference_mode
    enabled = True  # record ops for backward: grad mode on and not inference mode
    anomaly = False  # detect_anomaly: ops keep their forward stack; backward errors name it
    check_nan = True  # ... and gradients are checked for NaN (PyTorch's default)
    keep_outputs = False  # new nodes keep a weak reference to their output (kit.viz)
    saved_hooks = None  # the innermost saved_tensors_hooks (kit/saved_tensors.py)
    # anomaly, keep_outputs or saved_hooks: one read tells record() whether to look at any
    extras = False
    profiler = None  # the running kit.profiler's Recorder (the engine reads it once per backward)
    depth = 0  # > 0: primitives dispatch BatchedTensors (kit.func.vmap)
    transforms = 0  # > 0: Function.apply is routed through kit.func
    grad_levels = 0  # kit.func grad-like transforms running (nested: create_graph)
    jvp_backward = None  # kit.func.jvp records FunctionNode backwards through this
    recording = False  # kit.mx autograd.record()
    training = False  # kit.mx train_mode()
    tracing = None  # kit.compile's tracer while it records a function (kit/compiler/trace.py)
    # kit.func's hooks for the primitives, the same in every thread (install, kit/ops/_vmap.py)
    dispatch = None
    function = None


_THREAD = _Switches()
DEFAULTS = {name: value for name, value in vars(_Switches).items()
            if not name.startswith("_") and name not in ("entries", "dispatch", "function")}


# The hot path reads the switches as attributes of `STATE`, this thread's `_Switches`.
# NOTE: a threading.local read costs ~20 ns more than a slot. An earlier design kept slots and
# swapped STATE's class whenever a thread left a default: every no_grad block and every
# backward() then cost ~4 us, and each swap undid the interpreter's specialisation of every
# `STATE.x` read, ~6% on the tiny-op chain and the MLP step. A plain thread-local is cheaper.
STATE = _THREAD


def install(name, hook):
    """Set one of kit.func's hooks (`dispatch`, `function`), the same in every thread."""
    setattr(_Switches, name, staticmethod(hook))


def set_switch(name, value):
    """Set this thread's switch outside any block (PyTorch's plain `set_grad_enabled` call)."""
    setattr(_THREAD, name, value)


def switch(name):
    """This thread's value of a switch."""
    return getattr(_THREAD, name)


def stack():
    """This thread's modes, outermost first."""
    return [mode for mode, _ in _THREAD.entries or ()]


class Mode:
    """One entry of the stack: a context manager (and, in kit/grad_mode.py, a decorator).

    A subclass says what it sets in `switches(state)`, a dict {switch: value} computed from the
    switches below it when it is entered. One instance may be entered again while it is active.
    """

    __slots__ = ()

    def switches(self, state):
        raise NotImplementedError

    def __enter__(self):
        enter(self)
        return self

    def __exit__(self, *exc):
        leave(self)
        return False


def enter(mode):
    """Push `mode` on this thread's stack and apply its switches; returns it (for `leave`)."""
    thread = _THREAD
    saved = {}
    for name, value in mode.switches(thread).items():
        saved[name] = getattr(thread, name)
        setattr(thread, name, value)
    entries = thread.entries
    if entries is None:
        entries = thread.entries = []
    entries.append((mode, saved))
    return mode


def leave(mode):
    """Pop `mode` (the innermost entry of it) and put back the switches it replaced."""
    entries = _THREAD.entries
    index = len(entries) - 1 if entries else -1
    # NOTE: only a generator suspended inside a `with` block leaves out of order; like PyTorch's
    # modes, the entry then restores what it replaced.
    while index >= 0 and entries[index][0] is not mode:
        index -= 1
    if index < 0:
        raise RuntimeError(f"{type(mode).__name__} left without being entered")
    thread = _THREAD
    for name, value in entries.pop(index)[1].items():
        setattr(thread, name, value)


def active(kind):
    """The entries of type `kind` on this thread's stack, outermost first."""
    return [mode for mode, _ in _THREAD.entries or () if isinstance(mode, kind)]
