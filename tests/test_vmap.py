"""vmap against a Python loop, for every primitive family, in_dims / out_dims variants, nesting,
gradients through vmap and per-sample gradients (vmap of grad)."""

import numpy as np
import pytest

import kit
from kit.func import BatchedTensor, grad, jacrev, vmap

RNG = np.random.default_rng(0)
B = 4


def rand(*shape):
    return kit.tensor(RNG.standard_normal(shape).astype(np.float64))


def _samples(args, in_dims):
    """Per-sample argument lists: what vmap's function sees, one sample at a time."""
    dims = in_dims if isinstance(in_dims, tuple) else (in_dims,) * len(args)
    size = next(a.shape[d] for a, d in zip(args, dims, strict=True) if d is not None)
    for b in range(size):
        yield [a if d is None else a[(slice(None),) * (d % a.ndim) + (b,)]
               for a, d in zip(args, dims, strict=True)]


def _first(out):
    return out[0] if isinstance(out, tuple) else out


def _loop(fn, args, in_dims):
    """The reference: call fn per sample and stack (what vmap promises)."""
    outs = [fn(*sample) for sample in _samples(args, in_dims)]
    if isinstance(outs[0], tuple):
        return tuple(np.stack([np.asarray(o[i].detach()) for o in outs])
                     for i in range(len(outs[0])))
    return np.stack([np.asarray(o.detach()) for o in outs])


def check(fn, *args, in_dims=0, grads=True):
    """vmap(fn) equals the loop, and so do the gradients of a weighted sum of its output."""
    got = vmap(fn, in_dims)(*args)
    want = _loop(fn, args, in_dims)
    pairs = zip(got, want, strict=True) if isinstance(got, tuple) else [(got, want)]
    for g, w in pairs:
        assert tuple(g.shape) == w.shape
        np.testing.assert_allclose(np.asarray(g.detach()), w, rtol=1e-12, atol=1e-12)
    floats = [i for i, a in enumerate(args) if a.dtype.kind == "f"]
    if not grads or _first(got).dtype.kind != "f" or not floats:
        return
    weights = kit.tensor(RNG.standard_normal(_first(got).shape))

    def gradients(run):
        leaves = [args[i].detach().requires_grad_() for i in floats]
        full = list(args)
        for i, leaf in zip(floats, leaves, strict=True):
            full[i] = leaf
        total = (_first(run(full)) * weights).sum()
        return kit.grad(total, leaves, allow_unused=True)

    batched = gradients(lambda full: vmap(fn, in_dims)(*full))
    looped = gradients(lambda full: kit.stack([_first(fn(*sample))
                                               for sample in _samples(full, in_dims)]))
    for g, r in zip(batched, looped, strict=True):
        if r is None:
            assert g is None or not np.asarray(g).any()
            continue
        np.testing.assert_allclose(np.asarray(g), np.asarray(r), rtol=1e-10, atol=1e-12)


# --- elementwise, with broadcasting between per-sample shapes -------------------------------
BINARY = [kit.add, kit.sub, kit.mul, kit.div, kit.maximum, kit.minimum,
          lambda x, y: (x.abs() + 1) ** y, lambda x, y: kit.where(x > y, x, y * 2)]
UNARY = [kit.neg, kit.exp, kit.tanh, kit.sigmoid, kit.abs, kit.sin, kit.cos, kit.relu,
         lambda x: (x.abs() + 1).log(), lambda x: (x.abs() + 0.1).sqrt(),
         lambda x: x.clamp(-0.5, 0.5), lambda x: x * 2.5 - 1, lambda x: 3.0 / (x.abs() + 1)]


@pytest.mark.parametrize("fn", BINARY)
@pytest.mark.parametrize("shapes,in_dims", [
    (((B, 3), (B, 3)), 0),
    (((B, 3), (3,)), (0, None)),
    (((3,), (B, 4, 1)), (None, 0)),
    (((B, 2, 3), (3, B)), (0, 1)),
    (((3, B), (B,)), (1, 0)),
])
def test_binary_elementwise(fn, shapes, in_dims):
    check(fn, *(rand(*s) for s in shapes), in_dims=in_dims)


@pytest.mark.parametrize("fn", UNARY)
def test_unary_elementwise(fn):
    check(fn, rand(B, 2, 3))
    check(fn, rand(2, B), in_dims=-1)


def test_comparisons_logic_and_sign_are_batched_without_gradients():
    x, y = rand(B, 3), rand(B, 3)
    for fn in (kit.eq, kit.ne, kit.lt, kit.le, kit.gt, kit.ge):
        check(fn, x, y)
    check(lambda x, y: (x > 0) & (y > 0) | ~(x > y), x, y)
    check(kit.sign, x, grads=False)


# --- reductions: the per-sample axis is shifted past the batch dims --------------------------
@pytest.mark.parametrize("fn", [
    lambda x: x.sum(), lambda x: x.sum(0), lambda x: x.sum(-1, keepdim=True),
    lambda x: x.mean(1), lambda x: x.mean((0, 1)), lambda x: x.logsumexp(-1),
    lambda x: x.max(), lambda x: x.min(), lambda x: x.max(0), lambda x: x.min(1, keepdim=True),
    lambda x: x.argmax(), lambda x: x.argmin(1), lambda x: kit.softmax(x, 0),
    lambda x: kit.log_softmax(x, -1),
])
def test_reductions(fn):
    check(fn, rand(B, 3, 5))


# --- movement and indexing ----------------------------------------------------------------
@pytest.mark.parametrize("fn", [
    lambda x: x.reshape(5, 3), lambda x: x.view(-1), lambda x: x.permute(1, 0),
    lambda x: x.transpose(0, 1), lambda x: x.T, lambda x: x.unsqueeze(0),
    lambda x: x.unsqueeze(-1), lambda x: x.reshape(3, 1, 5).squeeze(),
    lambda x: x.reshape(1, 15).squeeze(0), lambda x: x.flatten(),
    lambda x: x[:, :1].expand(3, 4), lambda x: x[0].expand(2, 5), lambda x: x.movedim(0, 1),
    lambda x: x[1], lambda x: x[:, 2], lambda x: x[..., None], lambda x: x[[0, 2, 2]],
    lambda x: x[:, [4, 0]], lambda x: x[kit.tensor([True, False, True])],
    lambda x: x.astype(kit.float32), lambda x: x.to("cpu"),
    lambda x: kit.cat([x, x * 2], 1), lambda x: kit.stack([x, x.exp()], -1),
])
def test_movement_and_indexing(fn):
    check(fn, rand(B, 3, 5))


def test_indexing_with_a_different_index_per_sample():
    x, idx = rand(B, 5), kit.tensor(RNG.integers(0, 5, (B, 3)))
    check(lambda x, i: x[i], x, idx)
    check(lambda x, i: x[i], rand(5, 2), idx, in_dims=(None, 0))


def test_setitem_and_inplace_on_a_batched_clone():
    def f(x, mask):
        y = x.clone()
        y[mask] = 0          # seed 001's ReLU backward, batched
        y[0] = 7.0
        y.add_(1)
        return y

    check(f, rand(B, 3), kit.tensor(RNG.standard_normal((B, 3)) > 0))


def test_cat_stack_mix_batched_and_unbatched():
    check(lambda x, y: kit.cat([x, y], 0), rand(B, 2), rand(3), in_dims=(0, None))
    check(lambda x, y: kit.stack([x, y]), rand(3), rand(B, 3), in_dims=(None, 0))


# --- matmul in all its shapes ------------------------------------------------------------
@pytest.mark.parametrize("shapes,in_dims", [
    (((B, 3), (3, 2)), (0, None)),      # batch of vectors @ matrix: one GEMM
    (((2, 3), (B, 3)), (None, 0)),      # matrix @ batch of vectors
    (((B, 3), (B, 3)), 0),               # dot per sample
    (((B, 2, 3), (B, 3, 4)), 0),
    (((B, 3), (5, 3, 2)), (0, None)),   # vector @ stack of matrices
    (((2, 3), (B, 6, 3, 4)), (None, 0)),
    (((B, 4, 3), (3,)), (0, None)),
])
def test_matmul(shapes, in_dims):
    check(kit.matmul, *(rand(*s) for s in shapes), in_dims=in_dims)


def test_dot_mm_outer():
    check(kit.dot, rand(B, 3), rand(B, 3))
    check(kit.mm, rand(B, 2, 3), rand(3, 4), in_dims=(0, None))
    check(kit.outer, rand(B, 3), rand(2), in_dims=(0, None))


# --- sorting, index_add, losses -------------------------------------------------------------
def test_sort_argsort_index_add():
    check(lambda x: x.sort(), rand(B, 5))
    check(lambda x: kit.sort(x, 0, True), rand(B, 5, 2))
    check(lambda x: x.argsort(), rand(B, 5))
    check(lambda x, s: kit.index_add(x, 0, kit.tensor([0, 2, 0]), s), rand(B, 4, 2),
          rand(3, 2), in_dims=(0, None))


def test_losses_per_sample():
    logits, target = rand(B, 1, 5), kit.tensor(RNG.integers(0, 5, (B, 1)))
    check(kit.cross_entropy, logits, target)
    check(lambda a, b: kit.mse_loss(a, b), rand(B, 3), rand(B, 3))


# --- in_dims / out_dims / nesting -----------------------------------------------------------
def test_in_dims_nested_structures_and_kwargs():
    x, y = rand(B, 3), rand(3, B)
    got = vmap(lambda pair, scale=1.0: (pair[0] * pair[1]) * scale, in_dims=((0, 1),))(
        (x, y), scale=2.0)
    np.testing.assert_allclose(np.asarray(got), np.asarray(x) * np.asarray(y).T * 2)
    got = vmap(lambda d: d["a"] + d["b"], in_dims=({"a": 0, "b": None},))(
        {"a": x, "b": y[:, 0]})
    np.testing.assert_allclose(np.asarray(got), np.asarray(x) + np.asarray(y)[:, 0])


def test_out_dims_and_unbatched_outputs():
    x = rand(B, 3)
    a, b = vmap(lambda x: (x * 2, x.sum()), out_dims=(1, 0))(x)
    assert a.shape == (3, B) and b.shape == (B,)
    const = vmap(lambda x: (x, kit.tensor([1.0, 2.0])), out_dims=(0, None))(x)[1]
    assert const.tolist() == [1.0, 2.0]
    expanded = vmap(lambda x: kit.tensor([1.0, 2.0]))(x)  # unbatched output: copied per sample
    assert expanded.shape == (B, 2)


def test_nested_vmap_outer_product_and_batched_matmul():
    a, b = rand(3), rand(5)
    outer = vmap(vmap(kit.mul, in_dims=(None, 0)), in_dims=(0, None))(a, b)
    np.testing.assert_allclose(np.asarray(outer), np.outer(np.asarray(a), np.asarray(b)))
    m, v = rand(2, 3, 4, 5), rand(3, 5)
    got = vmap(vmap(kit.matmul, in_dims=(0, 0)), in_dims=(0, None))(m, v)
    np.testing.assert_allclose(np.asarray(got), np.einsum("abij,bj->abi", np.asarray(m),
                                                          np.asarray(v)), rtol=1e-12)
    inner_out = vmap(vmap(lambda x: x.sum(), in_dims=1), in_dims=0)(rand(2, 3, 4))
    assert inner_out.shape == (2, 4)


# --- gradients --------------------------------------------------------------------------------
def _mlp_loss(params, x, t):
    h = kit.relu(x @ params["w1"] + params["b1"])
    return kit.cross_entropy((h @ params["w2"]).unsqueeze(0), t.unsqueeze(0))


def test_per_sample_gradients_of_a_small_model_equal_the_loop():
    params = {"w1": rand(4, 8), "b1": rand(8), "w2": rand(8, 3)}
    xs, ts = rand(6, 4), kit.tensor(RNG.integers(0, 3, 6))
    per_sample = vmap(grad(_mlp_loss), in_dims=(None, 0, 0))(params, xs, ts)
    for name, g in per_sample.items():
        assert g.shape == (6,) + params[name].shape
        loop = np.stack([np.asarray(grad(_mlp_loss)(params, xs[i], ts[i])[name])
                         for i in range(6)])
        np.testing.assert_allclose(np.asarray(g), loop, rtol=1e-10, atol=1e-12)


def test_per_sample_gradients_match_torch_func():
    torch = pytest.importorskip("torch")
    from torch.func import grad as t_grad
    from torch.func import vmap as t_vmap

    params = {"w1": rand(4, 8), "b1": rand(8), "w2": rand(8, 3)}
    xs, ts = rand(5, 4), kit.tensor(RNG.integers(0, 3, 5))
    ours = vmap(grad(_mlp_loss), in_dims=(None, 0, 0))(params, xs, ts)

    def torch_loss(p, x, t):
        h = torch.relu(x @ p["w1"] + p["b1"])
        return torch.nn.functional.cross_entropy((h @ p["w2"]).unsqueeze(0), t.unsqueeze(0))

    tp = {k: torch.tensor(np.asarray(v)) for k, v in params.items()}
    theirs = t_vmap(t_grad(torch_loss), in_dims=(None, 0, 0))(
        tp, torch.tensor(np.asarray(xs)), torch.tensor(np.asarray(ts)))
    for name in params:
        np.testing.assert_allclose(np.asarray(ours[name]), theirs[name].numpy(), rtol=1e-10)


def test_backward_through_a_vmapped_function_outside_vmap():
    x = rand(B, 3).requires_grad_()
    y = vmap(lambda r: (r.exp() * r).sum())(x)
    y.sum().backward()
    e = np.exp(np.asarray(x.detach()))
    np.testing.assert_allclose(np.asarray(x.grad), e * (np.asarray(x.detach()) + 1))


def test_jacrev_inside_vmap_equals_the_loop():
    xs = rand(B, 3)
    f = lambda x: kit.tanh(x) * x.sum()  # noqa: E731
    got = vmap(jacrev(f))(xs)
    want = np.stack([np.asarray(jacrev(f)(xs[i])) for i in range(B)])
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12)


# --- what a function under vmap cannot do ----------------------------------------------------
@pytest.mark.parametrize("fn,match", [
    (lambda x: x.item(), "calling .item\\(\\)"),
    (lambda x: x * 2 if x.sum() > 0 else x, "data-dependent Python control flow"),
    (lambda x: kit.tensor(x.numpy()), "Cannot access data pointer"),
    (lambda x: kit.tensor(np.asarray(x)), "NumPy"),
    (lambda x: x.sum().backward(), "kit.func.grad"),
])
def test_batched_tensor_refuses_per_sample_python_access(fn, match):
    with pytest.raises(RuntimeError, match=match):
        vmap(fn)(rand(B, 3))


@pytest.mark.parametrize("call,match", [
    (lambda: vmap(kit.add)(rand(B, 3), rand(B + 1, 3)), "same size in the mapped dimension"),
    (lambda: vmap(kit.exp, in_dims=2)(rand(B, 3)), "in_dim to satisfy -2 <= in_dim < 2"),
    (lambda: vmap(kit.add, in_dims=(0,))(rand(B), rand(B)), "in_dims has 1 entries"),
    (lambda: vmap(kit.exp, in_dims=None)(rand(B)), "all in_dims are None"),
    (lambda: vmap(lambda x, k: x * k, in_dims=(0, 0))(rand(B), 3.0), "non-Tensor arguments"),
    (lambda: vmap(lambda x: 3.0)(rand(B)), "must only return Tensors"),
    (lambda: vmap(lambda x: x * 2, out_dims=None)(rand(B)), "out_dims=None for an output "
     "that is batched"),
])
def test_vmap_argument_errors(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_batched_tensor_reports_the_per_sample_view():
    seen = {}

    def f(x):
        seen.update(shape=x.shape, ndim=x.ndim, size=x.size(0), length=len(x),
                    kind=type(x), numel=x.numel())
        return x

    vmap(f)(rand(B, 3, 2))
    assert seen == {"shape": (3, 2), "ndim": 2, "size": 3, "length": 3, "kind": BatchedTensor,
                    "numel": 6}


# --- compositions ---------------------------------------------------------------------------
def test_vmap_of_jvp_and_vjp_and_grad_of_vmap():
    from kit.func import jacfwd, jvp, vjp

    xs, vs, w = rand(B, 3), rand(B, 3), rand(3, 2)
    f = lambda x: kit.tanh(x) * x.sum()  # noqa: E731
    got = vmap(lambda x, v: jvp(f, (x,), (v,))[1])(xs, vs)
    want = np.stack([np.asarray(jvp(f, (xs[i],), (vs[i],))[1]) for i in range(B)])
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12)
    got = vmap(lambda x, v: vjp(f, x)[1](v)[0])(xs, vs)
    want = np.stack([np.asarray(vjp(f, xs[i])[1](vs[i])[0]) for i in range(B)])
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(vmap(jacfwd(f))(xs)), np.asarray(vmap(jacrev(f))(xs)),
                               rtol=1e-12)
    through_vmap = grad(lambda w: vmap(lambda x: kit.tanh(x @ w).sum())(xs).sum())(w)
    direct = grad(lambda w: kit.tanh(xs @ w).sum())(w)
    np.testing.assert_allclose(np.asarray(through_vmap), np.asarray(direct), rtol=1e-12)


def test_model_ensembling_batches_the_parameters():
    ws, xs = rand(5, 3, 2), rand(B, 3)
    got = vmap(lambda w, x: x @ w, in_dims=(0, None))(ws, xs)
    np.testing.assert_allclose(np.asarray(got), np.einsum("bij,ni->bnj", np.asarray(ws),
                                                          np.asarray(xs)), rtol=1e-12)


class _Cube(kit.Function):
    generate_vmap_rule = True

    @staticmethod
    def forward(x):
        return x ** 3, 3 * x ** 2

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0], output[1])

    @staticmethod
    def backward(ctx, g, g_dx):
        x, dx = ctx.saved_tensors
        return g * dx + g_dx * 6 * x


class _NumpyExp(kit.Function):
    @staticmethod
    def forward(x):
        return kit.tensor(np.exp(x.numpy()))

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(output)

    @staticmethod
    def backward(ctx, g):
        return g * ctx.saved_tensors[0]

    @staticmethod
    def vmap(info, in_dims, x):
        return _NumpyExp.apply(x), in_dims[0]


def test_custom_functions_under_nested_vmap_and_higher_order():
    X = rand(2, 3, 4)
    cube = lambda x: _Cube.apply(x)[0]  # noqa: E731
    np.testing.assert_allclose(np.asarray(vmap(vmap(cube))(X)), np.asarray(X) ** 3)
    np.testing.assert_allclose(np.asarray(vmap(vmap(vmap(grad(cube))))(X)),
                               3 * np.asarray(X) ** 2)
    x = X[0, 0]
    np.testing.assert_allclose(np.asarray(jacrev(vmap(cube))(x)), np.diag(3 * np.asarray(x) ** 2))
    from kit.func import hessian

    hess = vmap(hessian(lambda x: cube(x).sum()))(X[0])
    np.testing.assert_allclose(np.asarray(hess), [np.diag(6 * r) for r in np.asarray(X[0])])
    e = np.exp(np.asarray(X))
    np.testing.assert_allclose(np.asarray(vmap(vmap(_NumpyExp.apply))(X)), e)
    np.testing.assert_allclose(np.asarray(vmap(_NumpyExp.apply, in_dims=1)(X)),
                               e.transpose(1, 0, 2))
    np.testing.assert_allclose(
        np.asarray(vmap(vmap(grad(lambda x: _NumpyExp.apply(x).sum())))(X)), e)


def test_index_put_with_batched_values_and_inplace_into_an_unbatched_tensor():
    check(lambda x, v: kit.index_put(x, (slice(None), 1), v), rand(3, 2), rand(B, 3),
          in_dims=(None, 0))
    check(lambda x, v: kit.index_put(x, 1, v), rand(B, 3, 2), rand(B, 2))

    def update(x, v):
        y = x.clone()  # not batched: every sample would write into the same tensor
        y[1] = v
        return y

    with pytest.raises(RuntimeError, match="must become out-of-place"):
        vmap(update, in_dims=(None, 0))(rand(3, 2), rand(B, 2))
