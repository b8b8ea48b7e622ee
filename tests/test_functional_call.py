"""kit.func.functional_call (kit/func/_functional_call.py), run on kit.torch and, where
installed, on real PyTorch as the oracle."""

import numpy as np
import pytest
from torch_oracle import libraries

import kit.torch

LIBS = libraries()


def mlp(torch):
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(2, 3), torch.nn.Tanh(), torch.nn.Linear(3, 1))


def by_hand(params, x):
    h = np.tanh(x @ params["0.weight"].T + params["0.bias"])
    return h @ params["2.weight"].T + params["2.bias"]


def arrays(shapes, seed=1):
    rng = np.random.default_rng(seed)
    return {name: rng.standard_normal(shape) for name, shape in shapes.items()}


@pytest.mark.parametrize("torch", LIBS)
def test_runs_the_module_with_the_given_tensors_and_puts_its_own_back(torch):
    model = mlp(torch).double()
    own = {name: p.detach().numpy().copy() for name, p in model.named_parameters()}
    values = arrays({name: v.shape for name, v in own.items()})
    x = np.random.default_rng(2).standard_normal((4, 2))
    out = torch.func.functional_call(model, {n: torch.tensor(v) for n, v in values.items()},
                                     (torch.tensor(x),))
    np.testing.assert_allclose(out.detach().numpy(), by_hand(values, x), rtol=1e-12)
    for name, p in model.named_parameters():
        assert type(p).__name__ == "Parameter"
        np.testing.assert_array_equal(p.detach().numpy(), own[name])
    # a name left out keeps the module's own tensor; one tensor (not a tuple) is the one argument
    partial = torch.func.functional_call(model, {"0.weight": torch.tensor(values["0.weight"])},
                                         torch.tensor(x))
    np.testing.assert_allclose(partial.detach().numpy(),
                               by_hand({**own, "0.weight": values["0.weight"]}, x), rtol=1e-12)


@pytest.mark.parametrize("torch", LIBS)
def test_gradients_go_to_the_given_tensors_not_the_parameters(torch):
    model = mlp(torch).double()
    params = {n: p.detach().clone().requires_grad_(True) for n, p in model.named_parameters()}
    x = torch.tensor(np.ones((3, 2)))
    torch.func.functional_call(model, params, (x,)).sum().backward()
    assert all(p.grad is not None for p in params.values())
    assert all(p.grad is None for p in model.parameters())


@pytest.mark.parametrize("torch", LIBS)
def test_the_whole_model_passes_gradcheck_in_float64(torch):
    model = mlp(torch).double()
    names = [n for n, _ in model.named_parameters()]
    x = torch.tensor(np.random.default_rng(3).standard_normal((5, 2)))

    def loss(*params):
        return torch.func.functional_call(model, dict(zip(names, params, strict=True)), (x,)).sum()

    params = tuple(p.detach().clone().requires_grad_(True) for p in model.parameters())
    assert torch.autograd.gradcheck(loss, params)


@pytest.mark.parametrize("torch", LIBS)
def test_per_sample_gradients_with_vmap_and_grad(torch):
    model = mlp(torch).double()
    params = {n: p.detach() for n, p in model.named_parameters()}
    xs = torch.tensor(np.random.default_rng(4).standard_normal((6, 2)))

    def sample_loss(params, x):
        return torch.func.functional_call(model, params, (x.unsqueeze(0),)).sum()

    grads = torch.func.vmap(torch.func.grad(sample_loss), in_dims=(None, 0))(params, xs)
    for i in range(6):
        alone = torch.func.grad(sample_loss)(params, xs[i])
        for name in params:
            np.testing.assert_allclose(grads[name][i].numpy(), alone[name].numpy(), rtol=1e-10)


@pytest.mark.parametrize("torch", LIBS)
def test_buffers_kwargs_and_tensor_attributes(torch):
    class Scaled(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.ones(2))
            self.register_buffer("b", torch.zeros(2))

        def forward(self, x, scale=1.0):
            return (x * self.w + self.b) * scale

    module = Scaled()
    out = torch.func.functional_call(module, {"w": torch.full((2,), 2.0), "b": torch.ones(2)},
                                     (torch.ones(2),), {"scale": 3.0})
    assert out.tolist() == [9.0, 9.0]
    assert module.w.tolist() == [1.0, 1.0] and module.b.tolist() == [0.0, 0.0]
    two = torch.func.functional_call(module, ({"w": torch.full((2,), 2.0)}, {"b": torch.ones(2)}),
                                     (torch.ones(2),))
    assert two.tolist() == [3.0, 3.0]


@pytest.mark.parametrize("torch", LIBS)
def test_tied_weights(torch):
    class Tied(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = torch.nn.Linear(2, 2, bias=False)
            self.b = torch.nn.Linear(2, 2, bias=False)
            self.b.weight = self.a.weight

        def forward(self, x):
            return self.a(x) + self.b(x)

    module, x = Tied(), torch.ones(2)
    own = module.a.weight.detach().numpy().sum(1)
    zeros = {"a.weight": torch.zeros(2, 2)}
    assert torch.func.functional_call(module, zeros, (x,)).tolist() == [0.0, 0.0]
    untied = torch.func.functional_call(module, zeros, (x,), tie_weights=False)
    np.testing.assert_allclose(untied.detach().numpy(), own, rtol=1e-6)
    with pytest.raises(ValueError, match=r"multiple values for keys \['a.weight', 'b.weight'\], "
                                         r"which are tied"):
        torch.func.functional_call(module, {**zeros, "b.weight": torch.ones(2, 2)}, (x,))


@pytest.mark.parametrize("torch", LIBS)
def test_misuse(torch):
    model = mlp(torch)
    x = torch.ones(1, 2)
    weight = {"0.weight": torch.zeros(3, 2)}
    with pytest.raises(ValueError, match=r"\['0.weight'\] appeared in multiple dictionaries"):
        torch.func.functional_call(model, (weight, weight), (x,))
    with pytest.raises(RuntimeError, match=r"Missing key\(s\): '0.bias', '2.bias', '2.weight'"):
        torch.func.functional_call(model, weight, (x,), strict=True)

    class Boom(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.ones(2))

        def forward(self, x):
            raise ZeroDivisionError("inside forward")

    boom = Boom()
    with pytest.raises(ZeroDivisionError):
        torch.func.functional_call(boom, {"w": torch.zeros(2)}, (x,))
    assert boom.w.tolist() == [1.0, 1.0] and type(boom.w).__name__ == "Parameter"


def test_kit_refuses_a_name_the_module_does_not_have():
    torch = kit.torch
    model = mlp(torch)
    with pytest.raises(RuntimeError, match=r"'0.wieght' is not a parameter, buffer or tensor "
                                           r"attribute of Sequential \(its names: 0.weight, "
                                           r"0.bias, 2.weight, 2.bias\)"):
        torch.func.functional_call(model, {"0.wieght": torch.zeros(3, 2)}, (torch.ones(1, 2),))
    with pytest.raises(TypeError, match="expected a dict name -> Tensor"):
        torch.func.functional_call(model, [torch.zeros(3, 2)], (torch.ones(1, 2),))


def test_the_docstring_example_runs():
    import doctest

    import kit.func._functional_call as module

    result = doctest.testmod(module)
    assert result.attempted >= 4 and result.failed == 0
