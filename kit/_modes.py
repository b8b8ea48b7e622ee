"""The one stack of modes: grad mode, vmap levels, kit.func transforms, jvp, kit.mx's modes.

As in functorch's interpreter stack and HIPS autograd's trace stack, every mode is one entry on
one stack: entering a block pushes it, leaving the block pops it (also when the block raises;
decorated generators re-enter it around each resume, kit/grad_mode.py). Each thread has its own
stack, so grad mode and kit.mx's recording are per thread, as in PyTorch and MXNet.

An entry sets some of the thread's switches (below) and popping it puts their earlier values
back. The hot path reads them as attributes of `STATE` (also `kit.ops._vmap.VMAP`): every
primitive asks `VMAP.depth` ("is a vmap active?"), every recorded op `STATE.enabled` ("is grad
mode on?"). Those reads stay as cheap as a plain attribute, because `STATE` is a cache: while no
thread has a switch away from its default, `STATE` holds the default in a slot; once one thread
moves it, `STATE` takes a class where that switch is a property reading each thread's own value,
until every thread is back (checked when a thread's stack empties).

>>> import kit
>>> from kit._modes import STATE, stack
>>> with kit.no_grad():
...     [type(mode).__name__ for mode in stack()], STATE.enabled
(['no_grad'], False)
>>> stack(), STATE.enabled
([], True)
"""

from __future__ import annotations

import functools
import threading
import weakref


class _Switches(threading.local):
    """This thread's stack of modes and the switches they set.

    NOTE: the defaults are class attributes, not set in __init__: a thread reads them until it
    sets its own, and a threading.local without __init__ reads faster.
    """

    entries = None  # [(mode, the values it replaced)], innermost last (made on first use)
    grad = True  # grad mode (is_grad_enabled)
    inference = False  # inference_mode
    enabled = True  # record ops for backward: grad mode on and not inference mode
    anomaly = False  # detect_anomaly
    keep_outputs = False  # new nodes keep a weak reference to their output (kit.viz)
    depth = 0  # > 0: primitives dispatch BatchedTensors (kit.func.vmap)
    transforms = 0  # > 0: Function.apply is routed through kit.func
    grad_levels = 0  # kit.func grad-like transforms running (nested: create_graph)
    jvp_backward = None  # kit.func.jvp records FunctionNode backwards through this
    recording = False  # kit.mx autograd.record()
    training = False  # kit.mx train_mode()
    away = None  # the names of this thread's switches away from their defaults, once it has any
    guard = None  # dropped with this thread's values when it ends: they stop counting (_forget)


_THREAD = _Switches()
DEFAULTS = {name: value for name, value in vars(_Switches).items()
            if not name.startswith("_") and name not in ("entries", "away", "guard")}


class _Shared:
    """What the hot path reads (`STATE`): each switch's default while every thread has it; a
    subclass reads the switches some thread has moved per thread (`_view`)."""

    # NOTE: slots, not class attributes: a slot reads in ~2 ns, a class attribute in ~8.
    __slots__ = tuple(DEFAULTS)
    # kit.func's hooks for the primitives, the same in every thread (kit/ops/_vmap.py)
    dispatch = None
    function = None

    def __setattr__(self, name, value):
        raise AttributeError(
            f"STATE.{name} is not set by assignment: enter a mode (kit.no_grad(), ...) or call "
            f"kit._modes.set_switch, so that it stays per thread"
        )


STATE = _Shared()
for _name, _value in DEFAULTS.items():
    object.__setattr__(STATE, _name, _value)  # the defaults, never changed: the fast path

# NOTE: property(partial(getattr, ...)) runs no Python frame: the slow path stays ~40 ns a read.
_PER_THREAD = {name: property(functools.partial(getattr, _THREAD, name)) for name in DEFAULTS}
_VIEWS = {frozenset(): _Shared}
_AWAY = dict.fromkeys(DEFAULTS, 0)  # how many threads have each switch away from its default
_VIEWED = set()  # the switches STATE reads per thread now
_LOCK = threading.RLock()


def _view():
    """Give STATE the class that reads the `_VIEWED` switches per thread.

    NOTE: STATE changes class; no class is ever changed. The interpreter specialises each
    `STATE.enabled` it runs for the class it sees, and a changed class would undo that at every
    site after each backward pass (which turns grad mode off): ~3% on the tiny-op chain.
    """
    names = frozenset(_VIEWED)
    view = _VIEWS.get(names)
    if view is None:
        body = {"__slots__": (), **{name: _PER_THREAD[name] for name in names}}
        view = _VIEWS[names] = type("_Shared", (_Shared,), body)
    object.__setattr__(STATE, "__class__", view)


def install(name, hook):
    """Set one of kit.func's hooks (`dispatch`, `function`), the same in every thread."""
    setattr(_Shared, name, staticmethod(hook))


class _Guard:
    __slots__ = ("__weakref__",)


def _forget(names):
    """A thread ended: its switches no longer count as away."""
    with _LOCK:
        for name in names:
            _AWAY[name] -= 1


def _set(name, value):
    """Set this thread's switch; `STATE` reads it per thread from now on if it is not default."""
    thread = _THREAD
    setattr(thread, name, value)
    if value != DEFAULTS[name]:
        names = thread.away
        if names is None or name not in names:
            _mark_away(thread, name)


def _mark_away(thread, name):
    names = thread.away
    if names is None:
        names = thread.away = set()
        thread.guard = _Guard()
        weakref.finalize(thread.guard, _forget, names).atexit = False
    with _LOCK:
        names.add(name)
        _AWAY[name] += 1
        if name not in _VIEWED:
            _VIEWED.add(name)
            _view()


def _settle():
    """This thread's switches back at their defaults stop counting as away, and the switches
    every thread has at their default become plain attributes again.

    NOTE: run when the thread's stack empties, not at each change: inside a vmap the depth goes
    to 0 and back for every primitive, and counting stays off that path. Counting a thread as
    away for longer than it is only means reading its own value, which is never wrong.
    """
    names = _THREAD.away or set()
    if not names and not _VIEWED:
        return
    with _LOCK:
        for name in [name for name in names if getattr(_THREAD, name) == DEFAULTS[name]]:
            names.discard(name)
            _AWAY[name] -= 1
        back = [name for name in _VIEWED if _AWAY[name] == 0]
        if back:
            _VIEWED.difference_update(back)
            _view()


def set_switch(name, value):
    """Set this thread's switch outside any block (PyTorch's plain `set_grad_enabled` call)."""
    _set(name, value)
    if not _THREAD.entries:
        _settle()


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
        _set(name, value)
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
    for name, value in entries.pop(index)[1].items():
        _set(name, value)
    if not entries:
        _settle()


def active(kind):
    """The entries of type `kind` on this thread's stack, outermost first."""
    return [mode for mode, _ in _THREAD.entries or () if isinstance(mode, kind)]
