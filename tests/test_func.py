"""kit.func transforms against torch.func: grad (argnums, has_aux), grad_and_value, vjp, jacrev,
jvp, jacfwd, hessian, grad of grad; and every misuse error of the transforms.

The functions below are written with operations both `kit.torch` and `torch` spell the same way;
their torch.func results (PyTorch 2.13, float64) are stored in EXPECTED and also recomputed live
when PyTorch is installed.
"""

import warnings

import numpy as np
import pytest

import kit
import kit.torch
from kit.func import grad, grad_and_value, hessian, jacfwd, jacrev, jvp, vjp, vmap


def inputs():
    rng = np.random.default_rng(1)
    return {
        "x": rng.standard_normal(3).astype(np.float64),
        "W": rng.standard_normal((3, 2)).astype(np.float64),
    }

# Scalar functions of (x, W), written with operations both namespaces spell the same way.
SCALAR = {
    "poly": lambda t: lambda x, W: (x ** 3).sum() + (x * x).sum() * 2,
    "tanh_mm": lambda t: lambda x, W: t.tanh(x @ W).sum(),
    "softmax_ce": lambda t: lambda x, W: -t.log_softmax(x @ W, dim=-1)[1],
    "sigmoid_exp": lambda t: lambda x, W: (
        (t.sigmoid(x) * t.exp(-x)).mean() + (W ** 2).sum() * x.sum()),
    "sort_clamp": lambda t: lambda x, W: (
        (t.sort(x).values * t.arange(3.0, dtype=x.dtype)).sum()
        + t.clamp(W, -0.5, 0.5).sum() * x[0]),
}
# Vector functions of x (for jacrev / jacfwd / jvp / vjp).
VECTOR = {
    "sin_outer": lambda t: lambda x: t.sin(x) * x.sum(),
    "cumulative": lambda t: lambda x: t.stack([x[0] * x[1], x[1] ** 2, t.exp(x[2]) * x[0]]),
    "matvec": lambda t: lambda x: t.tanh(t.outer(x, x) @ x),
}



def compute(t, to_np, tensor):
    """Every transform of every case, with namespace `t` (kit.torch or torch)."""
    data = inputs()
    x, W = tensor(data["x"]), tensor(data["W"])
    out = {}
    F = t.func
    for name, make in SCALAR.items():
        f = make(t)
        g = F.grad(f, argnums=(0, 1))(x, W)
        out[f"grad/{name}/x"] = to_np(g[0])
        out[f"grad/{name}/W"] = to_np(g[1])
        gv = F.grad_and_value(f)(x, W)
        out[f"value/{name}"] = to_np(gv[1])
        out[f"hessian/{name}"] = to_np(F.hessian(f)(x, W))
        summed = F.grad(lambda x, W, f=f: F.grad(f)(x, W).sum())
        out[f"gradgrad_sum/{name}"] = to_np(summed(x, W))
    v = tensor(np.array([0.5, -1.0, 2.0]))
    for name, make in VECTOR.items():
        f = make(t)
        out[f"jacrev/{name}"] = to_np(F.jacrev(f)(x))
        out[f"jacfwd/{name}"] = to_np(F.jacfwd(f)(x))
        _, vjp_fn = F.vjp(f, x)
        out[f"vjp/{name}"] = to_np(vjp_fn(v)[0])
        out[f"jvp/{name}"] = to_np(F.jvp(f, (x,), (v,))[1])
    return out

EXPECTED = {'grad/poly/x': [1.740622069674, 5.311641695196, 1.649314288683],
 'grad/poly/W': [[0.0, 0.0], [0.0, 0.0], [0.0, 0.0]],
 'value/poly': 2.439338063051,
 'hessian/poly': [[6.073505152389, 0.0, 0.0],
                  [0.0, 8.929708861007, 0.0],
                  [0.0, 0.0, 5.9826224571]],
 'gradgrad_sum/poly': [6.073505152389, 8.929708861007, 5.9826224571],
 'grad/tanh_mm/x': [-0.382657056717, -0.095752199762, 0.938890136284],
 'grad/tanh_mm/W': [[0.341553371209, 0.345563029304],
                    [0.812034963411, 0.821567829545],
                    [0.32658292808, 0.330416840996]],
 'value/tanh_mm': 0.100173571633,
 'hessian/tanh_mm': [[-0.349705735937, 0.116571787304, 0.16683044142],
                     [0.116571787304, -0.038023512108, -0.058439196238],
                     [0.16683044142, -0.058439196238, -0.070011297626]],
 'gradgrad_sum/tanh_mm': [-0.066303507213, 0.020109078958, 0.038379947556],
 'grad/softmax_ce/x': [-1.168367890738, 0.520209111511, 0.114559000041],
 'grad/softmax_ce/W': [[0.182824124462, -0.182824124462],
                       [0.434659979179, -0.434659979179],
                       [0.174810858049, -0.174810858049]],
 'value/softmax_ce': 0.752959156844,
 'hessian/softmax_ce': [[1.215272262194, -0.541093014256, -0.119157994873],
                        [-0.541093014256, 0.240918565481, 0.053054414739],
                        [-0.119157994873, 0.053054414739, 0.011683495282]],
 'gradgrad_sum/softmax_ce': [0.555021253065, -0.247120034036, -0.054420084852],
 'grad/sigmoid_exp/x': [3.395174393781, 3.405355423528, 3.394968999897],
 'grad/sigmoid_exp/W': [[-3.903319259514, 2.711793255176],
                        [1.33701630395, -1.608324655084],
                        [1.740610751451, 1.091995977928]],
 'value/sigmoid_exp': 5.585233006197,
 'hessian/sigmoid_exp': [[0.013840362571, -0.0, -0.0],
                         [-0.0, 0.027518596704, -0.0],
                         [-0.0, -0.0, 0.013278510905]],
 'gradgrad_sum/sigmoid_exp': [0.013840362571, 0.027518596704, 0.013278510905],
 'grad/sort_clamp/x': [1.81094696855, 2.0, 0.0],
 'grad/sort_clamp/W': [[0.0, 0.0], [0.345584192065, 0.0], [0.0, 0.345584192065]],
 'value/sort_clamp': 2.269070932001,
 'hessian/sort_clamp': [[0.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]],
 'gradgrad_sum/sort_clamp': [0.0, 0.0, 0.0],
 'jacrev/sin_outer': [[1.747841943753, 0.338746388318, 0.338746388318],
                      [0.732248803846, 1.752196979054, 0.732248803846],
                      [0.324456490007, 0.324456490007, 1.741074540631]],
 'jacfwd/sin_outer': [[1.747841943753, 0.338746388318, 0.338746388318],
                      [0.732248803846, 1.752196979054, 0.732248803846],
                      [0.324456490007, 0.324456490007, 1.741074540631]],
 'vjp/sin_outer': [0.790585148043, -0.933910804881, 2.919273471575],
 'jvp/sin_outer': [1.212667360195, 0.078425030562, 3.319920836259],
 'jacrev/cumulative': [[0.821618143501, 0.345584192065, 0.0],
                       [0.0, 1.643236287002, 0.0],
                       [1.391576220386, 0.0, 0.480906743819]],
 'jacfwd/cumulative': [[0.821618143501, 0.345584192065, 0.0],
                       [0.0, 1.643236287002, 0.0],
                       [1.391576220386, 0.0, 0.480906743819]],
 'vjp/cumulative': [3.193961512523, -1.47044419097, 0.961813487637],
 'jvp/cumulative': [0.065224879686, -1.643236287002, 1.657601597831],
 'jacrev/matvec': [[1.037965256705, 0.515904079147, 0.207485480759],
                   [0.342029658384, 1.35744611816, 0.327038339367],
                   [0.209175288661, 0.497309241228, 1.027661906948]],
 'jacfwd/matvec': [[1.037965256705, 0.515904079147, 0.207485480759],
                   [0.342029658384, 1.35744611816, 0.327038339367],
                   [0.209175288661, 0.497309241228, 1.027661906948]],
 'vjp/matvec': [0.595303547291, -0.104875596131, 1.832028214909],
 'jvp/matvec': [0.418049510723, -0.532354610234, 1.662602216999]}


def _kit_results():
    return compute(kit.torch, lambda a: np.asarray(a.detach().numpy()), kit.torch.tensor)


def test_transforms_match_stored_torch_func_values():
    got = _kit_results()
    assert set(got) == set(EXPECTED)
    for key, value in got.items():
        np.testing.assert_allclose(value, EXPECTED[key], rtol=1e-9, atol=1e-10, err_msg=key)


def test_transforms_match_live_torch_func():
    torch = pytest.importorskip("torch")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # torch.jit.script inside torch.func
        want = compute(torch, lambda a: a.detach().numpy(), torch.tensor)
    got = _kit_results()
    for key, value in want.items():
        np.testing.assert_allclose(got[key], value, rtol=1e-9, atol=1e-10, err_msg=key)


def test_grad_has_aux_and_grad_and_value():
    x = kit.tensor([1.0, 2.0, 3.0])

    def f(x):
        y = (x ** 2).sum()
        return y, {"double": y * 2}

    g, aux = grad(f, has_aux=True)(x)
    assert g.tolist() == [2.0, 4.0, 6.0] and aux["double"].item() == 28.0
    (g2, (value, aux2)) = grad_and_value(f, has_aux=True)(x)
    assert g2.tolist() == g.tolist() and value.item() == 14.0 and aux2["double"].item() == 28.0
    assert value.grad_fn is None and g.grad_fn is None  # results are cut from the inner graph


def test_grad_keeps_outer_graph_so_user_backward_works_through_it():
    x = kit.tensor([1.0, 2.0], requires_grad=True)
    g = grad(lambda x: (x ** 3).sum())(x)  # 3 x^2, still a function of x
    g.sum().backward()
    assert x.grad.tolist() == [6.0, 12.0]


def test_grad_with_closure_inside_grad_has_no_perturbation_confusion():
    # d/dx [ x * d/dy (x * y) ] = d/dx [x * x] = 2x
    x = kit.tensor(3.0)
    result = grad(lambda x: x * grad(lambda y: x * y)(kit.tensor(1.0)))(x)
    assert result.item() == 6.0


def test_vjp_with_several_primals_and_outputs():
    x, y = kit.tensor([1.0, 2.0]), kit.tensor([3.0, 4.0])
    (a, b), vjp_fn = vjp(lambda x, y: (x * y, x + y), x, y)
    gx, gy = vjp_fn((kit.tensor([1.0, 1.0]), kit.tensor([10.0, 10.0])))
    assert a.tolist() == [3.0, 8.0] and b.tolist() == [4.0, 6.0]
    assert gx.tolist() == [13.0, 14.0] and gy.tolist() == [11.0, 12.0]
    again = vjp_fn((kit.tensor([1.0, 0.0]), kit.tensor([0.0, 0.0])))  # vjp_fn can be reused
    assert again[0].tolist() == [3.0, 0.0]


def test_jacrev_and_jacfwd_of_several_arguments_and_hessian_inside_vmap():
    x, w = kit.tensor([1.0, 2.0]), kit.tensor([3.0, -1.0])
    f = lambda x, w: x * w.sum() + w  # noqa: E731
    jx, jw = jacrev(f, argnums=(0, 1))(x, w)
    fx, fw = jacfwd(f, argnums=(0, 1))(x, w)
    assert jx.tolist() == fx.tolist() == [[2.0, 0.0], [0.0, 2.0]]
    assert jw.tolist() == fw.tolist() == [[2.0, 1.0], [2.0, 3.0]]
    xs = kit.tensor([[1.0, 2.0], [3.0, 4.0]])
    hs = vmap(hessian(lambda x: (x ** 3).sum()))(xs)
    assert hs.tolist() == [[[6.0, 0.0], [0.0, 12.0]], [[18.0, 0.0], [0.0, 24.0]]]


# --- misuse ---------------------------------------------------------------------------------
def test_grad_of_a_non_scalar_says_use_vjp_or_jacrev():
    with pytest.raises(RuntimeError, match="Expected f\\(\\*args\\) to return a scalar Tensor, got "
                       "tensor with 1 dims. Maybe you wanted to use the vjp or jacrev"):
        grad(lambda x: x * 2)(kit.tensor([1.0, 2.0]))


def test_grad_bad_argnums_and_has_aux_without_tuple():
    with pytest.raises(RuntimeError, match="argnums"):
        grad(lambda x: x.sum(), argnums=2)(kit.tensor([1.0]))
    with pytest.raises(RuntimeError, match="should be a tuple: \\(output, aux\\)"):
        grad(lambda x: x.sum(), has_aux=True)(kit.tensor([1.0]))
    with pytest.raises(TypeError, match="only differentiate with respect to Tensors"):
        grad(lambda x: x * 2.0)(3.0)


def test_jvp_needs_tuples_of_matching_shapes():
    x = kit.tensor([1.0, 2.0])
    with pytest.raises(RuntimeError, match="Expected primals and tangents to be tuples"):
        jvp(lambda x: x * 2, x, x)
    with pytest.raises(RuntimeError, match="same shape"):
        jvp(lambda x: x * 2, (x,), (kit.tensor([1.0, 2.0, 3.0]),))


def test_vjp_cotangent_shape_mismatch():
    _, vjp_fn = vjp(lambda x: x * 2, kit.tensor([1.0, 2.0]))
    with pytest.raises(RuntimeError, match="Mismatch in shape"):
        vjp_fn(kit.tensor([1.0, 2.0, 3.0]))


class _Combined(kit.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, g):
        return g * 2


@pytest.mark.parametrize("transform", ["vmap", "grad", "jacrev"])
def test_function_without_setup_context_under_any_transform(transform):
    x = kit.tensor([1.0, 2.0])
    fn = {"vmap": vmap(_Combined.apply), "grad": grad(lambda x: _Combined.apply(x).sum()),
          "jacrev": jacrev(_Combined.apply)}[transform]
    with pytest.raises(RuntimeError, match="In order to use an autograd.Function with functorch "
                       "transforms \\(vmap, grad, jvp, jacrev, ...\\), it must override the "
                       "setup_context staticmethod"):
        fn(x)
    assert _Combined.apply(x).tolist() == [2.0, 4.0]  # outside transforms the form is fine


# --- custom Functions under vmap --------------------------------------------------------------
class _Add(kit.Function):
    """Seed 001's MyFunction, corrected: separate form, setup_context, a generated vmap rule."""

    generate_vmap_rule = True

    @staticmethod
    def forward(a, b):
        return a + b

    @staticmethod
    def setup_context(ctx, inputs, output):
        pass

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output, grad_output


def test_seed_001_vmap_example_corrected_runs_and_backpropagates():
    x = kit.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = kit.tensor([2.0, 3.0, 4.0], requires_grad=True)
    z = vmap(_Add.apply)(x, y)
    assert z.tolist() == [3.0, 5.0, 7.0]
    z.sum().backward()  # seed 001's z.backward() needs a scalar
    assert x.grad.tolist() == [1.0, 1.0, 1.0] and y.grad.tolist() == [1.0, 1.0, 1.0]


def test_vmap_of_the_function_class_shows_the_corrected_line():
    with pytest.raises(TypeError, match=r"vmapped = vmap\(_Add\.apply\)"):
        vmapped = vmap(_Add)  # noqa: F841 - the line the error rewrites


class _ReLU(kit.Function):
    """Seed 001's ReluFunction in the separate form; its backward uses setitem on a clone."""

    generate_vmap_rule = True

    @staticmethod
    def forward(input):  # noqa: A002 - the seed's name
        return input.clamp(min=0)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])

    @staticmethod
    def backward(ctx, grad_output):
        input = ctx.saved_tensors[0]  # noqa: A001
        grad_input = grad_output.clone()
        grad_input[input < 0] = 0
        return grad_input


def test_generated_rule_runs_forward_and_backward_on_batched_tensors():
    xs = kit.tensor([[-1.0, 0.0, 2.0], [3.0, -2.0, 0.5]])
    assert vmap(_ReLU.apply)(xs).tolist() == [[0.0, 0.0, 2.0], [3.0, 0.0, 0.5]]
    per_sample = vmap(grad(lambda x: (_ReLU.apply(x) * x).sum()))(xs)
    assert per_sample.tolist() == [[0.0, 0.0, 4.0], [6.0, 0.0, 1.0]]
    weights = kit.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    _, vjp_fn = kit.func.vjp(vmap(_ReLU.apply), xs)
    assert vjp_fn(weights)[0].tolist() == [[0.0, 2.0, 3.0], [4.0, 0.0, 6.0]]


def _variant(name, **attrs):
    body = {"forward": staticmethod(lambda x: x * 2),
            "setup_context": staticmethod(lambda ctx, inputs, output: None),
            "backward": staticmethod(lambda ctx, g: g * 2)}
    body.update(attrs)
    return type(name, (kit.Function,), body)


def test_vmap_needs_exactly_one_rule():
    neither = _variant("Neither")
    both = _variant("Both", generate_vmap_rule=True,
                    vmap=staticmethod(lambda info, in_dims, x: (x * 2, in_dims[0])))
    with pytest.raises(RuntimeError, match="You tried to vmap over Neither, but it does not have "
                       "vmap support. Please override and implement the vmap staticmethod or "
                       "set generate_vmap_rule=True"):
        vmap(neither.apply)(kit.tensor([1.0, 2.0]))
    with pytest.raises(RuntimeError, match="You tried to vmap over Both, but it has both "
                       "generate_vmap_rule=True and an overridden vmap staticmethod"):
        vmap(both.apply)(kit.tensor([1.0, 2.0]))


def test_vmap_staticmethod_gets_batch_size_and_in_dims():
    seen = []

    def rule(info, in_dims, x, k):
        seen.append((info.batch_size, in_dims))
        return Scale.apply(x, k), in_dims[0]

    Scale = _variant("Scale", forward=staticmethod(lambda x, k: x * k),
                     backward=staticmethod(lambda ctx, g: (g * 2, None)), vmap=staticmethod(rule))
    out = vmap(Scale.apply, in_dims=(1, None))(kit.tensor([[1.0, 2.0, 3.0]]), 2.0)
    assert out.tolist() == [[2.0], [4.0], [6.0]] and seen == [(3, (0, None))]
    bad = _variant("Bad", vmap=staticmethod(lambda info, in_dims, x: x))
    with pytest.raises(RuntimeError, match=r"Bad.vmap must return a tuple \(output, out_dims\)"):
        vmap(bad.apply)(kit.tensor([1.0]))


def test_numpy_inside_a_generated_rule_is_explained():
    numpy_fn = _variant("NumpyDouble", generate_vmap_rule=True,
                        forward=staticmethod(lambda x: kit.tensor(x.numpy() * 2)))
    with pytest.raises(RuntimeError) as info:
        vmap(numpy_fn.apply)(kit.tensor([[1.0, 2.0]]))
    message = str(info.value)
    assert "NumpyDouble.forward under vmap with generate_vmap_rule=True" in message
    assert "Cannot access data pointer" in message and "vmap staticmethod" in message
    assert numpy_fn.apply(kit.tensor([1.0])).tolist() == [2.0]  # fine outside vmap


def test_jvp_and_jacfwd_with_aux_return_plain_tensors():
    from kit.func import jacfwd

    x = kit.tensor([1.0, 2.0])
    out, tangent, aux = jvp(lambda x: (x * 2, x.sum()), (x,), (x,), has_aux=True)
    assert out.tolist() == [2.0, 4.0] and tangent.tolist() == [2.0, 4.0] and aux.item() == 3.0
    jac, aux = jacfwd(lambda x: (x * x, x.sum()), has_aux=True)(x)
    assert jac.tolist() == [[2.0, 0.0], [0.0, 4.0]] and aux.item() == 3.0
    assert all(t.grad_fn is None for t in (out, tangent, jac, aux))
