"""Programs written the way public PyTorch code writes them (its autograd tests and tutorials, d2l's
chapters on autograd, layers and parameters, micrograd's tests), in kit's own words, run
unchanged on kit.torch and on real PyTorch, with the same numbers: dynamic control flow through
autograd, a custom Function fitted with hand-written SGD, a model whose graph changes per call,
d2l's hand-made containers and parameter surgery, micrograd's expressions, the legacy
`Variable`, `Tensor.new_*`, `contiguous`, and `torch.autograd.functional`."""

from __future__ import annotations

import math

import numpy as np
import pytest
from torch_oracle import libraries

LIBRARIES = libraries()
RNG = np.random.default_rng(7)


@pytest.fixture(params=LIBRARIES)
def torch(request):
    return request.param


def test_control_flow_detach_and_vector_backward(torch):
    """d2l's autograd chapter: the gradient of a function with a data-dependent loop and branch
    is d / a; detach() stops the gradient; a vector output takes a gradient argument."""
    x = torch.arange(4.0)
    x.requires_grad_(True)
    (2 * torch.dot(x, x)).backward()
    assert x.grad.tolist() == [0.0, 4.0, 8.0, 12.0]
    x.grad.zero_()
    y = x * x
    y.backward(gradient=torch.ones(len(y)))
    assert x.grad.tolist() == [0.0, 2.0, 4.0, 6.0]
    x.grad.zero_()
    u = (x * x).detach()
    (u * x).sum().backward()
    assert x.grad.tolist() == u.tolist()

    def doubling(a):
        b = a * 2
        while b.norm() < 1000:
            b = b * 2
        return b if b.sum() > 0 else 100 * b

    for start in (0.7, -0.3):
        a = torch.tensor(start, requires_grad=True)
        d = doubling(a)
        d.backward()
        assert math.isclose(a.grad.item(), (d / a).item(), rel_tol=1e-6)
    assert torch.randn(size=(), requires_grad=True).shape == ()


class _Legendre3:
    """P3(x) = (5x^3 - 3x) / 2 as a custom Function, built for the `torch` given."""

    def __new__(cls, torch):
        class P3(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return 0.5 * (5 * x ** 3 - 3 * x)

            @staticmethod
            def backward(ctx, grad_output):
                (x,) = ctx.saved_tensors
                return grad_output * 1.5 * (5 * x ** 2 - 1)

        return P3


def test_custom_function_fitted_by_hand_written_sgd(torch):
    """The tutorial's y = a + b P3(c + d x) fit of sin(x): scalar parameters made with
    torch.full, updated in place under no_grad, .grad set to None; PyTorch's numbers."""
    dtype = torch.float64
    x = torch.linspace(-math.pi, math.pi, 200, dtype=dtype)
    y = torch.sin(x)
    params = [torch.full((), value, dtype=dtype, requires_grad=True)
              for value in (0.0, -1.0, 0.0, 0.3)]
    p3 = _Legendre3(torch).apply
    for _ in range(300):
        a, b, c, d = params
        loss = (a + b * p3(c + d * x) - y).pow(2).sum()
        loss.backward()
        with torch.no_grad():
            for p in params:
                p -= 5e-5 * p.grad
                p.grad = None
    got = [p.item() for p in params] + [loss.item()]
    np.testing.assert_allclose(got, _tutorial_reference(), rtol=1e-9, atol=1e-15)


def _tutorial_reference():
    """The same fit in NumPy, written out (P3's derivative by hand)."""
    x = np.linspace(-math.pi, math.pi, 200)
    y = np.sin(x)
    a, b, c, d = 0.0, -1.0, 0.0, 0.3
    for _ in range(300):
        z = c + d * x
        p = 0.5 * (5 * z ** 3 - 3 * z)
        r = 2 * (a + b * p - y)
        dp = 1.5 * (5 * z ** 2 - 1)
        loss = ((a + b * p - y) ** 2).sum()
        grads = (r.sum(), (r * p).sum(), (r * b * dp).sum(), (r * b * dp * x).sum())
        a, b, c, d = (v - 5e-5 * g for v, g in zip((a, b, c, d), grads, strict=True))
    return [a, b, c, d, loss]


def test_a_model_whose_graph_changes_every_call(torch):
    """The tutorial's dynamic net: Parameters made from 0-d tensors, a loop whose length varies
    per call, one parameter reused by every extra term; momentum SGD on a summed MSE."""

    class Dynamic(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = torch.nn.Parameter(torch.tensor(0.1, dtype=torch.float64))
            self.b = torch.nn.Parameter(torch.tensor(0.9, dtype=torch.float64))
            self.e = torch.nn.Parameter(torch.tensor(-0.05, dtype=torch.float64))

        def forward(self, x, extra):
            y = self.a + self.b * x
            for power in range(3, 3 + extra):
                y = y + self.e * x ** power
            return y

    model = Dynamic()
    x = torch.linspace(-1, 1, 50, dtype=torch.float64)
    target = torch.sin(x)
    criterion = torch.nn.MSELoss(reduction="sum")
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9)
    for step in range(30):
        loss = criterion(model(x, step % 3), target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    summary = f"y = {model.a.item():.6f} + {model.b.item():.6f} x + {model.e.item():.6f} x^3"
    assert summary == _dynamic_summary(), summary


def _dynamic_summary():
    """The same run in NumPy (PyTorch's momentum SGD: buf = m * buf + g, p -= lr * buf; a
    parameter with no gradient this step, `e` when no extra term ran, is left alone)."""
    x = np.linspace(-1, 1, 50)
    t = np.sin(x)
    p = [0.1, 0.9, -0.05]
    buf = [None] * 3
    for step in range(30):
        powers = [x ** k for k in range(3, 3 + step % 3)]
        r = 2 * (p[0] + p[1] * x + sum(p[2] * q for q in powers) - t)
        grads = [r.sum(), (r * x).sum(), sum((r * q).sum() for q in powers) if powers else None]
        for i, g in enumerate(grads):
            if g is not None:
                buf[i] = g if buf[i] is None else 0.9 * buf[i] + g
                p[i] -= 1e-3 * buf[i]
    return f"y = {p[0]:.6f} + {p[1]:.6f} x + {p[2]:.6f} x^3"


def test_hand_made_containers_and_parameter_surgery(torch):
    """d2l: a Sequential made with add_module and one with _modules, a block with a constant
    (not a parameter) and a data-dependent loop, apply() initialisers, in-place edits of
    .data, and one layer used twice sharing its weights."""
    nn = torch.nn

    class ByAddModule(nn.Module):
        def __init__(self, *layers):
            super().__init__()
            for i, layer in enumerate(layers):
                self.add_module(str(i), layer)

        def forward(self, x):
            for layer in self.children():
                x = layer(x)
            return x

    class ByModulesDict(ByAddModule):
        def __init__(self, *layers):
            nn.Module.__init__(self)
            for i, layer in enumerate(layers):
                self._modules[str(i)] = layer

    class Halving(nn.Module):
        def __init__(self):
            super().__init__()
            self.constant = torch.tensor(RNG.uniform(size=(4, 4)))  # not a parameter
            self.linear = nn.Linear(4, 4, dtype=torch.float64)

        def forward(self, x):
            x = torch.nn.functional.relu(torch.mm(self.linear(x), self.constant) + 1)
            x = self.linear(x)
            while x.abs().sum() > 1:
                x /= 2
            return x.sum()

    def constant_init(module):
        if type(module) is nn.Linear:
            nn.init.constant_(module.weight, 0.1)
            nn.init.zeros_(module.bias)

    x = torch.tensor(RNG.standard_normal((2, 4)))
    for container in (ByAddModule, ByModulesDict):
        net = container(nn.Linear(4, 8, dtype=torch.float64), nn.ReLU(),
                        nn.Linear(8, 4, dtype=torch.float64), Halving())
        assert [n for n, _ in net.named_parameters()] == [
            "0.weight", "0.bias", "2.weight", "2.bias", "3.linear.weight", "3.linear.bias"]
        net.apply(constant_init)
        net._modules["0"].weight.data[0, 0] = 42
        net._modules["0"].weight.data[:] += 1
        net._modules["2"].weight.data *= net._modules["2"].weight.data.abs() >= 0.1
        out = net(x)
        out.backward()
        assert out.item() == pytest.approx(_halving_reference(x.numpy(), net), rel=1e-12)
    shared = nn.Linear(4, 4, dtype=torch.float64)
    twice = nn.Sequential(shared, nn.ReLU(), shared)
    twice.apply(constant_init)
    twice(x).sum().backward()
    assert twice[0].weight is twice[2].weight and len(list(twice.parameters())) == 2
    twice[0].weight.data[0, 0] = 100
    assert twice[2].weight[0, 0].item() == 100


def _halving_reference(x, net):
    w0, b0 = net._modules["0"].weight.detach().numpy(), net._modules["0"].bias.detach().numpy()
    w2, b2 = net._modules["2"].weight.detach().numpy(), net._modules["2"].bias.detach().numpy()
    block = net._modules["3"]
    w3, b3 = block.linear.weight.detach().numpy(), block.linear.bias.detach().numpy()
    h = np.maximum(x @ w0.T + b0, 0) @ w2.T + b2
    h = np.maximum((h @ w3.T + b3) @ block.constant.numpy() + 1, 0) @ w3.T + b3
    while np.abs(h).sum() > 1:
        h = h / 2
    return h.sum()


def test_micrograd_expressions(torch):
    """micrograd's two reference expressions, built from 1-element float64 tensors made with the
    legacy constructor and `.double()`, then `requires_grad = True` set on the leaves."""
    x = torch.Tensor([-4.0]).double()
    x.requires_grad = True
    z = 2 * x + 2 + x
    q = z.relu() + z * x
    h = (z * z).relu()
    y = h + q + q * x
    y.backward()
    assert (y.data.item(), x.grad.item()) == (-20.0, 46.0)
    a, b = torch.Tensor([-4.0]).double(), torch.Tensor([2.0]).double()
    a.requires_grad = b.requires_grad = True
    c = a + b
    d = a * b + b ** 3
    c = c + c + 1
    c = c + 1 + c + (-a)
    d = d + d * 2 + (b + a).relu()
    d = d + 3 * d + (b - a).relu()
    e = c - d
    f = e ** 2
    g = f / 2.0
    g = g + 10.0 / f
    g.backward()
    assert g.item() == pytest.approx(24.70408163265306, abs=1e-6)
    assert (a.grad.item(), b.grad.item()) == pytest.approx((138.83381924198252,
                                                            645.5772594752186), abs=1e-6)


def test_autograd_test_idioms(torch):
    """PyTorch's own autograd tests: grad with grad_outputs and create_graph (then a second
    derivative), backward of several tensors with their gradients, hooks that rescale, retain_grad,
    the legacy Variable, Tensor.new_*, contiguous() before view()."""
    from_numpy = RNG.standard_normal((3, 4))
    x = torch.tensor(from_numpy, requires_grad=True)
    y = torch.tensor(from_numpy.T.copy(), requires_grad=True)
    out = x * 2 + y.t().mean()
    gx, gy = torch.autograd.grad(out, [x, y], grad_outputs=torch.ones_like(out),
                                 create_graph=True)
    assert gx.tolist() == [[2.0] * 4] * 3 and np.allclose(gy.numpy(), 1.0)
    (second,) = torch.autograd.grad((gx * x).sum(), x)
    assert second.tolist() == [[2.0] * 4] * 3
    torch.autograd.backward([(x * x).sum(), (x * y.t()).sum()],
                            [torch.tensor(1.0, dtype=torch.float64),
                             torch.tensor(2.0, dtype=torch.float64)])
    np.testing.assert_allclose(x.grad.numpy(), 2 * from_numpy + 2 * from_numpy, rtol=1e-12)
    x.grad = None
    handle = x.register_hook(lambda g: g * 3)
    middle = x * 2
    middle.retain_grad()
    middle.sum().backward()
    handle.remove()
    assert x.grad.tolist() == [[6.0] * 4] * 3 and middle.grad.tolist() == [[1.0] * 4] * 3

    from_legacy = torch.autograd.Variable(torch.ones(2, dtype=torch.float64), requires_grad=True)
    (from_legacy * 3).sum().backward()
    assert isinstance(from_legacy, torch.autograd.Variable) and from_legacy.grad.tolist() == [3, 3]
    made = [x.new_zeros(2, 3), x.new_ones((2,)), x.new_full((2,), 7), x.new_tensor([1, 2]),
            x.new_empty(1)]
    assert [t.dtype for t in made] == [torch.float64] * 5
    assert made[2].tolist() == [7.0, 7.0] and not made[0].requires_grad
    assert x.new_zeros(1, dtype=torch.int64, requires_grad=False).dtype == torch.int64
    t = x.t()
    assert not t.is_contiguous() and t.contiguous().is_contiguous()
    t.contiguous().view(12).sum().backward()
    assert x.grad.tolist() == [[7.0] * 4] * 3  # 6 from before, 1 now
    assert torch.ones(2).type_as(x).dtype == torch.float64 and x.is_floating_point()


def _functional_cases(torch):
    def pair(a, b):
        return a ** 2 * b, a.sum() * b.exp()

    def scalar(a, b):
        return (a * a * b).sum() + (a ** 3).sum()

    a = torch.tensor([0.5, -1.5], dtype=torch.float64)
    b = torch.tensor([2.0, 0.25], dtype=torch.float64)
    v = torch.tensor([1.0, -2.0], dtype=torch.float64)
    F = torch.autograd.functional  # noqa: N806 - as code writes it
    return {
        "jacobian one": F.jacobian(lambda t: t.sin() * t, a),
        "jacobian pairs": F.jacobian(pair, (a, b)),
        "hessian one": F.hessian(lambda t: (t ** 3).prod(), a),
        "hessian pairs": F.hessian(scalar, (a, b)),
        "vjp": F.vjp(pair, (a, b), (v, v)),
        "jvp": F.jvp(pair, (a, b), (v, b)),
        "hvp": F.hvp(scalar, (a, b), (v, v)),
        "vhp": F.vhp(scalar, (a, b), (v, b)),
        "vjp scalar": F.vjp(lambda t: (t * t).sum(), a),
        "unused input": F.jacobian(lambda s, t: s * 2, (a, b)),
    }


def _flat(value):
    if isinstance(value, (tuple, list)):
        return [x for item in value for x in _flat(item)]
    return [np.asarray(value.tolist())]


def test_autograd_functional_equals_pytorch():
    real = pytest.importorskip("torch")
    import kit.torch as ktorch

    ours, theirs = _functional_cases(ktorch), _functional_cases(real)
    for name in ours:
        got, expected = _flat(ours[name]), _flat(theirs[name])
        assert len(got) == len(expected), name
        for g, e in zip(got, expected, strict=True):
            np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-14, err_msg=name)


def test_autograd_functional_graph_and_strictness(torch):
    F = torch.autograd.functional  # noqa: N806
    x = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    jac = F.jacobian(lambda t: t ** 3, x)
    assert not jac.requires_grad
    F.jacobian(lambda t: t ** 3, x, create_graph=True).sum().backward()
    assert x.grad.tolist() == [6.0, 12.0]
    with pytest.raises(RuntimeError):
        F.jacobian(lambda t: torch.ones(2), x, strict=True)
    with pytest.raises(RuntimeError):
        F.vjp(lambda t: t * 2, x)  # a vector output needs v


def test_attention_masking_in_place(torch):
    """Transformer code masks scores in place before the softmax: masked_fill_ on a non-leaf,
    -inf where the mask is set; the gradient flows around the masked entries."""
    q = torch.tensor(RNG.standard_normal((3, 4)), requires_grad=True)
    scores = q @ q.t() / 2.0
    future = torch.tensor(np.triu(np.ones((3, 3)), 1) > 0)
    assert scores.masked_fill_(future, -math.inf) is scores
    weights = torch.softmax(scores, dim=-1)
    np.testing.assert_allclose(weights.detach().numpy()[0], [1.0, 0.0, 0.0])
    (weights * torch.tensor(RNG.standard_normal((3, 3)))).sum().backward()
    assert np.isfinite(q.grad.numpy()).all()
