"""Grad modes: no_grad, enable_grad, set_grad_enabled, inference_mode and detect_anomaly as context
managers and as decorators (bare ones and generators too, compared with PyTorch where installed);
in-place updates under no_grad (an SGD step). The stack they share: tests/test_modes.py."""

import numpy as np
import pytest
from helpers import host, leaf
from torch_oracle import is_kit, libraries

import kit
from kit._modes import DEFAULTS, stack, switch


class BoomError(Exception):
    pass


def _raise(*_):
    raise BoomError


def assert_clean():
    assert stack() == [] and {name: switch(name) for name in DEFAULTS} == DEFAULTS


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
    with kit.detect_anomaly(check_nan=False):  # on, without the NaN check (as in PyTorch)
        assert kit.is_anomaly_enabled() and not kit.is_anomaly_check_nan_enabled()
    assert kit.is_anomaly_check_nan_enabled()


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


def test_a_decorated_function_that_raises_leaves_no_mode_behind():
    # NOTE: set_grad_enabled(False) applies itself when made (as in PyTorch): made one by one
    for make in (lambda: kit.no_grad, lambda: kit.enable_grad, lambda: kit.inference_mode,
                 kit.no_grad, lambda: kit.set_grad_enabled(False), kit.detect_anomaly):
        with pytest.raises(BoomError):
            make()(_raise)()
        assert_clean()


def _observe(torch):
    """What the grad-mode objects do, as data, for `torch` (real PyTorch or kit.torch)."""
    x = torch.ones(2, requires_grad=True)
    seen = {}

    @torch.no_grad
    def bare_no_grad():
        return (x * 2).requires_grad, torch.is_grad_enabled()

    @torch.enable_grad
    def bare_enable_grad():
        return (x * 2).requires_grad, torch.is_grad_enabled()

    @torch.inference_mode
    def bare_inference():
        return (x * 2).requires_grad, torch.is_inference_mode_enabled()

    @torch.inference_mode(False)
    def inference_off():
        return torch.is_grad_enabled(), torch.is_inference_mode_enabled()

    @torch.no_grad()
    def generator():
        for _ in range(2):
            request = yield torch.is_grad_enabled()
            seen.setdefault("requests", []).append((request, torch.is_grad_enabled()))
        return "done"

    seen["bare no_grad"] = bare_no_grad()
    seen["no_grad()(fn)"] = torch.no_grad()(lambda: torch.is_grad_enabled())()
    with torch.no_grad():
        seen["bare enable_grad"] = bare_enable_grad()
        seen["inference(False) in no_grad"] = inference_off()
    seen["bare inference_mode"] = bare_inference()
    with torch.inference_mode():
        with torch.enable_grad():
            seen["enable_grad in inference"] = (torch.is_grad_enabled(), (x * 2).requires_grad)
    gen = generator()
    seen["generator first"] = (next(gen), torch.is_grad_enabled())
    seen["generator send"] = (gen.send("a"), torch.is_grad_enabled())
    with pytest.raises(StopIteration) as stop:
        gen.send("b")
    seen["generator return"] = stop.value.value
    gen = generator()
    next(gen)
    gen.close()
    seen["after close"] = torch.is_grad_enabled()
    previous = torch.set_grad_enabled(False)
    seen["set_grad_enabled call"] = (torch.is_grad_enabled(), type(previous).__name__)
    torch.set_grad_enabled(True)
    with torch.set_grad_enabled(False):
        seen["set_grad_enabled block"] = torch.is_grad_enabled()
    off = torch.set_grad_enabled(False)(lambda: torch.is_grad_enabled())
    seen["set_grad_enabled decorator"] = (torch.is_grad_enabled(), off())
    with torch.no_grad():
        torch.set_grad_enabled(True)  # a plain call inside a block: the block still restores
        seen["call inside block"] = torch.is_grad_enabled()
    seen["after block"] = torch.is_grad_enabled()
    mode = torch.no_grad()
    with mode, torch.enable_grad(), mode:
        pass
    seen["entered twice"] = torch.is_grad_enabled()
    seen["autograd exports"] = all(hasattr(torch.autograd, name) for name in (
        "no_grad", "enable_grad", "set_grad_enabled", "inference_mode"))
    return seen


@pytest.mark.parametrize("torch", libraries())
def test_grad_mode_objects_behave_as_in_pytorch(torch):
    seen = _observe(torch)
    assert seen == {
        "bare no_grad": (False, False),
        "no_grad()(fn)": False,
        "bare enable_grad": (True, True),
        "inference(False) in no_grad": (True, False),
        "bare inference_mode": (False, True),
        "enable_grad in inference": (True, False),
        "generator first": (False, True),
        "requests": [("a", False), ("b", False)],
        "generator send": (False, True),
        "generator return": "done",
        "after close": True,
        "set_grad_enabled call": (False, "set_grad_enabled"),
        "set_grad_enabled block": False,
        "set_grad_enabled decorator": (True, False),
        "call inside block": True,
        "after block": True,
        "entered twice": True,
        "autograd exports": True,
    }
    if is_kit(torch):
        assert_clean()


def test_a_generator_suspended_inside_a_block_leaves_out_of_order_as_pytorch_does():
    def gen():
        with kit.no_grad():
            yield kit.is_grad_enabled()
        yield kit.is_grad_enabled()

    g = gen()
    with kit.enable_grad():
        assert next(g) is False  # the generator's no_grad is now above enable_grad
    assert kit.is_grad_enabled()  # as in PyTorch: enable_grad put back what it replaced
    assert not stack()[-1].flag  # the generator's no_grad is still on
    assert next(g) is True  # and, leaving, restores what it replaced
    assert_clean()


def test_a_decorated_generator_sees_its_mode_when_thrown_into():
    @kit.no_grad()
    def gen():
        try:
            yield kit.is_grad_enabled()
        except BoomError:
            yield ("caught", kit.is_grad_enabled())

    g = gen()
    assert next(g) is False
    assert g.throw(BoomError()) == ("caught", False)
    assert kit.is_grad_enabled()
    g.close()
    assert_clean()


def test_inference_mode_records_nothing_and_is_exported():
    import kit.torch as torch

    assert torch.inference_mode is kit.inference_mode is kit.grad_mode.inference_mode
    assert torch.is_inference_mode_enabled is kit.is_inference_mode_enabled
    x = kit.tensor([1.0], requires_grad=True)
    with kit.inference_mode():
        assert not kit.is_grad_enabled() and kit.is_inference_mode_enabled()
        y = x * 2
        with kit.inference_mode(False):
            assert kit.is_grad_enabled() and (x * 2).requires_grad
    assert not y.requires_grad and y.grad_fn is None
    assert_clean()
