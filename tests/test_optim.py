"""torch.optim on kit: the optimisers against real PyTorch step for step (where installed),
param groups, zero_grad, state dicts and the learning-rate schedules."""

import numpy as np
import pytest

import kit
import kit.torch as ktorch

try:
    import torch
except ImportError:  # pragma: no cover - PyTorch is the optional oracle
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed (the oracle)")

CONFIGS = [
    ("SGD", {"lr": 0.1}),
    ("SGD", {"lr": 0.1, "momentum": 0.9}),
    ("SGD", {"lr": 0.05, "momentum": 0.9, "dampening": 0.3, "weight_decay": 0.01}),
    ("SGD", {"lr": 0.05, "momentum": 0.8, "nesterov": True, "weight_decay": 0.1}),
    ("SGD", {"lr": 0.05, "momentum": 0.5, "maximize": True}),
    ("Adam", {"lr": 0.01}),
    ("Adam", {"lr": 0.02, "betas": (0.8, 0.99), "eps": 1e-6, "weight_decay": 0.1}),
    ("Adam", {"lr": 0.01, "amsgrad": True, "maximize": True}),
    ("AdamW", {"lr": 0.01}),
    ("AdamW", {"lr": 0.01, "weight_decay": 0.5, "amsgrad": True}),
    ("RMSprop", {"lr": 0.01}),
    ("RMSprop", {"lr": 0.01, "alpha": 0.9, "momentum": 0.5, "centered": True,
                 "weight_decay": 0.1}),
]


def problem(seed=0):
    rng = np.random.default_rng(seed)
    w = rng.standard_normal((3, 4)).astype(np.float32)
    b = rng.standard_normal(3).astype(np.float32)
    x = rng.standard_normal((8, 4)).astype(np.float32)
    return w, b, x


def run(lib, name, kwargs, steps=25):
    w0, b0, x0 = problem()
    w = lib.tensor(w0, requires_grad=True)
    b = lib.tensor(b0, requires_grad=True)
    x = lib.tensor(x0)
    opt = getattr(lib.optim, name)([w, b], **kwargs)
    for _ in range(steps):
        opt.zero_grad()
        loss = ((x @ w.T + b).tanh() ** 2).mean()
        loss.backward()
        opt.step()
    return w.detach().numpy(), b.detach().numpy(), opt


@needs_torch
@pytest.mark.parametrize("name, kwargs", CONFIGS, ids=[f"{n}-{i}" for i, (n, _) in
                                                       enumerate(CONFIGS)])
def test_step_for_step_equal_to_pytorch(name, kwargs):
    w, b, _ = run(ktorch, name, kwargs)
    w_ref, b_ref, _ = run(torch, name, kwargs)
    np.testing.assert_allclose(w, w_ref, rtol=2e-6, atol=2e-6)
    np.testing.assert_allclose(b, b_ref, rtol=2e-6, atol=2e-6)


@pytest.mark.parametrize("name, kwargs", CONFIGS[:1] + CONFIGS[5:6] + CONFIGS[10:11])
def test_updates_happen_in_place(name, kwargs):
    p = kit.tensor([1.0, -2.0], requires_grad=True)
    array = p.detach().numpy()  # shares memory with p
    opt = getattr(ktorch.optim, name)([p], **kwargs)
    (p * p).sum().backward()
    opt.step()
    assert opt.param_groups[0]["params"][0] is p and p.is_leaf and p.grad_fn is None
    assert not np.array_equal(array, [1.0, -2.0])  # the update wrote into that memory
    assert p.requires_grad



@pytest.mark.parametrize("name, kwargs", CONFIGS, ids=[f"{n}-{i}" for i, (n, _) in
                                                       enumerate(CONFIGS)])
def test_a_step_writes_into_the_arrays_and_bumps_each_version_once(name, kwargs):
    """The maths runs on the arrays (kit/optim/maths.py): the parameter and every state tensor
    keep their memory, each version goes up by one per step, so a graph that saved the
    parameter before the step refuses to go backward after it, as in PyTorch."""
    p = kit.tensor([1.0, -2.0], requires_grad=True)
    opt = getattr(ktorch.optim, name)([p], **kwargs)
    (p * p).sum().backward()
    opt.step()
    state = {key: (t, t._data, t._version) for key, t in opt.state[p].items()}
    array, version = p._data, p._version
    kept = (p * p).sum()
    opt.step()
    assert p._data is array and p._version == version + 1
    for key, (t, data, before) in state.items():
        assert opt.state[p][key] is t and t._data is data and t._version == before + 1, key
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        kept.backward()


@needs_torch
@pytest.mark.parametrize("name, kwargs", [
    ("SGD", {"lr": 0.1, "momentum": 0.9, "foreach": True}),
    ("SGD", {"lr": 0.1, "fused": True}),
    ("Adam", {"lr": 0.01, "amsgrad": True, "foreach": True}),
    ("AdamW", {"lr": 0.01, "fused": True}),
    ("RMSprop", {"lr": 0.01, "momentum": 0.5, "centered": True, "foreach": True}),
])
def test_foreach_and_fused_give_pytorchs_numbers_and_stay_in_the_groups(name, kwargs):
    w, b, opt = run(ktorch, name, kwargs)
    w_ref, b_ref, ref = run(torch, name, kwargs)
    np.testing.assert_allclose(w, w_ref, rtol=2e-6, atol=2e-6)
    np.testing.assert_allclose(b, b_ref, rtol=2e-6, atol=2e-6)
    for key in ("foreach", "fused"):
        assert opt.param_groups[0].get(key, "-") == ref.param_groups[0].get(key, "-"), key


@needs_torch
def test_foreach_and_fused_together_is_pytorchs_error():
    for lib in (ktorch, torch):
        p = lib.tensor([1.0], requires_grad=True)
        for name in ("SGD", "Adam", "AdamW"):
            with pytest.raises(RuntimeError, match="cannot be `True` together"):
                getattr(lib.optim, name)([p], lr=0.1, foreach=True, fused=True)
        with pytest.raises(TypeError, match="fused"):
            lib.optim.RMSprop([p], lr=0.1, fused=True)


def test_a_subclass_with_update_written_in_tensor_ops_runs_under_no_grad():
    """The base class's update_many calls a subclass's update() per parameter, under no_grad
    (the built-in optimisers give update_many, one loop over the arrays)."""

    class SignSGD(ktorch.optim.Optimizer):
        def __init__(self, params, lr):
            super().__init__(params, {"lr": lr})

        def update(self, param, grad, state, group):
            assert not kit.is_grad_enabled()
            state["steps"] = state.get("steps", 0) + 1
            param.sub_(grad.sign() * group["lr"])

    p = kit.tensor([1.0, -2.0, 3.0], requires_grad=True)
    opt = SignSGD([p], lr=0.5)
    for _ in range(2):
        opt.zero_grad()
        (p * p).sum().backward()
        opt.step()
    np.testing.assert_array_equal(p.detach().numpy(), [0.0, -1.0, 2.0])
    assert opt.state[p]["steps"] == 2 and p.is_leaf

    class Nothing(ktorch.optim.Optimizer):
        pass

    (p * p).sum().backward()
    with pytest.raises(NotImplementedError, match="must define update"):
        Nothing([p], {}).step()

@needs_torch
def test_param_groups_and_add_param_group_match_pytorch():
    def build(lib):
        w0, b0, _ = problem(1)
        w = lib.tensor(w0, requires_grad=True)
        b = lib.tensor(b0, requires_grad=True)
        extra = lib.tensor([1.0, 2.0], requires_grad=True)
        opt = lib.optim.SGD([{"params": [w]}, {"params": b, "lr": 0.5, "momentum": 0.9}],
                            lr=0.1)
        opt.add_param_group({"params": [extra], "weight_decay": 0.2})
        for _ in range(5):
            opt.zero_grad()
            ((w * 0.1).tanh().sum() * b.sum() + (extra ** 2).sum()).backward()
            opt.step()
        return [t.detach().numpy() for t in (w, b, extra)], opt

    ours, opt = build(ktorch)
    ref, ref_opt = build(torch)
    for a, r in zip(ours, ref, strict=True):
        np.testing.assert_allclose(a, r, rtol=1e-5)
    assert [g["lr"] for g in opt.param_groups] == [g["lr"] for g in ref_opt.param_groups]
    assert opt.param_groups[2]["momentum"] == 0.0
    assert opt.param_groups[2]["weight_decay"] == 0.2


@needs_torch
def test_state_dict_layout_matches_pytorch_and_resumes():
    _, _, opt = run(ktorch, "Adam", {"lr": 0.01}, steps=3)
    _, _, ref = run(torch, "Adam", {"lr": 0.01}, steps=3)
    sd, ref_sd = opt.state_dict(), ref.state_dict()
    assert list(sd["state"]) == list(ref_sd["state"]) == [0, 1]
    assert sorted(sd["state"][0]) == sorted(ref_sd["state"][0])
    assert sd["state"][0]["step"].item() == ref_sd["state"][0]["step"].item() == 3
    assert sd["param_groups"][0]["params"] == ref_sd["param_groups"][0]["params"]
    assert set(sd["param_groups"][0]) <= set(ref_sd["param_groups"][0])
    np.testing.assert_allclose(sd["state"][1]["exp_avg_sq"].numpy(),
                               ref_sd["state"][1]["exp_avg_sq"].numpy(), rtol=1e-5)


def test_load_state_dict_continues_identically():
    w_full, b_full, _ = run(ktorch, "Adam", {"lr": 0.01}, steps=10)
    # 5 steps, save, build a fresh optimiser over the same tensors, load, 5 more steps
    w0, b0, x0 = problem()
    w = kit.tensor(w0, requires_grad=True)
    b = kit.tensor(b0, requires_grad=True)
    x = kit.tensor(x0)

    def steps(opt, n):
        for _ in range(n):
            opt.zero_grad()
            ((x @ w.T + b).tanh() ** 2).mean().backward()
            opt.step()

    first = ktorch.optim.Adam([w, b], lr=0.01)
    steps(first, 5)
    saved = first.state_dict()
    second = ktorch.optim.Adam([w, b], lr=0.5)
    second.load_state_dict(saved)
    assert second.param_groups[0]["lr"] == 0.01
    assert second.state[w]["exp_avg"] is not first.state[w]["exp_avg"]  # copied
    steps(second, 5)
    np.testing.assert_allclose(w.detach().numpy(), w_full, rtol=1e-6)
    np.testing.assert_allclose(b.detach().numpy(), b_full, rtol=1e-6)
    with pytest.raises(ValueError, match="number of parameter groups"):
        second.load_state_dict({"state": {}, "param_groups": []})


def test_zero_grad_set_to_none_and_to_zero():
    p = kit.tensor([1.0, 2.0], requires_grad=True)
    opt = ktorch.optim.SGD([p], lr=0.1)
    (p * 2).sum().backward()
    opt.zero_grad(set_to_none=False)
    np.testing.assert_array_equal(p.grad.numpy(), [0.0, 0.0])
    opt.zero_grad()
    assert p.grad is None
    opt.step()  # a parameter without a gradient is skipped
    np.testing.assert_array_equal(p.detach().numpy(), [1.0, 2.0])


def test_closure_is_evaluated_with_grad():
    p = kit.tensor([3.0], requires_grad=True)
    opt = ktorch.optim.SGD([p], lr=0.25)

    def closure():
        opt.zero_grad()
        loss = (p * p).sum()
        loss.backward()
        return loss

    with kit.no_grad():
        loss = opt.step(closure)
    assert loss.item() == 9.0
    np.testing.assert_allclose(p.detach().numpy(), [1.5])


def test_bad_arguments_are_clear_errors():
    p = kit.tensor([1.0], requires_grad=True)
    with pytest.raises(ValueError, match="empty parameter list"):
        ktorch.optim.SGD([], lr=0.1)
    with pytest.raises(TypeError, match="iterable"):
        ktorch.optim.SGD(p, lr=0.1)
    with pytest.raises(ValueError, match="Invalid learning rate"):
        ktorch.optim.Adam([p], lr=-1)
    with pytest.raises(ValueError, match="beta parameter at index 1"):
        ktorch.optim.Adam([p], betas=(0.9, 1.0))
    with pytest.raises(ValueError, match="Nesterov"):
        ktorch.optim.SGD([p], lr=0.1, nesterov=True)
    with pytest.raises(ValueError, match="non-leaf"):
        ktorch.optim.SGD([p * 2], lr=0.1)
    with pytest.raises(ValueError, match="more than one parameter group"):
        ktorch.optim.SGD([{"params": [p]}, {"params": [p]}], lr=0.1)
    with pytest.raises(TypeError, match="ordered collections"):
        ktorch.optim.SGD([{"params": {p}}], lr=0.1)


def schedule(lib, cls, kwargs, epochs=25):
    p = lib.tensor([1.0], requires_grad=True)
    opt = lib.optim.SGD([p, lib.tensor([2.0], requires_grad=True)], lr=0.1)
    opt.add_param_group({"params": [lib.tensor([0.0], requires_grad=True)], "lr": 0.03})
    sched = getattr(lib.optim.lr_scheduler, cls)(opt, **kwargs)
    lrs = []
    for _ in range(epochs):
        opt.step()
        sched.step()
        lrs.append(sched.get_last_lr())
    return lrs


@needs_torch
@pytest.mark.parametrize("cls, kwargs", [
    ("StepLR", {"step_size": 3}), ("StepLR", {"step_size": 2, "gamma": 0.5}),
    ("CosineAnnealingLR", {"T_max": 10}), ("CosineAnnealingLR", {"T_max": 7, "eta_min": 0.001}),
    ("MultiStepLR", {"milestones": [3, 7, 7, 12], "gamma": 0.5}),
    ("ExponentialLR", {"gamma": 0.9}),
    ("LambdaLR", {"lr_lambda": lambda epoch: 0.95 ** epoch / (1 + epoch)}),
])
def test_schedules_equal_pytorch(cls, kwargs):
    assert schedule(ktorch, cls, kwargs) == schedule(torch, cls, kwargs)


def test_step_lr_values():
    lrs = schedule(ktorch, "StepLR", {"step_size": 2, "gamma": 0.5}, epochs=4)
    assert [lr[0] for lr in lrs] == [0.1, 0.05, 0.05, 0.025]


def test_optimizer_repr():
    opt = ktorch.optim.SGD([kit.tensor([1.0], requires_grad=True)], lr=0.1)
    text = repr(opt)
    assert text.startswith("SGD (\nParameter Group 0\n") and "    lr: 0.1" in text


def test_lambda_lr_per_group_and_its_state_dict():
    opt = ktorch.optim.SGD([{"params": [kit.zeros(1, requires_grad=True)], "lr": 1.0},
                            {"params": [kit.zeros(1, requires_grad=True)], "lr": 2.0}])
    sched = ktorch.optim.lr_scheduler.LambdaLR(opt, [lambda e: e + 1, lambda e: 0.5 ** e])
    opt.step()
    sched.step()
    assert sched.get_last_lr() == [2.0, 1.0]
    assert "lr_lambdas" not in sched.state_dict() and sched.state_dict()["last_epoch"] == 1
    with pytest.raises(ValueError, match="Expected 2 lr_lambdas"):
        ktorch.optim.lr_scheduler.LambdaLR(opt, [lambda e: 1.0])


PLATEAU = [1.0, 0.9, 0.95, 0.95, 0.94, 0.96, 0.9, 0.97, 0.98, 0.99, 1.0, 0.5, 0.6, 0.6, 0.7,
           0.8, 0.9, 0.95, 0.96, 0.97]


@needs_torch
@pytest.mark.parametrize("kwargs", [
    {"patience": 2}, {"patience": 1, "cooldown": 2, "factor": 0.5, "min_lr": 0.004},
    {"mode": "max", "patience": 1, "threshold": 0.05, "threshold_mode": "abs"},
])
def test_reduce_lr_on_plateau_equals_pytorch(kwargs):
    def lrs(lib):
        opt = lib.optim.SGD([lib.tensor([1.0], requires_grad=True)], lr=0.1)
        sched = lib.optim.lr_scheduler.ReduceLROnPlateau(opt, **kwargs)
        out = []
        for metric in PLATEAU:
            opt.step()
            sched.step(metric)
            out.append(sched.get_last_lr())
        return out

    assert lrs(ktorch) == lrs(torch)


def test_reduce_lr_on_plateau_errors():
    opt = ktorch.optim.SGD([kit.tensor([1.0], requires_grad=True)], lr=0.1)
    with pytest.raises(ValueError, match="Factor"):
        ktorch.optim.lr_scheduler.ReduceLROnPlateau(opt, factor=2.0)
    with pytest.raises(ValueError, match="mode"):
        ktorch.optim.lr_scheduler.ReduceLROnPlateau(opt, mode="lowest")
