"""Grad modes: no_grad, enable_grad, set_grad_enabled and detect_anomaly as context managers and
as decorators; in-place updates under no_grad (an SGD step)."""

import numpy as np
import pytest
from helpers import host, leaf

import kit


def test_no_grad_context_records_nothing_and_restores():
    x = leaf([1.0, 2.0])
    with kit.no_grad():
        assert not kit.is_grad_enabled()
        y = x * 2
    assert kit.is_grad_enabled()
    assert not y.requires_grad and y.grad_fn is None and y.is_leaf


def test_no_grad_restores_after_an_exception():
    with pytest.raises(ValueError), kit.no_grad():
        raise ValueError("inside")
    assert kit.is_grad_enabled()


def test_nesting_enable_grad_inside_no_grad():
    x = leaf([1.0])
    with kit.no_grad():
        with kit.enable_grad():
            y = x * 2
        z = x * 2
    assert y.requires_grad and not z.requires_grad


def test_decorators():
    x = leaf([1.0])

    @kit.no_grad()
    def frozen(t):
        return t * 2

    @kit.enable_grad()
    def recorded(t):
        return t * 2

    @kit.set_grad_enabled(False)
    def off(t):
        return t * 2

    assert frozen.__name__ == "frozen"
    assert not frozen(x).requires_grad and kit.is_grad_enabled()
    with kit.no_grad():
        assert recorded(x).requires_grad
        assert not kit.is_grad_enabled()
    assert not off(x).requires_grad and kit.is_grad_enabled()


def test_set_grad_enabled_as_context_and_as_a_call():
    with kit.set_grad_enabled(False):
        assert not kit.is_grad_enabled()
        with kit.set_grad_enabled(True):
            assert kit.is_grad_enabled()
        assert not kit.is_grad_enabled()
    assert kit.is_grad_enabled()
    try:
        kit.set_grad_enabled(False)  # PyTorch applies the mode on a plain call too
        assert not kit.is_grad_enabled()
    finally:
        kit.set_grad_enabled(True)
    assert kit.is_grad_enabled()


def test_one_instance_can_be_entered_twice():
    mode = kit.no_grad()
    with mode:
        with mode:
            assert not kit.is_grad_enabled()
        assert not kit.is_grad_enabled()
    assert kit.is_grad_enabled()


def test_detect_anomaly_as_context_and_decorator():
    with kit.detect_anomaly():
        assert kit.is_anomaly_enabled()
    assert not kit.is_anomaly_enabled()

    @kit.detect_anomaly()
    def run():
        return kit.is_anomaly_enabled()

    assert run() and not kit.is_anomaly_enabled()
    with kit.detect_anomaly(check_nan=False):
        assert not kit.is_anomaly_enabled()


def test_sgd_step_under_no_grad_updates_in_place():
    w = leaf([1.0, -2.0])
    data_before = w._data
    for _ in range(3):
        loss = (w * w).sum()
        loss.backward()
        with kit.no_grad():
            w -= 0.25 * w.grad
        w.grad.zero_()
    assert w._data is data_before  # updated in place, still the same leaf
    assert w.is_leaf and w.requires_grad and w._version == 3
    np.testing.assert_allclose(host(w), [0.125, -0.25])
    np.testing.assert_array_equal(host(w.grad), [0.0, 0.0])


def test_in_place_method_forms_under_no_grad():
    w = leaf([1.0, 2.0])
    with kit.no_grad():
        w.add_(1.0)
        w.mul_(2.0)
        w.sub_(kit.tensor(np.array([1.0, 1.0])))
        w.div_(3.0)
        w[0] = 10.0
        w.clamp_(max=5.0)
    np.testing.assert_allclose(host(w), [5.0, 5.0 / 3.0])
    assert w.grad_fn is None and w._version == 6
