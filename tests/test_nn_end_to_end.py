"""End-to-end patterns from real PyTorch code, run unchanged on kit.torch and on PyTorch (where
installed): a custom autograd.Function inside a Module, trained with an optimiser, saved and
loaded; an MLP that trains to PyTorch's weights from the same start; a DataLoader loop."""

import io

import numpy as np
import pytest

import kit.torch as ktorch
from tests.torch_oracle import libraries

try:
    import torch
except ImportError:  # pragma: no cover - PyTorch is the optional oracle
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed (the oracle)")


def custom_linear_model(torch):
    """The LinearFunction of PyTorch's "Extending PyTorch" note, wrapped in a Module as its
    tutorial does, between two built-in layers."""

    class LinearFunction(torch.autograd.Function):
        @staticmethod
        def forward(ctx, input, weight, bias=None):
            ctx.save_for_backward(input, weight, bias)
            output = input.mm(weight.t())
            if bias is not None:
                output += bias.unsqueeze(0).expand_as(output)
            return output

        @staticmethod
        def backward(ctx, grad_output):
            input, weight, bias = ctx.saved_tensors
            grad_input = grad_weight = grad_bias = None
            if ctx.needs_input_grad[0]:
                grad_input = grad_output.mm(weight)
            if ctx.needs_input_grad[1]:
                grad_weight = grad_output.t().mm(input)
            if bias is not None and ctx.needs_input_grad[2]:
                grad_bias = grad_output.sum(0)
            return grad_input, grad_weight, grad_bias

    class CustomLinear(torch.nn.Module):
        def __init__(self, input_features, output_features):
            super().__init__()
            self.weight = torch.nn.Parameter(torch.empty(output_features, input_features))
            self.bias = torch.nn.Parameter(torch.empty(output_features))
            torch.nn.init.uniform_(self.weight, -0.1, 0.1)
            torch.nn.init.uniform_(self.bias, -0.1, 0.1)

        def forward(self, input):
            return LinearFunction.apply(input, self.weight, self.bias)

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.body = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh())
            self.custom = CustomLinear(8, 3)

        def forward(self, x):
            return self.custom(self.body(x))

    return Net()


def same_start(model, reference):
    """Load `reference`'s weights (a model of the other library, or the same) into `model`."""
    model.load_state_dict({k: ktorch.tensor(v.detach().numpy()) if model_is_kit(model)
                           else torch.tensor(v.detach().numpy())
                           for k, v in reference.state_dict().items()})


def model_is_kit(model):
    return isinstance(model, ktorch.nn.Module)


def data(seed=0, n=32):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 4)).astype(np.float32)
    y = np.argmax(x[:, :3] + 0.5 * x[:, 3:], axis=1)  # a rule a small network can learn
    return x, y


def train(lib, model, steps=100, opt_name="SGD", **opt_kwargs):
    x, y = data()
    x, y = lib.tensor(x), lib.tensor(y)
    opt = getattr(lib.optim, opt_name)(model.parameters(), **opt_kwargs)
    loss_fn = lib.nn.CrossEntropyLoss()
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses, opt


@pytest.mark.parametrize("lib", libraries())
def test_custom_function_in_a_module_trains_saves_and_loads(lib):
    model = custom_linear_model(lib)
    losses, opt = train(lib, model, steps=60, lr=0.5, momentum=0.9)
    assert losses[-1] < 0.5 * losses[0]
    buf = io.BytesIO()
    lib.save({"model": model.state_dict(), "opt": opt.state_dict()}, buf)
    buf.seek(0)
    checkpoint = lib.load(buf)
    fresh = custom_linear_model(lib)
    fresh.load_state_dict(checkpoint["model"])
    x = lib.tensor(data(1)[0])
    np.testing.assert_array_equal(fresh(x).detach().numpy(), model(x).detach().numpy())
    fresh_opt = lib.optim.SGD(fresh.parameters(), lr=0.5, momentum=0.9)
    fresh_opt.load_state_dict(checkpoint["opt"])
    # one more step on each gives the same weights: the momentum buffers travelled too
    for m, o in ((model, opt), (fresh, fresh_opt)):
        o.zero_grad()
        lib.nn.functional.cross_entropy(m(x), lib.tensor(data(1)[1])).backward()
        o.step()
    for a, b in zip(model.parameters(), fresh.parameters(), strict=True):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())


@needs_torch
@pytest.mark.parametrize("opt_name, kwargs", [
    ("SGD", {"lr": 0.1}), ("SGD", {"lr": 0.05, "momentum": 0.9, "nesterov": True}),
    ("Adam", {"lr": 0.01}),
])
def test_mlp_trains_to_pytorch_weights(opt_name, kwargs):
    def mlp(lib):
        nn = lib.nn
        return nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 16), nn.GELU(),
                             nn.Linear(16, 3))

    ref = mlp(torch)
    ours = mlp(ktorch)
    same_start(ours, ref)
    ours_losses, _ = train(ktorch, ours, 100, opt_name, **kwargs)
    ref_losses, _ = train(torch, ref, 100, opt_name, **kwargs)
    np.testing.assert_allclose(ours_losses, ref_losses, rtol=1e-4, atol=1e-5)
    for (name, a), b in zip(ours.state_dict().items(), ref.state_dict().values(), strict=True):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-4, atol=1e-5, err_msg=name)


@needs_torch
def test_custom_function_model_matches_pytorch():
    ref = custom_linear_model(torch)
    ours = custom_linear_model(ktorch)
    same_start(ours, ref)
    ours_losses, _ = train(ktorch, ours, 50, lr=0.2, momentum=0.5)
    ref_losses, _ = train(torch, ref, 50, lr=0.2, momentum=0.5)
    np.testing.assert_allclose(ours_losses, ref_losses, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("lib", libraries())
def test_dataloader_training_loop_with_schedule_and_eval(lib):
    nn = lib.nn
    lib.manual_seed(0)
    x, y = data(2, n=64)
    loader = lib.utils.data.DataLoader(
        lib.utils.data.TensorDataset(lib.tensor(x), lib.tensor(y)), batch_size=16,
        shuffle=True, generator=lib.Generator().manual_seed(0))
    model = nn.Sequential(nn.Linear(4, 32), nn.BatchNorm1d(32), nn.ReLU(), nn.Dropout(0.1),
                          nn.Linear(32, 3))
    opt = lib.optim.AdamW(model.parameters(), lr=0.05)
    sched = lib.optim.lr_scheduler.StepLR(opt, step_size=5, gamma=0.5)
    first = last = None
    for _ in range(15):
        total = 0.0
        for xb, yb in loader:
            opt.zero_grad()
            loss = nn.functional.cross_entropy(model(xb), yb)
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 5.0)
            opt.step()
            total += loss.item()
        sched.step()
        first = total if first is None else first
        last = total
    assert last < 0.6 * first
    assert sched.get_last_lr() == [0.05 * 0.125]
    model.eval()
    with lib.no_grad():
        a, b = model(lib.tensor(x)), model(lib.tensor(x))
    np.testing.assert_array_equal(a.numpy(), b.numpy())  # eval: no dropout, running stats


def test_core_style_and_torch_style_train_to_the_same_weights():
    """The same network in kit's core style (bare tensors, kit.optim.maths) and in kit.torch's
    (nn.Linear, optim.SGD with momentum), from the same start, after 100 steps."""
    import kit
    from kit.optim.maths import sgd_update

    x, y = data(3)
    model = ktorch.nn.Sequential(ktorch.nn.Linear(4, 8), ktorch.nn.Tanh(), ktorch.nn.Linear(8, 3))
    w1, b1, w2, b2 = (kit.tensor(p.detach().numpy(), requires_grad=True)
                      for p in model.parameters())
    states = [{} for _ in range(4)]
    opt = ktorch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-3)
    xt, yt = kit.tensor(x), kit.tensor(y)
    for _ in range(100):
        h = kit.tanh(xt @ w1.mT + b1)
        loss = kit.cross_entropy(h @ w2.mT + b2, yt)
        loss.backward()
        for p, state in zip((w1, b1, w2, b2), states, strict=True):
            sgd_update(p, p.grad, state, lr=0.1, momentum=0.9, weight_decay=1e-3)
            p.grad = None
        opt.zero_grad()
        ktorch.nn.functional.cross_entropy(model(xt), yt).backward()
        opt.step()
    for core, module in zip((w1, b1, w2, b2), model.parameters(), strict=True):
        np.testing.assert_allclose(core.detach().numpy(), module.detach().numpy(), rtol=1e-5,
                                   atol=1e-6)
