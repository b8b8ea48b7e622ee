"""torch.nn.Module's behaviour: each test runs on kit.torch and, where installed, on PyTorch,
so kit is checked against the real thing (registration, traversal, state dicts, modes, hooks,
repr)."""

import numpy as np
import pytest

from tests.torch_oracle import is_kit, libraries

LIBS = libraries()


def small_net(torch):
    nn = torch.nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(4, 3)
            self.act = nn.ReLU()
            self.blocks = nn.ModuleList([nn.Linear(3, 3), nn.Linear(3, 3, bias=False)])
            self.norm = nn.BatchNorm1d(3)
            self.scale = nn.Parameter(torch.ones(1))
            self.register_buffer("step", torch.zeros(1))
            self.register_buffer("scratch", torch.zeros(2), persistent=False)

        def forward(self, x):
            h = self.act(self.fc1(x))
            for block in self.blocks:
                h = block(h)
            return self.norm(h) * self.scale

    return Net()


@pytest.mark.parametrize("torch", LIBS)
def test_registration_and_traversal(torch):
    net = small_net(torch)
    assert [n for n, _ in net.named_parameters()] == [
        "scale", "fc1.weight", "fc1.bias", "blocks.0.weight", "blocks.0.bias",
        "blocks.1.weight", "norm.weight", "norm.bias",
    ]
    assert [n for n, _ in net.named_buffers()] == [
        "step", "scratch", "norm.running_mean", "norm.running_var", "norm.num_batches_tracked",
    ]
    assert [n for n, _ in net.named_children()] == ["fc1", "act", "blocks", "norm"]
    assert [n for n, _ in net.named_modules()] == [
        "", "fc1", "act", "blocks", "blocks.0", "blocks.1", "norm",
    ]
    assert len(list(net.children())) == 4 and len(list(net.modules())) == 7
    assert all(isinstance(p, torch.nn.Parameter) for p in net.parameters())
    assert all(p.requires_grad and p.is_leaf for p in net.parameters())
    assert len(list(net.parameters(recurse=False))) == 1
    assert net.get_submodule("blocks.1") is net.blocks[1]


@pytest.mark.parametrize("torch", LIBS)
def test_shared_parameter_listed_once_and_reassignment(torch):
    nn = torch.nn
    a = nn.Linear(2, 2)
    seq = nn.Sequential(a, nn.Tanh(), a)
    assert len(list(seq.parameters())) == 2
    assert [n for n, _ in seq.named_modules()] == ["", "0", "1"]
    m = nn.Module()
    m.w = nn.Parameter(torch.zeros(2))
    m.w = None  # a registered parameter may be set to None
    assert "w" in dict(m._parameters) and m.w is None
    with pytest.raises(TypeError):
        m.w = torch.zeros(2)  # a plain tensor is not a parameter
    m.sub = nn.Linear(1, 1)
    del m.sub
    assert not hasattr(m, "sub")


@pytest.mark.parametrize("torch", LIBS)
def test_assigning_before_init_is_an_error(torch):
    class Broken(torch.nn.Module):
        def __init__(self):
            self.fc = torch.nn.Linear(1, 1)

    with pytest.raises(AttributeError, match="before Module.__init__"):
        Broken()


@pytest.mark.parametrize("torch", LIBS)
def test_missing_forward(torch):
    with pytest.raises(NotImplementedError, match="forward"):
        torch.nn.Module()(torch.zeros(1))


@pytest.mark.parametrize("torch", LIBS)
def test_state_dict_keys_and_round_trip(torch):
    net, other = small_net(torch), small_net(torch)
    sd = net.state_dict()
    assert list(sd) == [
        "scale", "step", "fc1.weight", "fc1.bias", "blocks.0.weight", "blocks.0.bias",
        "blocks.1.weight", "norm.weight", "norm.bias", "norm.running_mean", "norm.running_var",
        "norm.num_batches_tracked",
    ]
    assert not any(t.requires_grad for t in sd.values())
    result = other.load_state_dict(sd)
    assert repr(result) == "<All keys matched successfully>"
    for key, value in other.state_dict().items():
        np.testing.assert_array_equal(value.numpy(), sd[key].numpy())
    weight = other.fc1.weight
    other.load_state_dict(net.state_dict())
    assert other.fc1.weight is weight  # loaded in place: optimisers keep working
    # state_dict tensors share storage with the parameters, as PyTorch's
    with torch.no_grad():
        net.fc1.bias.add_(1.0)
    np.testing.assert_array_equal(sd["fc1.bias"].numpy(), net.fc1.bias.detach().numpy())


@pytest.mark.parametrize("torch", LIBS)
def test_load_state_dict_strict_errors(torch):
    net = small_net(torch)
    sd = dict(net.state_dict())
    del sd["fc1.bias"]
    sd["extra"] = torch.zeros(1)
    with pytest.raises(RuntimeError) as err:
        net.load_state_dict(sd)
    text = str(err.value)
    assert text.startswith("Error(s) in loading state_dict for Net:")
    assert 'Missing key(s) in state_dict: "fc1.bias".' in text
    assert 'Unexpected key(s) in state_dict: "extra".' in text
    keys = net.load_state_dict(sd, strict=False)
    assert keys.missing_keys == ["fc1.bias"] and keys.unexpected_keys == ["extra"]
    bad = dict(net.state_dict())
    bad["fc1.weight"] = torch.zeros(5, 5)
    with pytest.raises(RuntimeError, match="size mismatch for fc1.weight"):
        net.load_state_dict(bad)


@pytest.mark.parametrize("torch", LIBS)
def test_train_eval_zero_grad_requires_grad(torch):
    net = small_net(torch)
    assert net.training and net.norm.training
    assert net.eval() is net and not net.norm.training and not net.blocks[0].training
    net.train()
    assert net.norm.training
    net(torch.ones(5, 4)).sum().backward()
    assert net.fc1.weight.grad is not None
    net.zero_grad(set_to_none=False)
    assert float(net.fc1.weight.grad.abs().sum()) == 0.0
    net.zero_grad()
    assert net.fc1.weight.grad is None
    net.requires_grad_(False)
    assert not any(p.requires_grad for p in net.parameters())


@pytest.mark.parametrize("torch", LIBS)
def test_apply_and_init(torch):
    net = small_net(torch)
    seen = []

    def init(m):
        seen.append(type(m).__name__)
        if isinstance(m, torch.nn.Linear):
            torch.nn.init.zeros_(m.weight)

    assert net.apply(init) is net
    assert seen == ["Linear", "ReLU", "Linear", "Linear", "ModuleList", "BatchNorm1d", "Net"]
    assert float(net.fc1.weight.detach().abs().sum()) == 0.0


@pytest.mark.parametrize("torch", LIBS)
def test_forward_hooks(torch):
    fc = torch.nn.Linear(2, 2)
    calls = []
    pre = fc.register_forward_pre_hook(lambda m, args: (args[0] * 0,))
    post = fc.register_forward_hook(lambda m, args, out: calls.append(out.shape) or out + 1)
    out = fc(torch.ones(3, 2))
    np.testing.assert_allclose(out.detach().numpy(), (fc.bias + 1).detach().numpy()[None]
                               .repeat(3, 0), rtol=1e-6)
    assert calls == [(3, 2)] or calls == [torch.Size([3, 2])]
    pre.remove()
    post.remove()
    np.testing.assert_allclose(fc(torch.zeros(1, 2)).detach().numpy()[0],
                               fc.bias.detach().numpy(), rtol=1e-6)


@pytest.mark.parametrize("torch", LIBS)
def test_to_dtype_converts_floating_tensors_only(torch):
    net = small_net(torch).to(torch.float64)
    assert net.fc1.weight.dtype == torch.float64 and isinstance(net.fc1.weight, torch.nn.Parameter)
    assert net.norm.running_mean.dtype == torch.float64
    assert net.norm.num_batches_tracked.dtype == torch.int64
    assert net(torch.ones(5, 4, dtype=torch.float64)).dtype == torch.float64
    assert net.float().fc1.weight.dtype == torch.float32
    weight = net.fc1.weight
    assert net.to("cpu").fc1.weight is weight  # nothing to convert: the same parameter
    tied = torch.nn.Module()
    tied.a, tied.b = torch.nn.Linear(2, 2), torch.nn.Linear(2, 2)
    tied.b.weight = tied.a.weight
    tied.double()
    assert tied.b.weight is tied.a.weight and tied.a.weight.dtype == torch.float64


@pytest.mark.parametrize("torch", LIBS)
def test_repr(torch):
    net = small_net(torch)
    assert repr(net) == (
        "Net(\n"
        "  (fc1): Linear(in_features=4, out_features=3, bias=True)\n"
        "  (act): ReLU()\n"
        "  (blocks): ModuleList(\n"
        "    (0): Linear(in_features=3, out_features=3, bias=True)\n"
        "    (1): Linear(in_features=3, out_features=3, bias=False)\n"
        "  )\n"
        "  (norm): BatchNorm1d(3, eps=1e-05, momentum=0.1, affine=True, bias=True, "
        "track_running_stats=True)\n"
        ")"
    )
    p = torch.nn.Parameter(torch.tensor([1.0, 2.0]))
    assert repr(p) == "Parameter containing:\ntensor([1., 2.], requires_grad=True)"
    assert repr(torch.nn.Dropout(0.2)) == "Dropout(p=0.2, inplace=False)"
    assert repr(torch.nn.Flatten()) == "Flatten(start_dim=1, end_dim=-1)"
    assert repr(torch.nn.Embedding(10, 3)) == "Embedding(10, 3)"
    assert repr(torch.nn.LayerNorm(4)) == (
        "LayerNorm((4,), eps=1e-05, elementwise_affine=True, bias=True)"
    )
    assert repr(torch.nn.GELU()) == "GELU(approximate='none')"
    assert repr(torch.nn.LeakyReLU(0.2)) == "LeakyReLU(negative_slope=0.2)"
    assert repr(torch.nn.LogSoftmax(dim=1)) == "LogSoftmax(dim=1)"
    assert repr(torch.nn.Softplus()) == "Softplus(beta=1.0, threshold=20.0)"


@pytest.mark.parametrize("torch", LIBS)
def test_parameter_is_a_tensor_sharing_storage(torch):
    t = torch.zeros(3)
    p = torch.nn.Parameter(t)
    assert isinstance(p, torch.Tensor) and p.requires_grad and p.is_leaf
    with torch.no_grad():
        p.add_(1.0)
    np.testing.assert_array_equal(t.numpy(), [1.0, 1.0, 1.0])
    frozen = torch.nn.Parameter(torch.zeros(2), requires_grad=False)
    assert not frozen.requires_grad


@pytest.mark.parametrize("torch", LIBS)
def test_containers(torch):
    nn = torch.nn
    seq = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1))
    assert len(seq) == 3 and isinstance(seq[-1], nn.Linear)
    assert isinstance(seq[:2], nn.Sequential) and len(seq[:2]) == 2
    assert seq(torch.ones(4, 2)).shape == (4, 1)
    seq.append(nn.Sigmoid())
    assert len(seq) == 4
    with pytest.raises(IndexError):
        seq[7]
    layers = nn.ModuleList([nn.Linear(1, 1)])
    layers.append(nn.Linear(1, 1))
    layers.extend([nn.Tanh()])
    layers.insert(0, nn.ReLU())
    assert [type(m).__name__ for m in layers] == ["ReLU", "Linear", "Linear", "Tanh"]
    assert len(list(layers.parameters())) == 4
    heads = nn.ModuleDict({"a": nn.Linear(2, 1), "b": nn.Linear(2, 2)})
    heads["c"] = nn.Identity()
    assert list(heads.keys()) == ["a", "b", "c"] and "b" in heads
    assert [n for n, _ in heads.named_parameters()] == ["a.weight", "a.bias", "b.weight", "b.bias"]


@pytest.mark.parametrize("torch", LIBS)
def test_deepcopy_gives_an_independent_model(torch):
    import copy

    model = torch.nn.Linear(2, 3)
    model(torch.ones(4, 2)).sum().backward()
    clone = copy.deepcopy(model)
    assert clone.weight is not model.weight and isinstance(clone.weight, torch.nn.Parameter)
    assert clone.weight.grad is None  # as PyTorch's Parameter.__deepcopy__
    clone(torch.ones(4, 2)).sum().backward()
    clone(torch.ones(4, 2)).sum().backward()
    np.testing.assert_array_equal(model.weight.grad.numpy(), np.full((3, 2), 4.0))
    np.testing.assert_array_equal(clone.weight.grad.numpy(), np.full((3, 2), 8.0))
    with torch.no_grad():
        clone.weight.add_(1.0)
    assert not np.array_equal(clone.weight.detach().numpy(), model.weight.detach().numpy())


@pytest.mark.parametrize("torch", LIBS)
def test_embedding_from_pretrained(torch):
    table = torch.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    emb = torch.nn.Embedding.from_pretrained(table)
    assert not emb.weight.requires_grad and emb.num_embeddings == 3
    np.testing.assert_array_equal(emb(torch.tensor([2, 0])).numpy(), [[5.0, 6.0], [1.0, 2.0]])
    trainable = torch.nn.Embedding.from_pretrained(table, freeze=False, padding_idx=1)
    assert trainable.weight.requires_grad and trainable.padding_idx == 1
    np.testing.assert_array_equal(trainable.weight.detach().numpy()[1], [3.0, 4.0])
    with torch.no_grad():
        trainable.weight.add_(1.0)
    np.testing.assert_array_equal(table.numpy()[0], [2.0, 3.0])  # the weight is the table


@pytest.mark.parametrize("torch", LIBS)
def test_batchnorm_without_running_stats_uses_the_batch_in_eval(torch):
    bn = torch.nn.BatchNorm1d(2, track_running_stats=False, affine=False).eval()
    assert bn.running_mean is None and [n for n, _ in bn.named_buffers()] == []
    out = bn(torch.tensor([[1.0, 2.0], [3.0, 6.0]])).numpy()
    np.testing.assert_allclose(out, [[-1.0, -1.0], [1.0, 1.0]], rtol=1e-4)


@pytest.mark.parametrize("torch", LIBS)
def test_lazy_linear_takes_in_features_from_the_first_input(torch):
    nn = torch.nn
    net = nn.Sequential(nn.LazyLinear(8), nn.ReLU(), nn.LazyLinear(1, bias=False))
    assert repr(net[0]) == "LazyLinear(in_features=0, out_features=8, bias=True)"
    assert net(torch.ones(2, 4)).shape == (2, 1)
    assert type(net[0]) is nn.Linear and repr(net[0]) == (
        "Linear(in_features=4, out_features=8, bias=True)")
    assert [n for n, _ in net.named_parameters()] == ["0.weight", "0.bias", "2.weight"]
    assert net[2].weight.shape == (1, 8) and net[2].bias is None
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    net(torch.ones(2, 4)).sum().backward()
    opt.step()


def test_kit_errors_name_the_fix():
    import kit.torch as torch

    with pytest.raises(TypeError, match="nn.Parameter"):
        torch.nn.Module().register_parameter("w", torch.zeros(1))
    with pytest.raises(ValueError, match="in_features"):
        torch.nn.Linear(3, 2)(torch.ones(4, 5))
    with pytest.raises(ValueError, match="model.eval"):
        torch.nn.BatchNorm1d(2)(torch.ones(1, 2))
    with pytest.raises(NotImplementedError, match="iterate"):
        torch.nn.ModuleList()(torch.ones(1))
    assert is_kit(torch)


@pytest.mark.parametrize("module", [
    "kit.nn", "kit.nn.module", "kit.nn.parameter", "kit.nn.layers", "kit.nn.containers",
    "kit.nn.conv", "kit.nn.normalization", "kit.nn.loss", "kit.nn.functional", "kit.nn.init",
    "kit.nn.state",
    "kit.nn.utils", "kit.nn.activations", "kit.nn.attention", "kit.nn.distance",
    "kit.nn.functional_losses", "kit.nn.functional_norm_pool", "kit.nn.functional_thresholds",
    "kit.nn.multihead_attention",
    "kit.optim", "kit.optim.maths", "kit.optim.optimizer", "kit.optim.algorithms",
    "kit.optim.lr_scheduler", "kit.data", "kit.data.dataset", "kit.data.collate",
    "kit.data.loader", "kit.serialization", "kit.torch.optim", "kit.torch.utils.data",
])
def test_docstring_examples_run(module):
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(module))
    assert result.attempted > 0 and result.failed == 0
