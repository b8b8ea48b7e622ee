"""mx.autograd.Function as MXNet 1.x has it: an instance called once, forward with recording
paused, backward returning one NDArray per input; plus what kit adds (clear errors, second
derivatives when backward uses mx.nd ops)."""

import numpy as np
import pytest

import kit
import kit.mx as mx


class DivMul(mx.autograd.Function):
    """Two inputs, two outputs: x / y and x * y."""

    def forward(self, x, y):
        self.save_for_backward(x, y)
        return x / y, x * y

    def backward(self, dm, dn):
        x, y = self.saved_tensors
        return dm / y + dn * y, dn * x - dm * x / y / y


def _variables(*values):
    arrays = [mx.nd.array(v) for v in values]
    for a in arrays:
        a.attach_grad()
    return arrays


def test_two_inputs_two_outputs_match_the_same_expression_built_from_nd_ops():
    rng = np.random.default_rng(0)
    xs, ys = rng.uniform(0.5, 1.5, 10), rng.uniform(0.5, 1.5, 10)
    x, y = _variables(xs, ys)
    with mx.autograd.record():
        m, n = DivMul()(x, y)
        mx.autograd.backward([m, n])
    dx, dy = x.grad.asnumpy(), y.grad.asnumpy()
    x2, y2 = _variables(xs, ys)
    with mx.autograd.record():
        mx.autograd.backward([x2 / y2, x2 * y2])
    np.testing.assert_allclose(dx, x2.grad.asnumpy(), rtol=1e-5)
    np.testing.assert_allclose(dy, y2.grad.asnumpy(), rtol=1e-5)
    np.testing.assert_allclose(m.asnumpy(), (xs / ys).astype(np.float32), rtol=1e-6)


def test_chain_of_instances_on_an_array_without_gradient():
    class AddOne(mx.autograd.Function):
        def forward(self, x):
            return x + 1

        def backward(self, dy):
            return dy

    with mx.autograd.record():
        x = mx.nd.zeros((3, 4))
        for _ in range(5):
            x = AddOne()(x)
        x.wait_to_read()
    np.testing.assert_array_equal(x.asnumpy(), np.full((3, 4), 5.0))


def test_gradient_of_a_function_inside_a_larger_graph_with_grad_req_add():
    class Cube(mx.autograd.Function):
        def forward(self, x):
            self.save_for_backward(x)
            return x * x * x

        def backward(self, dy):
            (x,) = self.saved_tensors
            return 3 * x * x * dy

    x = mx.nd.array([1.0, -2.0, 0.5])
    x.attach_grad(grad_req="add")
    for _ in range(2):
        with mx.autograd.record():
            z = (Cube()(x) * 2).sum()
        z.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), 2 * 2 * 3 * x.asnumpy() ** 2, rtol=1e-6)


def test_forward_runs_with_recording_paused_and_outside_record_returns_plain_outputs():
    seen = []

    class Probe(mx.autograd.Function):
        def forward(self, x):
            seen.append(mx.autograd.is_recording())
            return x * 2

        def backward(self, dy):
            return dy * 2

    (x,) = _variables([1.0])
    with mx.autograd.record():
        Probe()(x)
    y = Probe()(x)
    assert seen == [False, False]
    with pytest.raises(mx.MXNetError, match="not in a computational graph"):
        y.backward()


def test_an_unused_output_gets_a_zero_gradient():
    x, y = _variables([2.0], [4.0])
    with mx.autograd.record():
        m, _ = DivMul()(x, y)
    m.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), [0.25])
    np.testing.assert_allclose(y.grad.asnumpy(), [-0.125])


def test_the_graph_node_is_named_after_the_class():
    x, y = _variables([2.0], [4.0])
    with mx.autograd.record():
        m, _ = DivMul()(x, y)
    assert m.tensor.grad_fn.name() == "DivMulBackward"
    assert m.tensor.grad_fn.frontend == "MXNet-style"


def test_second_derivative_through_a_backward_written_with_nd_ops():
    class Cube(mx.autograd.Function):
        def forward(self, x):
            self.save_for_backward(x)
            return x * x * x

        def backward(self, dy):
            (x,) = self.saved_tensors
            return 3 * x * x * dy

    (x,) = _variables([3.0])
    with mx.autograd.record():
        y = Cube()(x)
        dx = mx.autograd.grad(y, x, create_graph=True)
    dx.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), [18.0])  # d2/dx2 x^3 = 6x


def test_second_derivative_through_a_numpy_backward_is_refused():
    class NumpySquare(mx.autograd.Function):
        def forward(self, x):
            self.save_for_backward(x)
            return x * x

        def backward(self, dy):
            (x,) = self.saved_tensors
            return mx.nd.array(2 * x.asnumpy() * dy.asnumpy())

    (x,) = _variables([3.0])
    with mx.autograd.record():
        y = NumpySquare()(x)
        dx = mx.autograd.grad(y, x, create_graph=True)
    with pytest.raises(RuntimeError, match="NumpySquare.backward.*cannot be differentiated again"):
        dx.backward()


def test_gradcheck_through_the_kit_tensor():
    def through(t):
        x = mx.nd.NDArray(t)
        with mx.autograd.record():
            m, n = DivMul()(x, x * 0 + 2)
        return (m + n).tensor

    t = kit.tensor(np.array([0.3, 1.7, -0.4]), requires_grad=True)
    with mx.autograd.record():
        assert kit.gradcheck(through, (t,))


# --- misuse ------------------------------------------------------------------------------
def test_an_instance_can_be_called_only_once():
    f = DivMul()
    x, y = _variables([1.0], [2.0])
    f(x, y)
    with pytest.raises(AssertionError, match="only be called once.*DivMul\\(\\)\\(x\\)") as info:
        f(x, y)
    assert isinstance(info.value, mx.MXNetError)


@pytest.mark.parametrize("returned,match", [
    (lambda dm, dn: dm, "expecting 2, got 1"),
    (lambda dm, dn: (dm, dn.asnumpy()), "must return one gradient per forward input"),
    (lambda dm, dn: (dm, mx.nd.zeros((5,))), r"gradient 1 has shape \(5,\).*\(1,\)"),
])
def test_backward_returning_the_wrong_gradients(returned, match):
    class Wrong(DivMul):
        def backward(self, dm, dn):
            return returned(dm, dn)

    x, y = _variables([1.0], [2.0])
    with mx.autograd.record():
        m, n = Wrong()(x, y)
    with pytest.raises(mx.MXNetError, match=f"Wrong.backward.*{match}"):
        mx.autograd.backward([m, n])


def test_forward_returning_numpy_is_refused():
    class Bad(mx.autograd.Function):
        def forward(self, x):
            return x.asnumpy()

    with pytest.raises(TypeError, match="Bad.forward: must return its outputs as NDArrays"):
        Bad()(mx.nd.array([1.0]))


def test_error_inside_backward_keeps_its_type_and_is_an_mxnet_error():
    class Bad(DivMul):
        def backward(self, dm, dn):
            raise ZeroDivisionError("in the user's backward")

    x, y = _variables([1.0], [2.0])
    with mx.autograd.record():
        m, _ = Bad()(x, y)
    with pytest.raises(ZeroDivisionError, match="Bad.backward.*in the user's backward") as info:
        m.backward()
    assert isinstance(info.value, mx.MXNetError)


def test_missing_super_init_and_non_ndarray_inputs():
    class NoInit(DivMul):
        def __init__(self):
            pass

    with pytest.raises(TypeError, match=r"super\(\).__init__\(\)"):
        NoInit()(mx.nd.array([1.0]), mx.nd.array([1.0]))
    with pytest.raises(TypeError, match="input 1 is a list"):
        DivMul()(mx.nd.array([1.0]), [1.0])
    with pytest.raises(NotImplementedError, match="must define forward"):
        mx.autograd.Function()(mx.nd.array([1.0]))
