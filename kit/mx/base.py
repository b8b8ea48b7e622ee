"""What every part of kit.mx shares: MXNet's error type and the recording/training state."""

from __future__ import annotations

from kit.grad_mode import STATE


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


class _Mode:
    """MXNet's two flags: is a graph being recorded, and is the forward in training mode."""

    __slots__ = ("recording", "training")

    def __init__(self):
        self.recording = False
        self.training = False


MODE = _Mode()


def run(fn, *args, **kwargs):
    """Call a kit op with kit's grad mode set to MXNet's recording flag.

    NOTE: kit records by default (as PyTorch); MXNet records only inside autograd.record(), so
    every kit.mx op runs with kit's flag forced to MXNet's.
    """
    previous = STATE.enabled
    STATE.enabled = MODE.recording
    try:
        return fn(*args, **kwargs)
    finally:
        STATE.enabled = previous


class scope:  # noqa: N801 - used like autograd.record()
    """Set the recording and/or training flag for a `with` block (None leaves a flag alone)."""

    def __init__(self, recording=None, training=None):
        self._recording = recording
        self._training = training
        self._saved = []

    def __enter__(self):
        self._saved.append((MODE.recording, MODE.training))
        if self._recording is not None:
            MODE.recording = bool(self._recording)
        if self._training is not None:
            MODE.training = bool(self._training)
        return self

    def __exit__(self, *exc):
        MODE.recording, MODE.training = self._saved.pop()
        return False
