"""Convolution and pooling (kit/ops/conv.py and the layers on it): finite differences to second
order in float64, PyTorch as the reference for values and gradients, and a small CNN that
trains to PyTorch's weights."""

import numpy as np
import pytest

import kit
import kit.torch as ktorch
from kit.nn import functional as F  # noqa: N812 - the name PyTorch code uses

try:
    import torch
except ImportError:  # pragma: no cover - PyTorch is the optional oracle
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed (the oracle)")
RNG = np.random.default_rng(0)

# (input shape, weight shape, keyword arguments)
CONV = [
    ((2, 3, 6, 5), (4, 3, 3, 3), {}),
    ((1, 2, 7, 6), (3, 2, 3, 2), {"stride": 2, "padding": 1}),
    ((1, 2, 7, 8), (2, 2, 2, 3), {"stride": (1, 2), "padding": (2, 1), "dilation": (2, 1)}),
    ((2, 4, 5, 5), (6, 2, 3, 3), {"padding": 1, "groups": 2}),
    ((1, 4, 6, 6), (4, 1, 3, 3), {"stride": 2, "groups": 4}),
    ((1, 3, 5, 5), (2, 3, 3, 3), {"padding": "same", "dilation": 1}),
    ((1, 3, 5, 5), (2, 3, 1, 1), {"padding": "valid"}),
]
POOL = [
    {"kernel_size": 2}, {"kernel_size": 3, "stride": 2, "padding": 1},
    {"kernel_size": (3, 2), "stride": (1, 2)},
]
MAX_POOL = POOL + [{"kernel_size": 2, "dilation": 2, "stride": 1}]
AVG_POOL = POOL + [
    {"kernel_size": 3, "stride": 2, "padding": 1, "count_include_pad": False},
    {"kernel_size": 2, "divisor_override": 3},
]


def t64(shape, grad=True):
    return kit.tensor(RNG.standard_normal(shape), requires_grad=grad)


@pytest.mark.parametrize("x_shape, w_shape, kwargs", CONV)
def test_conv2d_gradcheck_first_and_second_order(x_shape, w_shape, kwargs):
    x, w, b = t64(x_shape), t64(w_shape), t64(w_shape[:1])

    def fn(x, w, b):
        return F.conv2d(x, w, b, **kwargs)

    assert kit.gradcheck(fn, (x, w, b))
    assert kit.gradgradcheck(fn, (x, w, b))


@pytest.mark.parametrize("kwargs", MAX_POOL)
def test_max_pool_gradcheck(kwargs):
    x = t64((2, 2, 6, 7))
    assert kit.gradcheck(lambda x: F.max_pool2d(x, **kwargs), (x,))
    assert kit.gradgradcheck(lambda x: F.max_pool2d(x, **kwargs), (x,))


@pytest.mark.parametrize("kwargs", AVG_POOL)
def test_avg_pool_gradcheck(kwargs):
    x = t64((2, 2, 6, 7))
    assert kit.gradcheck(lambda x: F.avg_pool2d(x, **kwargs), (x,))


def compare(ours_fn, ref_fn, arrays):
    ours = [kit.tensor(a, requires_grad=True) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    out, ref = ours_fn(*ours), ref_fn(*theirs)
    if isinstance(ref, tuple):  # (values, indices)
        np.testing.assert_array_equal(out[1].numpy(), ref[1].numpy())
        out, ref = out[0], ref[0]
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), rtol=1e-12,
                               atol=1e-12)
    seed = RNG.standard_normal(tuple(ref.shape))
    out.backward(kit.tensor(seed))
    ref.backward(torch.tensor(seed))
    for a, b in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-11, atol=1e-12)


@needs_torch
@pytest.mark.parametrize("x_shape, w_shape, kwargs", CONV)
def test_conv2d_matches_pytorch(x_shape, w_shape, kwargs):
    arrays = [RNG.standard_normal(s) for s in (x_shape, w_shape, w_shape[:1])]
    compare(lambda x, w, b: F.conv2d(x, w, b, **kwargs),
            lambda x, w, b: torch.nn.functional.conv2d(x, w, b, **kwargs), arrays)


@needs_torch
@pytest.mark.parametrize("kwargs", MAX_POOL)
def test_max_pool_matches_pytorch_with_indices(kwargs):
    compare(lambda x: F.max_pool2d(x, return_indices=True, **kwargs),
            lambda x: torch.nn.functional.max_pool2d(x, return_indices=True, **kwargs),
            [RNG.standard_normal((2, 3, 7, 6))])


@needs_torch
@pytest.mark.parametrize("kwargs", AVG_POOL)
def test_avg_pool_matches_pytorch(kwargs):
    compare(lambda x: F.avg_pool2d(x, **kwargs),
            lambda x: torch.nn.functional.avg_pool2d(x, **kwargs),
            [RNG.standard_normal((2, 3, 7, 6))])


def test_max_pool_ties_send_the_gradient_to_one_element():
    x = kit.ones(1, 1, 2, 2, requires_grad=True)
    F.max_pool2d(x, 2).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy().reshape(-1), [1.0, 0.0, 0.0, 0.0])


def test_errors_name_the_fix():
    x, w = kit.ones(1, 3, 5, 5), kit.ones(2, 3, 3, 3)
    with pytest.raises(ValueError, match="unsqueeze"):
        F.conv2d(kit.ones(3, 5, 5), w)
    with pytest.raises(ValueError, match="input channels"):
        F.conv2d(kit.ones(1, 4, 5, 5), w)
    with pytest.raises(TypeError, match="same dtype"):
        F.conv2d(x.double(), w)
    with pytest.raises(ValueError, match="smaller than the dilated kernel"):
        F.conv2d(kit.ones(1, 3, 2, 2), w)
    with pytest.raises(ValueError, match="odd kernel"):
        F.conv2d(x, kit.ones(2, 3, 2, 2), padding="same")
    with pytest.raises(ValueError, match="half of effective kernel"):
        F.max_pool2d(x, 2, padding=2)
    with pytest.raises(ValueError, match="ceil_mode"):
        F.avg_pool2d(x, 2, ceil_mode=True)
    with pytest.raises(ValueError, match="divisible by groups"):
        ktorch.nn.Conv2d(3, 4, 3, groups=2)


def test_conv_default_init_and_repr():
    kit.manual_seed(0)
    conv = ktorch.nn.Conv2d(4, 6, 3)
    bound = 1 / np.sqrt(4 * 9)
    assert np.abs(conv.weight.detach().numpy()).max() <= bound
    assert np.abs(conv.bias.detach().numpy()).max() <= bound
    assert repr(conv) == "Conv2d(4, 6, kernel_size=(3, 3), stride=(1, 1))"
    assert repr(ktorch.nn.MaxPool2d(2)) == (
        "MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)")


def cnn(lib):
    nn = lib.nn
    return nn.Sequential(
        nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(4, 6, 3, groups=2), nn.BatchNorm2d(6), nn.Tanh(), nn.AvgPool2d(2),
        nn.Flatten(), nn.Linear(6, 3),
    )


@needs_torch
def test_small_cnn_trains_to_pytorch_weights():
    ref, ours = cnn(torch), cnn(ktorch)
    ours.load_state_dict({k: kit.tensor(v.detach().numpy()) for k, v in ref.state_dict().items()})
    x = RNG.standard_normal((8, 1, 8, 8)).astype(np.float32)
    y = RNG.integers(0, 3, size=8)
    for lib, model in ((ktorch, ours), (torch, ref)):
        opt = lib.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        for _ in range(10):
            opt.zero_grad()
            lib.nn.functional.cross_entropy(model(lib.tensor(x)), lib.tensor(y)).backward()
            opt.step()
    for (name, a), b in zip(ours.state_dict().items(), ref.state_dict().values(), strict=True):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-4, atol=1e-5, err_msg=name)


def _cnn_loss(params, x, y):
    """A small CNN's loss on one batch: conv, max pool, conv, avg pool, linear."""
    w1, b1, w2, w3, b3 = params
    h = F.max_pool2d(F.relu(F.conv2d(x, w1, b1, padding=1)), 2)
    h = F.avg_pool2d(F.conv2d(h, w2, None, groups=2), 2)
    return F.cross_entropy(F.linear(h.flatten(1), w3, b3), y)


def _cnn_params(ensemble=()):
    shapes = [(4, 2, 3, 3), (4,), (4, 2, 2, 2), (3, 4), (3,)]
    return [t64(ensemble + shape, grad=False) for shape in shapes]


def _stacked(rows):
    return np.stack([r.numpy() for r in rows])


def test_per_sample_gradients_of_a_cnn_under_vmap_match_a_loop():
    """vmap(grad) over the examples (shared weights): each batching rule's folded form, and the
    grouped form of the weight gradient (one weight gradient per sample)."""
    params = _cnn_params()
    x, y = t64((5, 2, 6, 6), grad=False), kit.tensor(np.array([0, 2, 1, 1, 0]))

    def one(params, x, y):
        return _cnn_loss(params, x.unsqueeze(0), y.unsqueeze(0))

    grads = kit.func.vmap(kit.func.grad(one), in_dims=(None, 0, 0))(params, x, y)
    for i, g in enumerate(grads):
        loop = [kit.func.grad(one)(params, x[k], y[k])[i] for k in range(5)]
        np.testing.assert_allclose(g.numpy(), _stacked(loop), rtol=1e-10, atol=1e-12)


def test_an_ensemble_of_cnns_under_vmap_matches_a_loop():
    """Weights batched (3 models), data shared, then both batched at two nested levels."""
    params = _cnn_params((3,))
    x, y = t64((2, 2, 6, 6), grad=False), kit.tensor(np.array([1, 2]))
    losses = kit.func.vmap(_cnn_loss, in_dims=(0, None, None))(params, x, y)
    loop = [_cnn_loss([p[m] for p in params], x, y) for m in range(3)]
    np.testing.assert_allclose(losses.numpy(), _stacked(loop), rtol=1e-10)
    xs = t64((4, 2, 2, 6, 6), grad=False)
    per_example = kit.func.vmap(kit.func.grad(_cnn_loss), in_dims=(None, 0, None))
    per_model_grads = kit.func.vmap(per_example, in_dims=(0, None, None))(params, xs, y)
    for i, g in enumerate(per_model_grads):
        assert g.shape == (3, 4) + tuple(params[i].shape[1:])
        for m, k in ((0, 0), (2, 3), (1, 2)):
            ref = kit.func.grad(_cnn_loss)([p[m] for p in params], xs[k], y)[i]
            np.testing.assert_allclose(g[m, k].numpy(), ref.numpy(), rtol=1e-10, atol=1e-12)


def test_max_pool_indices_under_vmap():
    xs = t64((3, 1, 2, 4, 4), grad=False)
    values, indices = kit.func.vmap(lambda x: F.max_pool2d(x, 2, return_indices=True))(xs)
    for k in range(3):
        v, i = F.max_pool2d(xs[k], 2, return_indices=True)
        np.testing.assert_array_equal(values[k].numpy(), v.numpy())
        np.testing.assert_array_equal(indices[k].numpy(), i.numpy())
