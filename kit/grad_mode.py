"""Grad modes: whether new operations are recorded, and anomaly detection.

Each of `no_grad`, `enable_grad`, `set_grad_enabled` and `detect_anomaly` works as a context manager
and as a decorator, as in PyTorch.
"""

from __future__ import annotations

import functools


class _State:
    __slots__ = ("enabled", "anomaly", "keep_outputs")

    def __init__(self):
        self.enabled = True
        self.anomaly = False
        self.keep_outputs = False


STATE = _State()


def is_grad_enabled() -> bool:
    """True when new operations are recorded for backward."""
    return STATE.enabled


def is_anomaly_enabled() -> bool:
    return STATE.anomaly


def keep_output_refs(flag: bool = True) -> None:
    """Let graph nodes recorded from now on reach their output tensors while those are alive.

    Tools that draw a graph with its intermediate values (kit.viz turns this on when imported)
    need it; it costs a weak reference per recorded op, so it is off otherwise.
    """
    STATE.keep_outputs = bool(flag)


class _Mode:
    """Base for the context managers: set a flag on entry, restore it on exit."""

    _flag = "enabled"

    def __init__(self, value):
        self._value = value
        self._saved = []

    def __enter__(self):
        self._saved.append(getattr(STATE, self._flag))
        setattr(STATE, self._flag, self._value)
        return self

    def __exit__(self, *exc):
        setattr(STATE, self._flag, self._saved.pop())
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with type(self)(*self._args()):
                return fn(*args, **kwargs)

        return wrapper

    def _args(self):
        return (self._value,)


class no_grad(_Mode):  # noqa: N801 - PyTorch's name
    """Do not record operations (inference, parameter updates).

    >>> import kit
    >>> x = kit.tensor([1.0], requires_grad=True)
    >>> with kit.no_grad():
    ...     y = x * 2
    >>> y.requires_grad
    False
    """

    def __init__(self):
        super().__init__(False)

    def _args(self):
        return ()


class enable_grad(_Mode):  # noqa: N801
    """Record operations again inside a `no_grad` region."""

    def __init__(self):
        super().__init__(True)

    def _args(self):
        return ()


class set_grad_enabled(_Mode):  # noqa: N801
    """Turn recording on or off: `with kit.set_grad_enabled(is_training): ...`."""

    def __init__(self, mode: bool):
        super().__init__(bool(mode))
        # PyTorch also applies the mode when used as a plain function call.
        self._previous = STATE.enabled
        STATE.enabled = bool(mode)

    def __enter__(self):
        self._saved.append(self._previous)
        return self

    def __call__(self, fn):
        STATE.enabled = self._previous
        return super().__call__(fn)


class detect_anomaly(_Mode):  # noqa: N801
    """Check every gradient for NaN during backward and name the op that produced it.

    While it is on, each recorded op also keeps the stack of the line that created it, so the error
    points at your forward code, not only at the op.
    """

    _flag = "anomaly"

    def __init__(self, check_nan: bool = True):
        super().__init__(bool(check_nan))
