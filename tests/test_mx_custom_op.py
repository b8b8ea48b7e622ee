"""mx.operator.CustomOp / CustomOpProp on kit's engine: the seed examples, MXNet's classic
loss layer, several inputs and outputs, kwargs, req, aux states, both front ends agreeing, and
higher-order gradients through Custom."""

import contextlib
import io

import numpy as np
import pytest

import kit
import kit.mx as mx
import kit.viz

# Seed 000's example, verbatim except for the import line (kit.mx stands in for mxnet).
SEED_000 = '''
import kit.mx as mx
import numpy as np

class DoubleOp(mx.operator.CustomOp):
    def forward(self, is_train, req, in_data, out_data, aux):
        x = in_data[0]
        self.assign(out_data[0], req[0], x * 2)

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        self.assign(in_grad[0], req[0], out_grad[0] * 2)

class DoubleOpProp(mx.operator.CustomOpProp):
    def __init__(self):
        super(DoubleOpProp, self).__init__(need_top_grad=True)

    def list_arguments(self):
        return ['data']

    def list_outputs(self):
        return ['output']

    def infer_shape(self, in_shape):
        return [in_shape[0]], [in_shape[0]], []

    def create_operator(self, ctx, shapes, dtypes):
        return DoubleOp()

@mx.operator.register("double")
class DoubleOpPropWrapper(DoubleOpProp):
    pass

data = mx.nd.array([1, 2, 3])
data.attach_grad()

with mx.autograd.record():
    y = mx.nd.Custom(data, op_type='double')
    z = y * 3
z.backward()
print(data.grad)  # 出力: [6, 6, 6]
'''


def test_seed_000_runs_verbatim_and_prints_6_6_6():
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(SEED_000, "seed_000", "exec"), {})
    assert "[6. 6. 6.]" in out.getvalue().splitlines()
    assert out.getvalue() == "\n[6. 6. 6.]\n<NDArray 3 @cpu(0)>\n"


# Seed 003's op (its class body verbatim; real MXNet has no `mxnet.op`: the class is
# mx.operator.CustomOp), with the Prop the seed leaves out.
op, nd = mx.operator, mx.nd


class MyCustomOp(op.CustomOp):
    def forward(self, is_train, req, in_data, out_data, aux):
        # 实现前向计算逻辑
        x = in_data[0]
        y = nd.square(x)
        self.assign(out_data[0], req[0], y)

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        # 实现反向传播逻辑
        x = in_data[0]
        dx = 2 * x * out_grad[0]
        self.assign(in_grad[0], req[0], dx)


@mx.operator.register("t_square")
class MyCustomOpProp(mx.operator.CustomOpProp):
    def __init__(self):
        super().__init__(need_top_grad=True)

    def create_operator(self, ctx, shapes, dtypes):
        return MyCustomOp()


def test_seed_003_square_op():
    x = mx.nd.array([[1, -2], [3, 0.5]])
    x.attach_grad()
    with mx.autograd.record():
        y = mx.nd.Custom(x, op_type="t_square")
        loss = (y * mx.nd.array([[1, 2], [3, 4]])).sum()
    loss.backward()
    np.testing.assert_allclose(y.asnumpy(), [[1, 4], [9, 0.25]])
    np.testing.assert_allclose(x.grad.asnumpy(), [[2, -8], [18, 4]])


def test_custom_call_is_an_ordinary_kit_node():
    x = mx.nd.array([1.0, 2.0])
    x.attach_grad()
    with mx.autograd.record():
        y = mx.nd.Custom(x, op_type="t_square")
    node = y.tensor.grad_fn
    assert (node.op, node.kind, node.frontend) == ("t_square", "custom", "MXNet-style")
    assert node.next_functions[1][0].variable is x.tensor
    nodes, _ = kit.viz.graph_data([y.tensor])
    (drawn,) = [n for n in nodes if n["kind"] == "custom"]
    assert drawn["attributes"]["frontend"] == "MXNet-style" and "t_square" in drawn["label"]
    without = mx.nd.Custom(x, op_type="t_square")  # outside record: no graph
    assert without.tensor.grad_fn is None and without.asnumpy().tolist() == [1, 4]


def test_gradcheck_through_custom_in_float64():
    def f(t):
        with mx.autograd.record():
            return mx.nd.Custom(mx.nd.NDArray(t), op_type="t_square")._t

    t = kit.tensor(np.array([0.3, -1.2, 2.0]), requires_grad=True)
    assert kit.gradcheck(f, (t,))


# MXNet's classic loss layer (example/numpy-ops/custom_softmax.py): NumPy inside, a label
# input, need_top_grad=False.
class Softmax(mx.operator.CustomOp):
    reqs = []

    def forward(self, is_train, req, in_data, out_data, aux):
        x = in_data[0].asnumpy()
        y = np.exp(x - x.max(axis=1).reshape((x.shape[0], 1)))
        y /= y.sum(axis=1).reshape((x.shape[0], 1))
        self.assign(out_data[0], req[0], mx.nd.array(y))

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        Softmax.reqs.append(list(req))
        lab = in_data[1].asnumpy().ravel().astype(np.int64)
        y = out_data[0].asnumpy()
        y[np.arange(lab.shape[0]), lab] -= 1.0
        self.assign(in_grad[0], req[0], mx.nd.array(y))


@mx.operator.register("t_softmax")
class SoftmaxProp(mx.operator.CustomOpProp):
    def __init__(self):
        super().__init__(need_top_grad=False)

    def list_arguments(self):
        return ["data", "label"]

    def list_outputs(self):
        return ["output"]

    def infer_shape(self, in_shape):
        data_shape = in_shape[0]
        label_shape = (in_shape[0][0],)
        output_shape = in_shape[0]
        return [data_shape, label_shape], [output_shape], []

    def infer_type(self, in_type):
        return in_type, [in_type[0]], []

    def create_operator(self, ctx, shapes, dtypes):
        return Softmax()


def test_classic_softmax_loss_layer_ignores_upstream_gradient():
    logits = np.array([[1.0, 2.0, 0.5], [0.3, 0.2, 2.0]])
    p = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    x = mx.nd.array(logits)
    x.attach_grad()
    label = mx.nd.array([1, 2])
    Softmax.reqs.clear()
    with mx.autograd.record():
        out = mx.nd.Custom(x, label, op_type="t_softmax")
        scaled = out * 5  # a loss layer ignores this: its backward has no out_grad dependency
    scaled.backward()
    np.testing.assert_allclose(out.asnumpy(), p, rtol=1e-6)
    np.testing.assert_allclose(x.grad.asnumpy(), p - np.eye(3)[[1, 2]], rtol=1e-5, atol=1e-7)
    assert Softmax.reqs == [["write", "null"]]  # the label needs no gradient


# A two-input, two-output op: (a * b, a + b).
class ProdSum(mx.operator.CustomOp):
    def forward(self, is_train, req, in_data, out_data, aux):
        a, b = in_data
        self.assign(out_data[0], req[0], a * b)
        self.assign(out_data[1], req[1], a + b)

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        a, b = in_data
        g_prod, g_sum = out_grad
        self.assign(in_grad[0], req[0], g_prod * b + g_sum)
        self.assign(in_grad[1], req[1], g_prod * a + g_sum)


@mx.operator.register("t_prodsum")
class ProdSumProp(mx.operator.CustomOpProp):
    def __init__(self):
        super().__init__(need_top_grad=True)

    def list_arguments(self):
        return ["a", "b"]

    def list_outputs(self):
        return ["prod", "sum"]

    def infer_shape(self, in_shape):
        return in_shape, [in_shape[0], in_shape[0]], []

    def create_operator(self, ctx, shapes, dtypes):
        return ProdSum()


def _grads(fn, *values):
    arrays = [mx.nd.array(v) for v in values]
    for a in arrays:
        a.attach_grad()
    with mx.autograd.record():
        out = fn(*arrays)
    out.backward()
    return [a.grad.asnumpy() for a in arrays]


def test_two_inputs_two_outputs_match_builtins():
    a, b = np.array([1.0, 2.0, 3.0]), np.array([4.0, -1.0, 0.5])
    prod, total = mx.nd.Custom(mx.nd.array(a), mx.nd.array(b), op_type="t_prodsum")
    assert prod.asnumpy().tolist() == [4, -2, 1.5] and total.asnumpy().tolist() == [5, 1, 3.5]
    custom = _grads(lambda x, y: (lambda p, s: (p * 2 + s * s).sum())(
        *mx.nd.Custom(x, y, op_type="t_prodsum")), a, b)
    builtin = _grads(lambda x, y: ((x * y) * 2 + (x + y) * (x + y)).sum(), a, b)
    for got, want in zip(custom, builtin, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-6)
    only_prod = _grads(lambda x, y: mx.nd.Custom(x, y, op_type="t_prodsum")[0].sum(), a, b)
    np.testing.assert_allclose(only_prod[0], b)  # the unused output's out_grad is zeros


# kwargs arrive as strings.
class Scale(mx.operator.CustomOp):
    def __init__(self, scale):
        self.scale = scale

    def forward(self, is_train, req, in_data, out_data, aux):
        self.assign(out_data[0], req[0], in_data[0] * self.scale)

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        self.assign(in_grad[0], req[0], out_grad[0] * self.scale)


@mx.operator.register("t_scale")
class ScaleProp(mx.operator.CustomOpProp):
    seen = []

    def __init__(self, scale, flag="False", shape="()"):
        super().__init__(need_top_grad=True)
        ScaleProp.seen.append((scale, flag, shape))
        self.scale = float(scale)  # NOTE: the pitfall: without float() this is the string '2.5'

    def create_operator(self, ctx, shapes, dtypes):
        return Scale(self.scale)


def test_kwargs_reach_the_prop_as_strings_and_name_is_consumed():
    ScaleProp.seen.clear()
    x = mx.nd.array([1, 2])
    y = mx.nd.Custom(x, op_type="t_scale", scale=2.5, flag=True, shape=(2, 3), name="s1")
    assert ScaleProp.seen == [("2.5", "True", "(2, 3)")]
    assert y.asnumpy().tolist() == [2.5, 5]


# req: 'write' by default, 'add' with attach_grad(grad_req='add'), 'null' without a gradient.
class RecordReq(mx.operator.CustomOp):
    seen = []

    def forward(self, is_train, req, in_data, out_data, aux):
        RecordReq.seen.append(("forward", list(req), is_train))
        self.assign(out_data[0], req[0], in_data[0] * in_data[1])

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        RecordReq.seen.append(("backward", list(req)))
        self.assign(in_grad[0], req[0], out_grad[0] * in_data[1])
        self.assign(in_grad[1], req[1], out_grad[0] * in_data[0])


@mx.operator.register("t_mul")
class RecordReqProp(mx.operator.CustomOpProp):
    def __init__(self):
        super().__init__(need_top_grad=True)

    def list_arguments(self):
        return ["lhs", "rhs"]

    def create_operator(self, ctx, shapes, dtypes):
        return RecordReq()


@pytest.mark.parametrize("grad_req,after_two", [("write", [3, 3]), ("add", [6, 6])])
def test_req_follows_grad_req(grad_req, after_two):
    RecordReq.seen.clear()
    x = mx.nd.array([1, 2])
    x.attach_grad(grad_req=grad_req)
    w = mx.nd.array([3, 3])  # no attach_grad: req 'null'
    for _ in range(2):
        with mx.autograd.record():
            y = mx.nd.Custom(x, w, op_type="t_mul")
        y.backward()
    assert x.grad.asnumpy().tolist() == after_two
    assert RecordReq.seen[0] == ("forward", ["write"], 1)
    assert RecordReq.seen[1] == ("backward", [grad_req, "null"])
    mx.nd.Custom(x, w, op_type="t_mul")
    assert RecordReq.seen[-1] == ("forward", ["write"], 0)  # is_train is 0 outside record


def test_req_is_write_for_an_intermediate_input():
    RecordReq.seen.clear()
    x = mx.nd.array([1, 2])
    x.attach_grad(grad_req="add")
    with mx.autograd.record():
        y = mx.nd.Custom(x * 1, x * 1, op_type="t_mul")
    y.backward()
    assert RecordReq.seen[-1] == ("backward", ["write", "write"])
    assert x.grad.asnumpy().tolist() == [2, 4]


# Auxiliary states: a running count updated in place by forward.
class Counting(mx.operator.CustomOp):
    def forward(self, is_train, req, in_data, out_data, aux):
        if is_train:
            aux[0][:] = aux[0] + 1
        self.assign(out_data[0], req[0], in_data[0] + aux[0])

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        self.assign(in_grad[0], req[0], out_grad[0])


@mx.operator.register("t_count")
class CountingProp(mx.operator.CustomOpProp):
    shapes = []

    def __init__(self):
        super().__init__(need_top_grad=True)

    def list_auxiliary_states(self):
        return ["count"]

    def infer_shape(self, in_shape):
        return in_shape, [in_shape[0]], [(1,)]

    def create_operator(self, ctx, shapes, dtypes):
        CountingProp.shapes.append((shapes, dtypes))
        return Counting()


def test_aux_states_are_updated_in_place_and_get_no_gradient():
    CountingProp.shapes.clear()
    x = mx.nd.array([1, 2])
    x.attach_grad()
    count = mx.nd.zeros((1,))
    with mx.autograd.record():
        y = mx.nd.Custom(x, count, op_type="t_count")
    y.backward()
    assert count.asnumpy().tolist() == [1] and y.asnumpy().tolist() == [2, 3]
    assert x.grad.asnumpy().tolist() == [1, 1]
    mx.nd.Custom(x, count, op_type="t_count")  # predict mode: no update
    assert count.asnumpy().tolist() == [1]
    assert CountingProp.shapes[0] == ([[2], [1]], [np.float32, np.float32])


# The same op in both front ends and as built-ins: y = scale * tanh(x) * w.
class TanhScaleFn(kit.Function):
    @staticmethod
    def forward(ctx, x, w, scale):
        y = kit.tanh(x)
        ctx.save_for_backward(y, w)
        ctx.scale = scale
        return y * w * scale

    @staticmethod
    def backward(ctx, g):
        y, w = ctx.saved_tensors
        return g * w * ctx.scale * (1 - y * y), g * y * ctx.scale, None


class TanhScale(mx.operator.CustomOp):
    def __init__(self, scale):
        self.scale = scale

    def forward(self, is_train, req, in_data, out_data, aux):
        x, w = in_data
        self.assign(out_data[0], req[0], mx.nd.tanh(x) * w * self.scale)

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        x, w = in_data
        y = mx.nd.tanh(x)
        self.assign(in_grad[0], req[0], out_grad[0] * w * self.scale * (1 - y * y))
        self.assign(in_grad[1], req[1], out_grad[0] * y * self.scale)


@mx.operator.register("t_tanh_scale")
class TanhScaleProp(mx.operator.CustomOpProp):
    def __init__(self, scale):
        super().__init__(need_top_grad=True)
        self.scale = float(scale)

    def list_arguments(self):
        return ["x", "w"]

    def create_operator(self, ctx, shapes, dtypes):
        return TanhScale(self.scale)


def test_both_front_ends_and_builtins_give_the_same_gradients():
    rng = np.random.default_rng(0)
    xv, wv = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    gv = rng.standard_normal((3, 4))
    custom = _grads(lambda x, w: mx.nd.Custom(x, w, op_type="t_tanh_scale", scale=1.5)
                    * mx.nd.array(gv), xv, wv)
    builtin = _grads(lambda x, w: mx.nd.tanh(x) * w * 1.5 * mx.nd.array(gv), xv, wv)
    x = kit.tensor(xv.astype(np.float32), requires_grad=True)
    w = kit.tensor(wv.astype(np.float32), requires_grad=True)
    (TanhScaleFn.apply(x, w, 1.5) * kit.tensor(gv.astype(np.float32))).sum().backward()
    for got_mx, got_fn, want in zip(custom, (x.grad, w.grad), builtin, strict=True):
        np.testing.assert_allclose(got_mx, want, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(got_fn.numpy(), want, rtol=1e-5, atol=1e-6)


def test_higher_order_gradients_through_custom():
    x = mx.nd.array([1.0, -2.0, 3.0])
    x.attach_grad()
    with mx.autograd.record():
        y = mx.nd.Custom(x, op_type="t_square") * x  # x**3
        (dx,) = mx.autograd.grad(y, [x], create_graph=True)
    np.testing.assert_allclose(dx.asnumpy(), 3 * x.asnumpy() ** 2)
    dx.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), 6 * x.asnumpy())


def test_gradgradcheck_through_custom():
    x = kit.tensor(np.array([0.5, -1.0]), requires_grad=True)
    w = kit.tensor(np.array([1.5, 0.25]), requires_grad=True)

    def g(x, w):
        with mx.autograd.record():
            return mx.nd.Custom(mx.nd.NDArray(x), mx.nd.NDArray(w), op_type="t_tanh_scale",
                                scale=2.0)._t

    assert kit.gradgradcheck(g, (x, w))
