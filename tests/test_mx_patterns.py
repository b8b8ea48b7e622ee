"""MXNet 1.x usage patterns end to end: a small network built from mx.nd operators, a CustomOp
loss layer (MXNet's classic NumPy softmax) and an mx.autograd.Function inside it, trained with
the `param[:] -= lr * param.grad` idiom, its parameters saved with mx.nd.save and loaded back."""

import numpy as np
import pytest
from test_mx_custom_op import SoftmaxProp  # noqa: F401 - registers the classic "t_softmax" op

import kit.mx as mx


class ReLU(mx.autograd.Function):
    """A hidden activation written as MXNet 1.x's autograd.Function."""

    def forward(self, x):
        y = mx.nd.maximum(x, 0)
        self.save_for_backward(y)
        return y

    def backward(self, dy):
        (y,) = self.saved_tensors
        return dy * (y > 0)


def _blobs(n=128):
    mx.random.seed(5)
    label = mx.nd.random.randint(0, 2, shape=(n,)).astype("float32")
    centers = mx.nd.array([[-1.5, 0.0], [1.5, 0.5]])
    x = centers[label] + mx.nd.random.normal(0, 0.6, shape=(n, 2))
    return x, label


def _params():
    mx.random.seed(9)
    params = {
        "fc1_weight": mx.nd.random.normal(0, 0.5, shape=(16, 2)), "fc1_bias": mx.nd.zeros((16,)),
        "fc2_weight": mx.nd.random.normal(0, 0.5, shape=(2, 16)), "fc2_bias": mx.nd.zeros((2,)),
    }
    for p in params.values():
        p.attach_grad()
    return params


def _logits(params, x, activation):
    h = mx.nd.FullyConnected(x, params["fc1_weight"], params["fc1_bias"], num_hidden=16)
    h = activation(h)
    return mx.nd.FullyConnected(h, params["fc2_weight"], params["fc2_bias"], num_hidden=2)


ACTIVATIONS = {
    "Activation": lambda h: mx.nd.Activation(h, act_type="relu"),
    "autograd.Function": lambda h: ReLU()(h),
}


@pytest.mark.parametrize("activation", sorted(ACTIVATIONS))
def test_custom_loss_layer_trains_saves_and_loads(activation, tmp_path):
    act = ACTIVATIONS[activation]
    x, label = _blobs()
    params = _params()
    for _ in range(60):
        with mx.autograd.record():
            prob = mx.nd.Custom(_logits(params, x, act), label, op_type="t_softmax")
        prob.backward()
        for p in params.values():
            p[:] -= 0.5 / x.shape[0] * p.grad
    predicted = mx.nd.argmax(prob, axis=1)
    assert (predicted == label).mean().asscalar() > 0.9

    mx.nd.save(str(tmp_path / "mlp.params"), params)
    loaded = mx.nd.load(str(tmp_path / "mlp.params"))
    assert sorted(loaded) == sorted(params)
    trained = mx.nd.softmax(_logits(params, x, act))  # after the last update
    again = mx.nd.softmax(_logits(loaded, x, act))
    np.testing.assert_array_equal(again.asnumpy(), trained.asnumpy())


def test_the_custom_loss_layer_and_softmax_output_give_the_same_gradients():
    x, label = _blobs(16)
    grads = []
    for loss in (lambda z: mx.nd.Custom(z, label, op_type="t_softmax"),
                 lambda z: mx.nd.SoftmaxOutput(z, label)):
        params = _params()
        with mx.autograd.record():
            out = loss(_logits(params, x, ACTIVATIONS["Activation"]))
        out.backward()
        grads.append({k: p.grad.asnumpy() for k, p in params.items()})
    for k in grads[0]:
        np.testing.assert_allclose(grads[0][k], grads[1][k], rtol=1e-4, atol=1e-6)


def test_dropout_in_training_only_and_the_seed_reproduces_a_run():
    x, label = _blobs(32)

    def run_once():
        params = _params()
        mx.random.seed(3)
        with mx.autograd.record():
            h = mx.nd.Dropout(mx.nd.FullyConnected(x, params["fc1_weight"], params["fc1_bias"],
                                                   num_hidden=16), p=0.5)
            out = mx.nd.SoftmaxOutput(mx.nd.FullyConnected(h, params["fc2_weight"],
                                                           params["fc2_bias"], num_hidden=2),
                                      label, normalization="batch")
        out.backward()
        return params["fc1_weight"].grad.asnumpy()

    np.testing.assert_array_equal(run_once(), run_once())
    params = _params()
    predict = mx.nd.Dropout(x, p=0.5)  # outside record(): predict mode, the identity
    np.testing.assert_array_equal(predict.asnumpy(), x.asnumpy())
    assert params["fc1_weight"].grad.asnumpy().sum() == 0
