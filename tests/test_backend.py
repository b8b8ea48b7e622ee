"""kit.backend: NumPy always, CuPy only when a GPU is really usable (with the reason kept when
not), the array module of the data, device names, explicit transfers."""

import numpy as np
import pytest
from helpers import host

import kit
from kit import backend

needs_no_gpu = pytest.mark.skipif(backend.gpu_available(), reason="a GPU is usable here")


@needs_no_gpu
def test_gpu_unavailable_gives_a_reason_that_mentions_cupy():
    assert backend.gpu_available() is False
    reason = backend.gpu_unavailable_reason()
    assert isinstance(reason, str) and "CuPy" in reason


@needs_no_gpu
@pytest.mark.parametrize("move", [
    lambda: kit.tensor([1.0]).to("gpu"), lambda: kit.tensor([1.0]).cuda(),
    lambda: kit.tensor([1.0], device="cuda"), lambda: kit.zeros(2, device="gpu"),
    lambda: kit.randn(2, device="cuda:0"), lambda: backend.to_device(np.ones(2), "gpu"),
], ids=["to", "cuda", "tensor", "zeros", "randn", "to_device"])
def test_moving_to_the_gpu_without_one_raises_the_reason(move):
    with pytest.raises(RuntimeError, match=r"needs a GPU, but none is usable: CuPy"):
        move()


def test_gpu_available_agrees_with_its_reason():
    assert backend.gpu_available() == (backend.gpu_unavailable_reason() is None)


def test_get_array_module_is_numpy_for_numpy_data():
    assert backend.get_array_module(np.zeros(2)) is np
    assert backend.get_array_module(np.zeros(2), 3.0, [1]) is np
    assert backend.get_array_module() is np
    assert backend.device_of(np.zeros(2)) == "cpu"


@pytest.mark.parametrize("name, expected", [
    ("cpu", "cpu"), ("CPU", "cpu"), ("gpu", "gpu"), ("cuda", "gpu"), ("cuda:0", "gpu"),
    (None, "cpu"),
])
def test_normalize_device_accepts_the_usual_spellings(name, expected):
    assert backend.normalize_device(name) == expected


@pytest.mark.parametrize("name", ["tpu", "mps", "", "cudax", 3])
def test_normalize_device_rejects_others_clearly(name):
    with pytest.raises(ValueError, match=r"unknown device .*: use 'cpu' or 'gpu' \('cuda' is "
                                         r"accepted too\)"):
        backend.normalize_device(name)


def test_synchronize_is_a_no_op_on_the_cpu():
    assert backend.synchronize("cpu") is None
    kit.synchronize()  # without a GPU, or with one: returns once queued work is done


def test_round_trip_between_devices(xp_device):
    x = kit.tensor(np.array([1.0, 2.0]), requires_grad=True)
    y = x.to(xp_device)
    assert y.device == xp_device
    z = (y * y).to("cpu")
    assert z.device == "cpu"
    z.sum().backward()
    assert x.grad.device == "cpu"
    np.testing.assert_array_equal(host(x.grad), [2.0, 4.0])


def test_every_op_family_runs_on_the_device(xp_device):
    w = kit.tensor(np.random.default_rng(0).standard_normal((3, 2)), device=xp_device,
                   requires_grad=True)
    x = kit.tensor(np.ones((4, 3)), device=xp_device)
    out = kit.cross_entropy(kit.relu(x @ w).softmax(-1), kit.tensor([0, 1, 1, 0],
                                                                    device=xp_device))
    loss = out + kit.cat([w, w]).sum() + w[kit.tensor([0, 0], device=xp_device)].max()
    loss.backward()
    assert w.grad.device == xp_device and np.isfinite(host(w.grad)).all()


def test_quiet_turns_numpy_float_warnings_off_and_loud_puts_the_caller_s_back():
    big = np.array([3e38], np.float32)
    with np.errstate(over="raise", divide="warn"):
        token = backend.quiet()
        try:
            assert np.isinf(big * 10)[0]  # no FloatingPointError, no warning
            assert np.isinf(np.float32(1) / np.float32(0))
        finally:
            backend.loud(token)
        with pytest.raises(FloatingPointError):
            big * 10  # noqa: B018
        assert np.geterr()["divide"] == "warn"


def test_a_backward_through_an_overflow_gives_inf_without_a_warning():
    x = kit.tensor(np.array([1e38], np.float32), requires_grad=True)
    y = x * 2  # (no overflow forward)
    y.backward(kit.tensor(np.array([3e38], np.float32)))  # (warnings are errors here)
    assert np.isinf(x.grad.numpy()[0])
    x = kit.tensor(np.array([1e-30], np.float32), requires_grad=True)
    f = kit.compile(lambda x: (x * 2).sum() * 3e38)  # (backward: 3e38 * 2)
    for _ in range(3):
        f(x).backward()  # a replayed backward, too
    assert np.isinf(x.grad.numpy()[0])
