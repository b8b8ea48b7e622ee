"""torch.nn.functional additions and the layers built on them: finite differences in float64
(kit.gradcheck) and PyTorch as the reference for values and gradients, where installed."""

import math

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


def data(*shape, low=None):
    x = RNG.standard_normal(shape)
    return np.abs(x) + low if low is not None else x


def probs(*shape):
    return 1 / (1 + np.exp(-RNG.standard_normal(shape)))


def labels(n, c):
    return RNG.integers(0, c, size=n)


def t64(a, grad=True):
    return kit.tensor(a, dtype=kit.float64 if a.dtype.kind == "f" else None, requires_grad=grad)


def torch_const(a):
    return torch.tensor(a, dtype=torch.float64) if a.dtype.kind == "f" else torch.tensor(a)


# NOTE: the padding row of an embedding gets no gradient by definition, which finite differences
# cannot know; PyTorch is its reference.
NO_GRADCHECK = {"embedding_padding"}


# (name, kit function, torch function, differentiable inputs, constant inputs): each case is
# gradchecked through its differentiable inputs and compared with PyTorch on values and gradients.
CASES = [
    ("linear", F.linear, "linear", [data(4, 3), data(2, 3), data(2)], []),
    ("linear_nobias", F.linear, "linear", [data(4, 3), data(2, 3)], []),
    ("gelu", F.gelu, "gelu", [data(3, 4) * 3], []),
    ("gelu_tanh", lambda x: F.gelu(x, approximate="tanh"),
     lambda x: torch.nn.functional.gelu(x, approximate="tanh"), [data(3, 4) * 3], []),
    ("softplus", F.softplus, "softplus", [data(3, 4) * 5], []),
    ("leaky_relu", lambda x: F.leaky_relu(x, 0.2),
     lambda x: torch.nn.functional.leaky_relu(x, 0.2), [data(3, 4)], []),
    ("silu", F.silu, "silu", [data(3, 4) * 3], []),
    ("softplus_beta", lambda x: F.softplus(x, beta=2.0, threshold=3.0),
     lambda x: torch.nn.functional.softplus(x, beta=2.0, threshold=3.0), [data(3, 4) * 3], []),
    ("layer_norm", lambda x, w, b: F.layer_norm(x, (4,), w, b),
     lambda x, w, b: torch.nn.functional.layer_norm(x, (4,), w, b),
     [data(3, 4), data(4), data(4)], []),
    ("layer_norm_2d", lambda x: F.layer_norm(x, (2, 3)),
     lambda x: torch.nn.functional.layer_norm(x, (2, 3)), [data(4, 2, 3)], []),
    ("bce", F.binary_cross_entropy, "binary_cross_entropy", [probs(3, 2), probs(3, 2)], []),
    ("bce_logits", F.binary_cross_entropy_with_logits, "binary_cross_entropy_with_logits",
     [data(5, 2) * 4, probs(5, 2)], []),
    ("bce_logits_pos_weight",
     lambda x, y, w: F.binary_cross_entropy_with_logits(x, y, pos_weight=w, reduction="sum"),
     lambda x, y, w: torch.nn.functional.binary_cross_entropy_with_logits(
         x, y, pos_weight=w, reduction="sum"), [data(5, 2) * 4, probs(5, 2)], [data(2, low=0.5)]),
    ("nll", lambda x, t: F.nll_loss(x, t), "nll_loss", [data(5, 4)], [labels(5, 4)]),
    ("nll_weight_ignore",
     lambda x, w, t: F.nll_loss(x, t, weight=w, ignore_index=1),
     lambda x, w, t: torch.nn.functional.nll_loss(x, t, weight=w, ignore_index=1),
     [data(6, 3)], [data(3, low=0.5), np.array([0, 1, 2, 1, 0, 2])]),
    ("nll_sum", lambda x, t: F.nll_loss(x, t, reduction="none"),
     lambda x, t: torch.nn.functional.nll_loss(x, t, reduction="none"), [data(5, 4)],
     [labels(5, 4)]),
    ("embedding", lambda w, i: F.embedding(i, w), lambda w, i: torch.nn.functional.embedding(i, w),
     [data(6, 3)], [np.array([[0, 2], [2, 5]])]),
    ("embedding_padding", lambda w, i: F.embedding(i, w, padding_idx=2),
     lambda w, i: torch.nn.functional.embedding(i, w, padding_idx=2), [data(6, 3)],
     [np.array([[0, 2], [2, 5]])]),
    ("batch_norm_train",
     lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True),
     lambda x, w, b: torch.nn.functional.batch_norm(x, None, None, w, b, training=True),
     [data(6, 3), data(3), data(3)], []),
    ("batch_norm_train_4d",
     lambda x: F.batch_norm(x, None, None, training=True),
     lambda x: torch.nn.functional.batch_norm(x, None, None, training=True),
     [data(4, 2, 3, 3)], []),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_gradcheck_float64(case):
    name, fn, _, floats, consts = case
    if name in NO_GRADCHECK:
        pytest.skip("no finite-difference reference (see NO_GRADCHECK)")
    fixed = [t64(a, grad=False) for a in consts]
    assert kit.gradcheck(lambda *xs: fn(*xs, *fixed), tuple(t64(a) for a in floats))


@needs_torch
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_matches_pytorch(case):
    _, fn, torch_fn, floats, consts = case
    if isinstance(torch_fn, str):
        torch_fn = getattr(torch.nn.functional, torch_fn)
    ours = [t64(a) for a in floats]
    theirs = [torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in floats]
    out = fn(*ours, *[t64(a, grad=False) for a in consts])
    ref = torch_fn(*theirs, *[torch_const(a) for a in consts])
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), rtol=1e-10,
                               atol=1e-12)
    seed = RNG.standard_normal(ref.shape)
    out.backward(kit.tensor(seed))
    ref.backward(torch.tensor(seed))
    for a, b in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-9, atol=1e-12)


def test_gelu_second_order():
    x = t64(data(5))
    assert kit.gradgradcheck(F.gelu, (x,))


def test_softplus_large_inputs_stay_finite():
    x = kit.tensor([-200.0, 0.0, 50.0, 1e4], requires_grad=True)
    y = F.softplus(x)
    y.sum().backward()
    assert np.isfinite(y.detach().numpy()).all() and np.isfinite(x.grad.numpy()).all()
    np.testing.assert_allclose(x.grad.numpy(), [0.0, 0.5, 1.0, 1.0], atol=1e-6)


def test_bce_with_logits_is_stable_for_large_logits():
    x = kit.tensor([-500.0, 500.0], requires_grad=True)
    loss = F.binary_cross_entropy_with_logits(x, kit.tensor([1.0, 0.0]))
    loss.backward()
    np.testing.assert_allclose(loss.item(), 500.0)
    np.testing.assert_allclose(x.grad.numpy(), [-0.5, 0.5])


def test_dropout_train_and_eval():
    kit.manual_seed(0)
    x = kit.ones(2000, requires_grad=True)
    y = F.dropout(x, p=0.25)
    kept = y.detach().numpy() != 0
    assert abs(kept.mean() - 0.75) < 0.05
    np.testing.assert_allclose(y.detach().numpy()[kept], 1 / 0.75, rtol=1e-6)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), kept / 0.75, rtol=1e-6)
    assert F.dropout(x, 0.5, training=False) is x
    assert float(F.dropout(x, 1.0).detach().sum()) == 0.0
    layer = ktorch.nn.Dropout(0.5).eval()
    assert layer(x) is x
    with pytest.raises(ValueError, match="between 0 and 1"):
        F.dropout(x, 1.5)


@needs_torch
def test_batchnorm_running_stats_match_pytorch():
    x = [RNG.standard_normal((8, 3, 2)).astype(np.float32) * 2 + 1 for _ in range(3)]
    for cls in ("BatchNorm1d",):
        ours, theirs = getattr(ktorch.nn, cls)(3), getattr(torch.nn, cls)(3)
        for batch in x:
            out, ref = ours(kit.tensor(batch)), theirs(torch.tensor(batch))
            np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), atol=1e-5)
        for name in ("running_mean", "running_var"):
            np.testing.assert_allclose(getattr(ours, name).numpy(),
                                       getattr(theirs, name).numpy(), rtol=1e-5)
        assert ours.num_batches_tracked.item() == 3
        ours.eval()
        theirs.eval()
        out, ref = ours(kit.tensor(x[0])), theirs(torch.tensor(x[0]))
        np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), atol=1e-5)


@needs_torch
def test_batchnorm2d_and_cumulative_average_match_pytorch():
    batches = [RNG.standard_normal((4, 2, 3, 3)).astype(np.float32) for _ in range(3)]
    ours = ktorch.nn.BatchNorm2d(2, momentum=None)
    theirs = torch.nn.BatchNorm2d(2, momentum=None)
    for batch in batches:
        ours(kit.tensor(batch))
        theirs(torch.tensor(batch))
    np.testing.assert_allclose(ours.running_var.numpy(), theirs.running_var.numpy(), rtol=1e-5)
    with pytest.raises(ValueError, match="expected 4D input"):
        ours(kit.ones(2, 2))


def test_layer_modules_forward():
    nn = ktorch.nn
    x = kit.tensor(data(2, 3, 4).astype(np.float32))
    assert nn.Flatten()(x).shape == (2, 12)
    assert nn.Flatten(0, 1)(x).shape == (6, 4)
    np.testing.assert_allclose(nn.Tanh()(x).detach().numpy(), np.tanh(x.numpy()), rtol=1e-6)
    np.testing.assert_allclose(nn.Sigmoid()(x).detach().numpy(), 1 / (1 + np.exp(-x.numpy())),
                               rtol=1e-6)
    np.testing.assert_allclose(nn.ReLU()(x).numpy(), np.maximum(x.numpy(), 0))
    np.testing.assert_allclose(nn.GELU()(x).numpy(), F.gelu(x).numpy())
    np.testing.assert_allclose(nn.SiLU()(x).numpy(), F.silu(x).numpy())
    np.testing.assert_allclose(nn.LeakyReLU(0.1)(x).numpy(), F.leaky_relu(x, 0.1).numpy())
    np.testing.assert_allclose(nn.LogSoftmax(dim=1)(x).numpy(), F.log_softmax(x, 1).numpy())
    np.testing.assert_allclose(nn.Softmax(dim=1)(x).numpy(), F.softmax(x, 1).numpy())
    np.testing.assert_allclose(nn.Softplus()(x).numpy(), F.softplus(x).numpy())
    ln = nn.LayerNorm(4)
    out = ln(x).detach().numpy()
    np.testing.assert_allclose(out.mean(-1), 0, atol=1e-6)
    assert [n for n, _ in ln.named_parameters()] == ["weight", "bias"]
    emb = nn.Embedding(5, 2, padding_idx=0)
    np.testing.assert_array_equal(emb.weight.detach().numpy()[0], [0.0, 0.0])
    emb(kit.tensor([[0, 1], [1, 0]])).sum().backward()
    np.testing.assert_array_equal(emb.weight.grad.numpy()[[0, 1]], [[0, 0], [2, 2]])
    with pytest.raises(TypeError, match="integer"):
        emb(kit.tensor([0.0]))


@needs_torch
def test_losses_as_modules_match_pytorch():
    logits = RNG.standard_normal((6, 4)).astype(np.float32)
    target = labels(6, 4)
    probs_target = probs(6, 4).astype(np.float32)
    for name, y in [("CrossEntropyLoss", target), ("MSELoss", probs_target),
                    ("BCEWithLogitsLoss", probs_target), ("NLLLoss", target)]:
        for reduction in ("mean", "sum", "none"):
            ours = getattr(ktorch.nn, name)(reduction=reduction)(kit.tensor(logits), kit.tensor(y))
            ref = getattr(torch.nn, name)(reduction=reduction)(torch.tensor(logits),
                                                               torch.tensor(y))
            np.testing.assert_allclose(ours.numpy(), ref.numpy(), rtol=1e-5, err_msg=name)
    with pytest.raises(ValueError, match="reduction"):
        ktorch.nn.MSELoss(reduction="avg")


def test_linear_default_init_bounds():
    kit.manual_seed(0)
    fc = ktorch.nn.Linear(100, 50)
    bound = 1 / math.sqrt(100)
    w, b = fc.weight.detach().numpy(), fc.bias.detach().numpy()
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.95 * bound
    assert np.abs(b).max() <= bound
    assert abs(w.std() - bound / math.sqrt(3)) < 0.01  # U(-a, a) has std a / sqrt(3)


def test_init_functions():
    init = ktorch.nn.init
    kit.manual_seed(1)
    w = kit.empty(200, 300)
    init.kaiming_normal_(w, mode="fan_out", nonlinearity="relu")
    assert abs(w.numpy().std() - math.sqrt(2 / 200)) < 0.003
    init.kaiming_uniform_(w)
    assert np.abs(w.numpy()).max() <= math.sqrt(6 / 300)
    init.xavier_uniform_(w, gain=2.0)
    assert np.abs(w.numpy()).max() <= 2 * math.sqrt(6 / 500)
    init.xavier_normal_(w)
    assert abs(w.numpy().std() - math.sqrt(2 / 500)) < 0.003
    init.normal_(w, 3.0, 0.5)
    assert abs(w.numpy().mean() - 3.0) < 0.01
    init.uniform_(w, -1, 0)
    assert w.numpy().max() <= 0 and w.numpy().min() >= -1
    assert (init.ones_(w).numpy() == 1).all() and (init.zeros_(w).numpy() == 0).all()
    assert (init.constant_(w, 0.25).numpy() == 0.25).all()
    assert init.calculate_gain("tanh") == 5 / 3
    with pytest.raises(ValueError, match="fewer than 2 dimensions"):
        init.xavier_uniform_(kit.empty(3))
    p = ktorch.nn.Parameter(kit.zeros(3, 3))
    init.normal_(p)  # on a parameter that requires grad: in place, not recorded
    assert p.is_leaf and p.requires_grad and p.grad_fn is None


@needs_torch
def test_clip_grad_norm_matches_pytorch():
    grads = [data(3, 4) * 5, data(7) * 5]
    for norm_type in (2.0, 1.0, float("inf")):
        ours = [kit.tensor(g.astype(np.float32), requires_grad=True) for g in grads]
        theirs = [torch.tensor(g.astype(np.float32), requires_grad=True) for g in grads]
        for p, q, g in zip(ours, theirs, grads, strict=True):
            p.grad = kit.tensor(g.astype(np.float32))
            q.grad = torch.tensor(g.astype(np.float32))
        total = ktorch.nn.utils.clip_grad_norm_(ours, 1.0, norm_type)
        ref = torch.nn.utils.clip_grad_norm_(theirs, 1.0, norm_type)
        np.testing.assert_allclose(total.item(), ref.item(), rtol=1e-6)
        for p, q in zip(ours, theirs, strict=True):
            np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-6)
    p = kit.tensor([1.0], requires_grad=True)
    p.grad = kit.tensor([float("nan")])
    with pytest.raises(RuntimeError, match="non-finite"):
        ktorch.nn.utils.clip_grad_norm_([p], 1.0, error_if_nonfinite=True)


def test_clip_grad_value():
    p = kit.tensor([1.0, 1.0], requires_grad=True)
    p.grad = kit.tensor([-3.0, 0.5])
    ktorch.nn.utils.clip_grad_value_([p], 1.0)
    np.testing.assert_array_equal(p.grad.numpy(), [-1.0, 0.5])


@pytest.mark.parametrize("shape", [(5, 3), (2, 4, 3), (3,)])
def test_fused_linear_matches_composite_to_second_order(shape):
    from kit.ops.nn import linear

    x, w, b = t64(data(*shape)), t64(data(2, 3)), t64(data(2))
    out = linear(x, w, b)
    ref = x @ w.mT + b
    assert out.grad_fn.name() == "LinearBackward0"
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), rtol=1e-12)
    assert kit.gradcheck(linear, (x, w, b))
    assert kit.gradgradcheck(linear, (x, w, b))
    assert kit.gradcheck(lambda x, w: linear(x, w), (x, w))
    gw = kit.grad(linear(x, w, b).sum(), w)[0]
    assert gw.numpy().flags["C_CONTIGUOUS"]  # the weight gradient comes in the weight's layout


def test_fused_linear_errors_and_vmap():
    from kit.ops.nn import linear

    with pytest.raises(TypeError, match="same dtype"):
        linear(kit.ones(2, 3, dtype=kit.float64), kit.ones(4, 3))
    with pytest.raises(ValueError, match="bias must have shape"):
        linear(kit.ones(2, 3), kit.ones(4, 3), kit.ones(3))
    with pytest.raises(TypeError, match="must be Tensors"):
        linear(np.ones((2, 3)), kit.ones(4, 3))
    w, b = kit.tensor(data(2, 3)), kit.tensor(data(2))
    xs = kit.tensor(data(4, 5, 3))
    batched = kit.func.vmap(lambda x: F.linear(x, w, b))(xs)
    np.testing.assert_allclose(batched.numpy(), F.linear(xs, w, b).numpy(), rtol=1e-12)


CE_OPTIONS = [{}, {"weight": True}, {"ignore_index": 1}, {"label_smoothing": 0.1},
              {"weight": True, "ignore_index": 3, "label_smoothing": 0.2}]


@needs_torch
@pytest.mark.parametrize("options", CE_OPTIONS, ids=str)
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("by_index", [True, False])
def test_cross_entropy_options_match_pytorch(options, reduction, by_index):
    if not by_index and "ignore_index" in options:
        pytest.skip("PyTorch ignores ignore_index for probability targets; nothing to compare")
    x = data(6, 4)
    target = np.array([0, 3, 1, 1, 2, 3]) if by_index else probs(6, 4)
    if not by_index:
        target /= target.sum(1, keepdims=True)
    weight = data(4, low=0.5)

    def call(lib, fn, x):
        kwargs = dict(options, reduction=reduction)
        if kwargs.pop("weight", False):
            kwargs["weight"] = lib.tensor(weight)
        return fn(x, lib.tensor(target), **kwargs)

    ours = t64(x)
    theirs = torch.tensor(x, requires_grad=True)
    out = call(kit, F.cross_entropy, ours)
    ref = call(torch, torch.nn.functional.cross_entropy, theirs)
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), rtol=1e-12)
    out.sum().backward()
    ref.sum().backward()
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-10, atol=1e-14)
    module = ktorch.nn.CrossEntropyLoss(
        weight=kit.tensor(weight) if options.get("weight") else None,
        ignore_index=options.get("ignore_index", -100), reduction=reduction,
        label_smoothing=options.get("label_smoothing", 0.0))
    np.testing.assert_allclose(module(t64(x), kit.tensor(target)).detach().numpy(),
                               ref.detach().numpy(), rtol=1e-12)


def test_cross_entropy_options_gradcheck():
    target = kit.tensor(np.array([0, 3, 1, 1]))
    weight = kit.tensor(data(4, low=0.5))
    assert kit.gradcheck(lambda x: F.cross_entropy(x, target, weight, ignore_index=3,
                                                   label_smoothing=0.3), (t64(data(4, 4)),))
    with pytest.raises(ValueError, match="label_smoothing"):
        F.cross_entropy(t64(data(4, 4)), target, label_smoothing=1.5)


def test_vmap_through_the_new_primitives():
    xs = t64(data(3, 5), grad=False)
    np.testing.assert_allclose(kit.func.vmap(F.gelu)(xs).numpy(), F.gelu(xs).numpy(), rtol=1e-12)
    grads = kit.func.vmap(kit.func.grad(lambda x: F.gelu(x).sum()))(xs)
    x = t64(xs.numpy())
    F.gelu(x).sum().backward()  # elementwise: the gradient of the total is each row's
    np.testing.assert_allclose(grads.numpy(), x.grad.numpy(), rtol=1e-12)
