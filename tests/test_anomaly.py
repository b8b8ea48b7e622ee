"""Anomaly detection (kit/_anomaly.py, kit.detect_anomaly, kit.set_detect_anomaly): the switches
as PyTorch sets them, and what an error raised in backward says about the forward line."""

import os
import traceback

import numpy as np
import pytest
from helpers import leaf
from torch_oracle import libraries

import kit
import kit.grad_mode
from kit._anomaly import forward_trace

# PyTorch warns when anomaly detection starts, and prints the forward line as a warning
QUIET_PYTORCH = (pytest.mark.filterwarnings("ignore:Anomaly Detection has been enabled"),
                 pytest.mark.filterwarnings("ignore:Error detected in"))


def notes(error):
    """The notes under an error's message (Python 3.11+), or its message on 3.10."""
    return "".join(getattr(error, "__notes__", error.args))


@pytest.mark.parametrize("torch", libraries())
@QUIET_PYTORCH[0]
def test_the_switches_follow_pytorch(torch):
    seen = []

    def observe(label):
        seen.append((label, torch.is_anomaly_enabled(), torch.is_anomaly_check_nan_enabled()))

    observe("default")
    with torch.autograd.detect_anomaly(check_nan=False):
        observe("detect_anomaly(check_nan=False)")
    torch.autograd.set_detect_anomaly(True)
    observe("set_detect_anomaly(True) called")
    with torch.autograd.set_detect_anomaly(False, check_nan=False):
        observe("set_detect_anomaly(False, check_nan=False) block")
    observe("after the block")
    torch.autograd.set_detect_anomaly(False)
    observe("set_detect_anomaly(False) called")
    assert seen == [
        ("default", False, True),
        ("detect_anomaly(check_nan=False)", True, False),
        ("set_detect_anomaly(True) called", True, True),
        ("set_detect_anomaly(False, check_nan=False) block", False, False),
        ("after the block", True, True),
        ("set_detect_anomaly(False) called", False, True),
    ]


@pytest.mark.parametrize("torch", libraries())
@QUIET_PYTORCH[0]
def test_without_the_nan_check_nan_flows_through(torch):
    x = torch.tensor([0.0, 1.0], dtype=torch.float64, requires_grad=True)
    with torch.autograd.detect_anomaly(check_nan=False):
        (x.sqrt() * 0).sum().backward()
    assert np.isnan(x.grad.numpy()[0])


def test_set_detect_anomaly_as_a_call_names_the_nan_op():
    kit.set_detect_anomaly(True)
    try:
        x = leaf([0.0, 4.0])
        y = x.sqrt() * 0
        with pytest.raises(RuntimeError, match="Function 'SqrtBackward0' returned nan") as error:
            y.sum().backward()
    finally:
        kit.set_detect_anomaly(False)
    assert not kit.is_anomaly_enabled()
    text = notes(error.value)
    assert "Error detected in SqrtBackward0. The forward call that created it:" in text
    assert "y = x.sqrt() * 0" in text and "test_anomaly.py" in text
    assert f"kit{os.sep}" not in text  # kit's own frames are left out


def test_any_error_in_backward_names_the_forward_line_under_anomaly():
    x = leaf([1.0, 2.0])
    with kit.detect_anomaly():
        h = x * 2
        s = h ** 2
        h += 1
        with pytest.raises(RuntimeError, match="modified by an inplace operation") as error:
            s.sum().backward()
    assert "Hint" not in str(error.value)  # the hint is for when anomaly detection is off
    assert "Error detected in PowBackward0" in notes(error.value)
    assert "s = h ** 2" in notes(error.value)


def test_an_error_in_a_functions_backward_names_the_apply_line():
    class Broken(kit.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            raise ValueError("broken backward")

    x = leaf([1.0])
    with kit.detect_anomaly(check_nan=False):
        y = Broken.apply(x) + 1
        with pytest.raises(ValueError, match="broken backward") as error:
            y.sum().backward()
    assert "Error detected in BrokenBackward" in notes(error.value)
    assert "y = Broken.apply(x) + 1" in notes(error.value)


def test_without_anomaly_detection_the_inplace_error_hints_at_it():
    x = leaf([1.0, 2.0])
    h = x * 2
    s = h ** 2
    h += 1
    with pytest.raises(RuntimeError, match=r"saved by PowBackward0, is at version 1; expected "
                                           r"version 0 instead\. .* Hint: run the forward and the "
                                           r"backward under detect_anomaly\(\)") as error:
        s.sum().backward()
    assert not getattr(error.value, "__notes__", None)


def test_the_trace_shows_your_frames_only():
    frames = [
        traceback.FrameSummary("<frozen runpy>", 88, "_run_code", line=""),
        traceback.FrameSummary(os.__file__, 10, "library", line="library()"),
        traceback.FrameSummary("/home/me/train.py", 5, "<module>", line="main()"),
        traceback.FrameSummary("<ipython-input-3>", 2, "main", line="loss = model(x)"),
        traceback.FrameSummary(kit.grad_mode.__file__, 20, "kit_frame", line="kit()"),
    ]
    text = forward_trace(traceback.StackSummary.from_list(frames))
    assert "train.py" in text and "loss = model(x)" in text
    assert "frozen" not in text and "library()" not in text and "kit()" not in text
    # with no frame of yours, the innermost frames are shown rather than nothing
    assert "kit()" in forward_trace(traceback.StackSummary.from_list(frames[:2] + frames[4:]))


def test_the_docstring_examples_run():
    import doctest

    kit.set_detect_anomaly(False)
    result = doctest.testmod(kit.grad_mode)
    assert result.attempted >= 6 and result.failed == 0


@pytest.mark.parametrize("torch", libraries())
@QUIET_PYTORCH[0]
@QUIET_PYTORCH[1]
def test_nan_message_matches_pytorch_up_to_kits_addition(torch):
    x = torch.tensor([0.0, 1.0], dtype=torch.float64, requires_grad=True)
    with torch.autograd.detect_anomaly(), pytest.raises(RuntimeError) as error:
        (x.sqrt() * 0).sum().backward()
    assert str(error.value).startswith("Function 'SqrtBackward0' returned nan values in its 0th "
                                       "output")
