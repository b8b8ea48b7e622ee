"""What every part of kit.mx shares: MXNet's error type and the recording/training modes."""

from __future__ import annotations

from kit._modes import STATE, Mode
from kit.grad_mode import GradMode


class MXNetError(RuntimeError):
    """Default error raised by kit.mx where MXNet raises its own MXNetError."""


REPORTED = "_kit_mx_reported"  # set on errors that already name the op and the phase


def reported(exc):
    """Mark an error as already naming its op and phase (so it is not prefixed twice)."""
    try:
        setattr(exc, REPORTED, True)
    except AttributeError:
        pass
    return exc


def run(fn, *args, **kwargs):
    """Call a kit op with kit's grad mode set to MXNet's recording flag.

    NOTE: kit records by default (as PyTorch); MXNet records only inside autograd.record(), so
    every kit.mx op runs with kit's grad mode set to MXNet's recording flag.
    """
    with GradMode(STATE.recording):
        return fn(*args, **kwargs)


class scope(Mode):  # noqa: N801 - used like autograd.record()
    """Set the recording and/or training flag for a `with` block (None leaves a flag alone).

    An entry on the thread's stack of modes (kit/_modes.py): per thread, as in MXNet.
    """

    __slots__ = ("recording", "training")

    def __init__(self, recording=None, training=None):
        self.recording = recording
        self.training = training

    def switches(self, state):
        values = {}
        if self.recording is not None:
            values["recording"] = bool(self.recording)
        if self.training is not None:
            values["training"] = bool(self.training)
        return values
