"""The one stack of modes: grad mode, vmap levels, kit.func transforms, jvp, kit.mx's modes.

As in functorch's interpreter stack and HIPS autograd's trace stack, every mode is one entry on
one stack: entering a block pushes it, leaving the block pops it (also when the block raises;
decorated generators re-enter it around each resume, kit/grad_mode.py). Each thread has its own
stack, so grad mode and kit.mx's recording are per thread, as in PyTorch and MXNet.

An entry sets some of the thread's switches (the attributes of `STATE` below) and popping it puts
their earlier values back. The switches are a cache of what the stack means, kept in step by
`enter` and `leave`, so the hot path pays one attribute read: every primitive asks `depth` ("is a
vmap active?"), every recorded op asks `enabled` ("is grad mode on?").

>>> import kit
>>> from kit._modes import STATE
>>> with kit.no_grad():
...     [type(mode).__name__ for mode, _ in STATE.stack], STATE.enabled
(['no_grad'], False)
>>> STATE.stack, STATE.enabled
([], True)
"""

from __future__ import annotations

import threading


class _Switches(threading.local):
    """This thread's stack of modes and the switches they set (fresh threads start here)."""

    # kit.func's hooks for the primitives, the same in every thread (kit/ops/_vmap.py)
    dispatch = None
    function = None

    def __init__(self):
        self.stack = []  # (mode, the values it replaced), innermost last
        self.grad = True  # grad mode (is_grad_enabled)
        self.inference = False  # inference_mode
        self.enabled = True  # record ops for backward: grad mode on and not inference mode
        self.anomaly = False  # detect_anomaly
        self.keep_outputs = False  # new nodes keep a weak reference to their output (kit.viz)
        self.depth = 0  # > 0: primitives dispatch BatchedTensors (kit.func.vmap)
        self.transforms = 0  # > 0: Function.apply is routed through kit.func
        self.grad_levels = 0  # kit.func grad-like transforms running (nested: create_graph)
        self.jvp_backward = None  # kit.func.jvp records FunctionNode backwards through this
        self.recording = False  # kit.mx autograd.record()
        self.training = False  # kit.mx train_mode()


STATE = _Switches()


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
    state = STATE
    values = mode.switches(state)
    state.stack.append((mode, {name: getattr(state, name) for name in values}))
    for name, value in values.items():
        setattr(state, name, value)
    return mode


def leave(mode):
    """Pop `mode` (the innermost entry of it) and put back the switches it replaced."""
    stack = STATE.stack
    index = len(stack) - 1
    # NOTE: only a generator suspended inside a `with` block leaves out of order; like PyTorch's
    # modes, the entry then restores what it replaced.
    while index >= 0 and stack[index][0] is not mode:
        index -= 1
    if index < 0:
        raise RuntimeError(f"{type(mode).__name__} left without being entered")
    _, saved = stack.pop(index)
    for name, value in saved.items():
        setattr(STATE, name, value)


def active(kind):
    """The entries of type `kind` on this thread's stack, outermost first."""
    return [mode for mode, _ in STATE.stack if isinstance(mode, kind)]
