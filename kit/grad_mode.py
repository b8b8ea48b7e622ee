"""Grad modes: whether new operations are recorded, inference mode, anomaly detection.

Each mode is an entry on the thread's stack of modes (kit/_modes.py), so it is per thread and is
undone when its block ends, also by an exception. As in PyTorch, each works as a context manager
and as a decorator (`@kit.no_grad` and `@kit.enable_grad` also bare); a decorated generator runs
under the mode each time it resumes, and the caller's mode is back while it is suspended.
`set_grad_enabled` and `set_detect_anomaly` also work as plain calls.
"""

from __future__ import annotations

import functools
import inspect
import sys

from kit._modes import STATE, Mode, active, set_switch, switch

__all__ = [
    "STATE", "BackwardTask", "detect_anomaly", "enable_grad", "inference_mode",
    "is_anomaly_check_nan_enabled", "is_anomaly_enabled", "is_grad_enabled",
    "is_inference_mode_enabled", "keep_output_refs", "no_grad", "running_backward",
    "set_detect_anomaly", "set_grad_enabled",
]


def is_grad_enabled() -> bool:
    """True when grad mode is on (new operations are recorded, outside inference mode)."""
    return STATE.grad


def is_inference_mode_enabled() -> bool:
    return STATE.inference


def is_anomaly_enabled() -> bool:
    return STATE.anomaly


def is_anomaly_check_nan_enabled() -> bool:
    """Whether anomaly detection, when on, checks gradients for NaN (PyTorch's name)."""
    return STATE.check_nan


def decorate(make_mode, fn):
    """`fn` running under a fresh `make_mode()` on each call (each resume, for a generator)."""
    if inspect.isgeneratorfunction(fn):
        return _generator(make_mode, fn)

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with make_mode():
            return fn(*args, **kwargs)

    return wrapper


def _generator(make_mode, fn):
    # NOTE: as PyTorch's _wrap_generator: the mode is entered around each step of the generator
    # only, so code between two `next` calls keeps its own mode.
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        gen = fn(*args, **kwargs)
        try:
            with make_mode():
                response = gen.send(None)
            while True:
                try:
                    request = yield response
                except GeneratorExit:
                    with make_mode():
                        gen.close()
                    raise
                except BaseException:
                    with make_mode():
                        response = gen.throw(*sys.exc_info())
                else:
                    with make_mode():
                        response = gen.send(request)
        except StopIteration as stop:
            return stop.value

    return wrapper


class _Decorator(Mode):
    """A mode that is also a decorator; each call of the decorated function gets a fresh copy."""

    __slots__ = ()

    def __call__(self, fn):
        return decorate(self.clone, fn)

    def clone(self):
        return type(self)()


class GradMode(_Decorator):
    """The entry behind no_grad, enable_grad and set_grad_enabled: grad mode `flag` for a block."""

    __slots__ = ("flag",)

    def __init__(self, flag):
        self.flag = bool(flag)

    def switches(self, state):
        return {"grad": self.flag, "enabled": self.flag and not state.inference}

    def clone(self):
        return GradMode(self.flag)


class BackwardTask(GradMode):
    """The entry a running reverse pass pushes (grad mode on only with create_graph). Code run
    inside the pass (a Function's backward, an unpack hook) finds it with `running_backward()`:
    activation checkpointing recomputes once per pass (kit/checkpoint.py)."""

    __slots__ = ("grad_call", "__weakref__")

    def __init__(self, create_graph, grad_call):
        super().__init__(create_graph)
        self.grad_call = grad_call  # kit.grad or backward(inputs=...): gradients are returned


def running_backward():
    """The innermost reverse pass running on this thread (a BackwardTask), or None."""
    tasks = active(BackwardTask)
    return tasks[-1] if tasks else None


class _NoArguments(GradMode):
    """no_grad and enable_grad: `@kit.no_grad` works bare, as `@torch.no_grad` in PyTorch 2."""

    __slots__ = ()

    def __new__(cls, fn=None):
        if fn is None:
            return super().__new__(cls)
        return cls()(fn)

    def clone(self):
        return type(self)()


class no_grad(_NoArguments):  # noqa: N801 - PyTorch's name
    """Do not record operations (inference, parameter updates).

    >>> import kit
    >>> x = kit.tensor([1.0], requires_grad=True)
    >>> with kit.no_grad():
    ...     y = x * 2
    >>> y.requires_grad
    False
    """

    __slots__ = ()

    def __init__(self):
        super().__init__(False)


class enable_grad(_NoArguments):  # noqa: N801
    """Record operations again inside a `no_grad` region."""

    __slots__ = ()

    def __init__(self):
        super().__init__(True)


class set_grad_enabled(GradMode):  # noqa: N801
    """Turn recording on or off: `with kit.set_grad_enabled(is_training): ...`, or as a call.

    >>> import kit
    >>> _ = kit.set_grad_enabled(False); kit.is_grad_enabled()
    False
    >>> _ = kit.set_grad_enabled(True); kit.is_grad_enabled()
    True
    """

    __slots__ = ("_previous",)

    def __init__(self, mode: bool):
        super().__init__(mode)
        # NOTE: PyTorch applies the mode when the object is made, so a plain call works; a
        # `with` block or a decorator then undoes that and pushes the mode as any other.
        self._previous = STATE.grad
        _set_grad(self.flag)

    def _undo_call(self):
        if self._previous is not None:
            _set_grad(self._previous)
            self._previous = None

    def __enter__(self):
        self._undo_call()
        return super().__enter__()

    def __call__(self, fn):
        self._undo_call()
        return super().__call__(fn)

    def __repr__(self):
        return f"kit.set_grad_enabled(mode={self.flag})"


def _set_grad(flag):
    """Set this thread's grad mode outside any block (what PyTorch's plain call does)."""
    set_switch("grad", flag)
    set_switch("enabled", flag and not STATE.inference)


class inference_mode(_Decorator):  # noqa: N801
    """No recording, as no_grad, for code that will never be differentiated (PyTorch's
    inference_mode). `inference_mode(False)` turns it off again, and turns grad mode on.

    >>> import kit
    >>> @kit.inference_mode
    ... def predict(x):
    ...     return x * 2, kit.is_inference_mode_enabled()
    >>> y, inside = predict(kit.tensor([1.0], requires_grad=True))
    >>> y.requires_grad, inside, kit.is_inference_mode_enabled()
    (False, True, False)
    """

    __slots__ = ("mode",)

    def __new__(cls, mode=True):
        if isinstance(mode, bool):
            return super().__new__(cls)
        return cls()(mode)  # used bare, as a decorator: `mode` is the function

    def __init__(self, mode=True):
        self.mode = mode

    def switches(self, state):
        # NOTE: as in PyTorch, enable_grad inside inference mode sets grad mode but records
        # nothing: recording needs both (see GradMode).
        return {"inference": self.mode, "grad": not self.mode, "enabled": not self.mode}

    def clone(self):
        return inference_mode(self.mode)


class detect_anomaly(_Decorator):  # noqa: N801
    """Anomaly detection for a block, as PyTorch's: each recorded op keeps the stack of the line
    that created it, so an error raised in its backward also names your forward line; with
    `check_nan` (the default) every gradient is checked for NaN, naming the op that made it.

    >>> import kit
    >>> x = kit.tensor([0.0, 1.0], requires_grad=True)
    >>> with kit.detect_anomaly():
    ...     y = (x.sqrt() * 0).sum()  # d sqrt(x) / dx at 0 is inf, and inf * 0 is nan
    ...     try:
    ...         y.backward()
    ...     except RuntimeError as error:  # its note names the line `y = ...` above
    ...         print(str(error).split(" (")[0])
    Function 'SqrtBackward0' returned nan values in its 0th output
    """

    __slots__ = ("check_nan",)

    def __init__(self, check_nan: bool = True):
        self.check_nan = bool(check_nan)

    def switches(self, state):
        return {"anomaly": True, "check_nan": self.check_nan, "extras": True}

    def clone(self):
        return detect_anomaly(self.check_nan)


class set_detect_anomaly(Mode):  # noqa: N801
    """Turn anomaly detection on or off: as a plain call (for a whole script or notebook), or
    for a `with` block; PyTorch's `torch.autograd.set_detect_anomaly(mode, check_nan=True)`.

    >>> import kit
    >>> _ = kit.set_detect_anomaly(True); kit.is_anomaly_enabled()
    True
    >>> _ = kit.set_detect_anomaly(False); kit.is_anomaly_enabled()
    False
    """

    __slots__ = ("mode", "check_nan", "_previous")

    def __init__(self, mode: bool, check_nan: bool = True):
        self.mode, self.check_nan = bool(mode), bool(check_nan)
        # NOTE: as PyTorch's, it applies itself when made; a `with` block undoes that on exit.
        self._previous = {name: switch(name) for name in ("anomaly", "check_nan", "extras")}
        for name, value in self.switches(STATE).items():
            set_switch(name, value)

    def switches(self, state):
        return {"anomaly": self.mode, "check_nan": self.check_nan,
                "extras": self.mode or state.keep_outputs or state.saved_hooks is not None}

    def __enter__(self):
        if self._previous is not None:  # undo the call: the block pushes the mode as any other
            for name, value in self._previous.items():
                set_switch(name, value)
            self._previous = None
        return super().__enter__()

    def __repr__(self):
        return f"kit.set_detect_anomaly(mode={self.mode}, check_nan={self.check_nan})"


class keep_output_refs(_Decorator):  # noqa: N801
    """Nodes recorded in the block can reach their output tensors while those are alive.

    Tools that draw a graph with its intermediate values need it (kit.viz's explorer records
    under it; `with kit.viz.keep_output_refs(): loss = f(x)` shows every value in draw_graph).
    It costs a weak reference per recorded op, so nothing records it otherwise.
    """

    __slots__ = ()

    def switches(self, state):
        return {"keep_outputs": True, "extras": True}
