"""The smallest real MXNet-style optimizer and gluon-style Trainer, on kit.mx NDArrays, for
testing kit.horovod.mxnet before kit.mx.optimizer and gluon exist on this branch.

They follow MXNet 1.x's API: `SGD.update(index, weight, grad, state)` scales the gradient by
`rescale_grad` and applies momentum; `Trainer.step(batch_size)` sets `rescale_grad` to
1 / batch_size and updates every Parameter whose grad_req is not 'null'.
"""

import kit.mx as mx


class SGD:
    """mx.optimizer.SGD's rule: mom = momentum * mom - lr * rescale_grad * grad; w += mom."""

    def __init__(self, learning_rate=0.01, momentum=0.0, rescale_grad=1.0):
        self.learning_rate, self.momentum, self.rescale_grad = learning_rate, momentum, rescale_grad

    def create_state(self, index, weight):
        return mx.nd.zeros(weight.shape, dtype=weight.dtype)

    def update(self, index, weight, grad, state):
        state[:] = self.momentum * state - self.learning_rate * self.rescale_grad * grad
        weight[:] = weight + state

    def update_multi_precision(self, index, weight, grad, state):
        self.update(index, weight, grad, state)


class Parameter:
    """A gluon-style Parameter: a name, grad_req, data() and grad()."""

    def __init__(self, name, value):
        self.name, self.grad_req = name, "write"
        self._data = mx.nd.array(value, dtype=value.dtype)
        self._data.attach_grad()

    def data(self):
        return self._data

    def grad(self):
        return self._data.grad


class Trainer:
    """A gluon-style Trainer(params, optimizer, optimizer_params, kvstore)."""

    def __init__(self, params, optimizer, optimizer_params=None, kvstore="device"):
        self._params = list(params.values()) if isinstance(params, dict) else list(params)
        self._optimizer = optimizer
        self._states = {}

    def step(self, batch_size, ignore_stale_grad=False):
        self._optimizer.rescale_grad = 1.0 / batch_size
        for i, param in enumerate(self._params):
            if param.grad_req == "null":
                continue
            if i not in self._states:
                self._states[i] = self._optimizer.create_state(i, param.data())
            self._optimizer.update(i, param.data(), param.grad(), self._states[i])
