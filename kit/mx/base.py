"""What every part of kit.mx shares: MXNet's error type and the recording/training state."""

from __future__ import annotations

import contextlib

from kit._modes import STATE, Mode
from kit.grad_mode import GradMode


class MXNetError(RuntimeError):
    """Default error raised by kit.mx where MXNet raises its own MXNetError."""


_MIXED = {}  # original exception type -> the type deriving from it and MXNetError


def mxnet_error_type(cls):
    """The exception type that is both `cls` and MXNetError (made once per type, then cached).

    MXNet reports every failure of an operator as MXNetError; kit keeps the original type too,
    so both `except MXNetError` (MXNet's own tests) and `except ValueError` work.

    >>> err = mxnet_error_type(ValueError)("bad shape")
    >>> isinstance(err, ValueError), isinstance(err, MXNetError)
    (True, True)
    """
    if issubclass(cls, MXNetError):
        return cls
    mixed = _MIXED.get(cls)
    if mixed is None:
        # NOTE: RuntimeError (a base of MXNetError) gets a subclass of MXNetError alone, so the
        # name a traceback shows stays RuntimeError.
        bases = (MXNetError,) if cls in MXNetError.__mro__ else (cls, MXNetError)
        try:
            mixed = type(cls.__name__, bases, {
                "__module__": cls.__module__, "__qualname__": cls.__qualname__,
                "__doc__": f"{cls.__name__}, raised where MXNet raises MXNetError.",
                "__reduce__": _reduce_mixed, "_kit_mx_original": cls,
            })
        except TypeError:  # a type whose layout cannot be combined: MXNetError alone
            mixed = MXNetError
        _MIXED[cls] = mixed
    return mixed


def _reduce_mixed(exc):
    # NOTE: the mixed type is not importable by its name (builtins.ValueError is the original),
    # so pickle (multiprocessing, test runners) rebuilds it from the original type instead.
    return _remake, (type(exc)._kit_mx_original, exc.args, dict(exc.__dict__))


def _remake(original, args, state):
    """Unpickle an error made by mxnet_error_type(original)."""
    cls = mxnet_error_type(original)
    exc = cls.__new__(cls)
    exc.args = args
    exc.__dict__.update(state)
    return exc


def error(cls, message):
    """A new error of type `cls` that is also an MXNetError (what kit.mx raises itself)."""
    return mxnet_error_type(cls)(message)


def as_mxnet_error(exc, args=None):
    """A copy of `exc` (same attributes, traceback and chain) that is also an MXNetError.

    `args` replaces the exception's args (a message naming the op and the phase).
    """
    cls = mxnet_error_type(type(exc))
    new = cls.__new__(cls)  # NOTE: not cls(...): user types may want other constructor arguments
    new.args = exc.args if args is None else args
    new.__dict__.update(getattr(exc, "__dict__", {}))
    new.__cause__, new.__context__ = exc.__cause__, exc.__context__
    new.__suppress_context__ = exc.__suppress_context__
    return new.with_traceback(exc.__traceback__)


REPORTED = "_kit_mx_reported"  # set on errors that already name the op and the phase


def reported(exc):
    """Mark an error as already naming its op and phase (so it is not prefixed twice)."""
    try:
        setattr(exc, REPORTED, True)
    except AttributeError:
        pass
    return exc


@contextlib.contextmanager
def user_errors(where):
    """Re-raise an error from the user's code as its own type that is also an MXNetError, its
    message prefixed with `where` (the op and the phase), the user's line still in the traceback.
    """
    try:
        yield
    except Exception as exc:
        failure = _from_user(exc, where)
    else:
        return
    raise failure


def _from_user(exc, where):
    if getattr(exc, REPORTED, False):  # already names the op and the phase
        failure = as_mxnet_error(exc)
        failure.__suppress_context__ = True
        return failure
    message = f"{where}: {type(exc).__name__}: {exc}"
    if len(exc.args) <= 1:
        failure = as_mxnet_error(exc, (message,))
    else:  # several constructor arguments: keep them, say where in a note
        failure = as_mxnet_error(exc)
        failure.add_note(message)
    failure.__cause__ = exc  # the original, as the user raised it
    return reported(failure)


# MXNet's two flags, `recording` and `training`, live on the thread's stack of modes
# (kit/_modes.py): read them here, change them with `scope`.
MODE = STATE


@contextlib.contextmanager
def mxnet_errors():
    """Errors raised in the block come out as MXNet's: the same exception, also an MXNetError."""
    try:
        yield
    except MXNetError:
        raise
    except Exception as exc:
        failure = as_mxnet_error(exc)
    else:
        return
    raise failure  # outside the except block, so the original is not chained to itself


def call(fn, *args, **kwargs):
    """fn(*args, **kwargs), its errors coming back as MXNet's (as mxnet_errors, without the
    cost of a context manager: this is on every kit.mx op's path)."""
    try:
        return fn(*args, **kwargs)
    except MXNetError:
        raise
    except Exception as exc:
        failure = as_mxnet_error(exc)
    raise failure  # outside the except block, so the original is not chained to itself


def run(fn, *args, **kwargs):
    """Call a kit op with kit's grad mode set to MXNet's recording flag; errors come back as
    MXNet's (mxnet_errors).

    NOTE: kit records by default (as PyTorch); MXNet records only inside autograd.record(), so
    every kit.mx op runs with kit's grad mode set to MXNet's recording flag. Inside record() the
    two already agree, and no mode is entered (a training step's ops take this path).
    """
    recording = STATE.recording
    if STATE.enabled == recording:
        return call(fn, *args, **kwargs)
    with GradMode(recording):
        return call(fn, *args, **kwargs)


class scope(Mode):  # noqa: N801 - used like autograd.record()
    """Set the recording and/or training flag for a `with` block (None leaves a flag alone).

    An entry on the thread's stack of modes (kit/_modes.py): per thread, as in MXNet.
    """

    __slots__ = ("recording", "training", "_values")

    def __init__(self, recording=None, training=None):
        self.recording = recording
        self.training = training
        # NOTE: what the block sets does not depend on the modes below it: made once, not at
        # every entry (a training step enters record() once per step)
        values = {}
        if recording is not None:
            values["recording"] = bool(recording)
        if training is not None:
            values["training"] = bool(training)
        self._values = values

    def switches(self, state):
        return self._values
