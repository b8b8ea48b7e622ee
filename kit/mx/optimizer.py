"""`mx.optimizer`: MXNet 1.x's optimisers (SGD, Adam) and the Updater that applies them.

The maths is kit/optim/maths.py's MXNet rules (`mxnet_sgd_update`, `mxnet_adam_update`), the
same module PyTorch-style optimisers use. MXNet's semantics are kept: `rescale_grad` scales every
gradient (gluon's Trainer sets it to 1/batch_size), `wd` is added to the gradient, per-parameter
`lr_mult`/`wd_mult` come from the Parameter (gluon) or from `set_lr_mult`/`set_wd_mult`.

>>> import kit.mx as mx
>>> opt = mx.optimizer.create("sgd", learning_rate=0.5)
>>> w, g = mx.nd.array([1.0, 2.0]), mx.nd.array([1.0, 1.0])
>>> opt.update(0, w, g, opt.create_state(0, w)); w.asnumpy()
array([0.5, 1.5], dtype=float32)
"""

from __future__ import annotations

import copy
import pickle
import sys

from kit._modes import STATE
from kit.grad_mode import no_grad
from kit.optim import maths
from kit.profiler._record import as_one_op

__all__ = ["SGD", "Adam", "Optimizer", "Updater", "create", "get_updater", "register"]


class Optimizer:
    """Base class: learning rate (and an optional `lr_scheduler(num_update)`), weight decay,
    gradient rescaling and clipping, and per-index update counts."""

    opt_registry = {}

    def __init__(self, rescale_grad=1.0, param_idx2name=None, wd=0.0, clip_gradient=None,
                 learning_rate=0.01, lr_scheduler=None, sym=None, begin_num_update=0,
                 multi_precision=False, param_dict=None):
        if sym is not None:
            raise NotImplementedError(
                "Optimizer(sym=...): kit.mx has no symbolic API; give per-parameter multipliers "
                "with set_lr_mult/set_wd_mult or through gluon Parameters (lr_mult, wd_mult)"
            )
        self.rescale_grad = rescale_grad
        self.lr = learning_rate
        self.lr_scheduler = lr_scheduler
        if lr_scheduler is not None and hasattr(lr_scheduler, "base_lr"):
            lr_scheduler.base_lr = learning_rate
        self.wd = wd
        self.clip_gradient = clip_gradient
        self.multi_precision = multi_precision
        self.begin_num_update = begin_num_update
        self.num_update = begin_num_update
        self._index_update_count = {}
        self.lr_mult = {}
        self.wd_mult = {}
        self.idx2name = dict(param_idx2name or {})
        self.param_dict = dict(param_dict or {})

    @staticmethod
    def register(klass):
        """Register an Optimizer subclass under its lower-case name (for `create`)."""
        Optimizer.opt_registry[klass.__name__.lower()] = klass
        return klass

    @staticmethod
    def create_optimizer(name, **kwargs):
        key = name.lower()
        if key not in Optimizer.opt_registry:
            raise ValueError(
                f"Cannot find optimizer {name}. kit.mx has: "
                f"{', '.join(sorted(Optimizer.opt_registry))}"
            )
        return Optimizer.opt_registry[key](**kwargs)

    @property
    def learning_rate(self):
        if self.lr_scheduler is not None:
            return self.lr_scheduler(self.num_update)
        return self.lr

    def set_learning_rate(self, lr):
        if self.lr_scheduler is not None:
            raise UserWarning(
                "LRScheduler of the optimizer has already been defined. Note that "
                "set_learning_rate can mutate the value of the learning rate of the optimizer "
                "only when the LRScheduler of the optimizer is undefined."
            )
        self.lr = lr

    def set_lr_mult(self, args_lr_mult):
        """Multipliers of the learning rate by index or parameter name."""
        self.lr_mult = dict(args_lr_mult)

    def set_wd_mult(self, args_wd_mult):
        """Multipliers of the weight decay by index or parameter name."""
        self.wd_mult = dict(args_wd_mult)

    def _update_count(self, index):
        count = self._index_update_count.get(index, self.begin_num_update) + 1
        self._index_update_count[index] = count
        if count > self.num_update:
            self.num_update = count
        return count

    def _count_updates(self, indices):
        """Count one update of each index, in turn, and return their learning rates, each read
        right after its own count, as one update per index reads them (an lr_scheduler reads
        num_update, which an index later in the list may still raise)."""
        lrs = []
        for index in indices:
            self._update_count(index)
            lrs.append(self._get_lr(index))
        return lrs

    def _mult(self, index, attr, table):
        param = self.param_dict.get(index)
        if param is not None:
            return getattr(param, attr)
        if index in table:
            return table[index]
        if index in self.idx2name:
            return table.get(self.idx2name[index], 1.0)
        return 1.0

    def _get_lr(self, index):
        lr = self.lr if self.lr_scheduler is None else self.lr_scheduler(self.num_update)
        return lr * self._mult(index, "lr_mult", self.lr_mult)

    def _get_wd(self, index):
        return self.wd * self._mult(index, "wd_mult", self.wd_mult)

    def create_state(self, index, weight):
        """The optimiser state of one weight (None when it needs none)."""
        return None

    def update(self, index, weight, grad, state):
        """Update `weight` (an NDArray, in place) from `grad`."""
        raise NotImplementedError(f"{type(self).__name__} must define update()")

    def __repr__(self):
        return f"{type(self).__name__}(learning_rate={self.learning_rate}, wd={self.wd})"


register = Optimizer.register


def create(name, **kwargs):
    """`mx.optimizer.create('sgd', learning_rate=0.1)`: an optimiser by registered name."""
    return Optimizer.create_optimizer(name, **kwargs)


@register
class SGD(Optimizer):
    """SGD, with MXNet's momentum form `mom = momentum * mom - lr * (g + wd * w); w += mom`.

    As MXNet 1.x's, `update` also takes lists of indices, weights, gradients and states
    (`aggregate_num`): the Updater passes every weight of a Trainer step in one call, and the
    arithmetic runs in one loop (kit/optim/maths.py's `mxnet_sgd`, MXNet's multi_sgd_update).
    """

    aggregate_num = sys.maxsize  # all the weights of a step in one call

    def __init__(self, momentum=0.0, lazy_update=True, **kwargs):
        super().__init__(**kwargs)
        self.momentum = momentum
        self.lazy_update = lazy_update  # NOTE: only changes sparse gradients, which kit lacks

    def create_state(self, index, weight):
        return {}

    def update(self, index, weight, grad, state):
        if not isinstance(index, (list, tuple)):
            index, weight, grad, state = (index,), (weight,), (grad,), (state,)
        lrs = self._count_updates(index)
        wds = [self._get_wd(i) for i in index] if self.wd else None
        weights, grads = [w._t for w in weight], [g._t for g in grad]
        recorder = STATE.profiler
        if recorder is None:
            maths.mxnet_sgd(weights, grads, state, lrs, self.momentum, wds, self.rescale_grad,
                            self.clip_gradient)
            return
        # one operator per weight in a profile, as MXNet's (kit updates the arrays, with no op)
        name = "sgd_mom_update" if self.momentum else "sgd_update"
        for k, (w, g) in enumerate(zip(weights, grads, strict=True)):
            as_one_op(recorder, name, (w, g), maths.mxnet_sgd_update, w, g, state[k], lrs[k],
                      self.momentum, 0.0 if wds is None else wds[k], self.rescale_grad,
                      self.clip_gradient)


@register
class Adam(Optimizer):
    """Adam as MXNet computes it (bias corrections folded into the step size)."""

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8,
                 lazy_update=True, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta1 = beta1
        self.beta2 = beta2
        self.epsilon = epsilon
        self.lazy_update = lazy_update

    def create_state(self, index, weight):
        return {}

    def update(self, index, weight, grad, state):
        t = self._update_count(index)
        args = (weight._t, grad._t, state, self._get_lr(index), t, self.beta1, self.beta2,
                self.epsilon, self._get_wd(index), self.rescale_grad, self.clip_gradient)
        recorder = STATE.profiler
        if recorder is None:
            maths.mxnet_adam_update(*args)
        else:
            as_one_op(recorder, "adam_update", (weight._t, grad._t), maths.mxnet_adam_update,
                      *args)


class Updater:
    """`updater(index, grad, weight)`: creates each index's state on first use, then updates.

    As MXNet 1.x's, it also takes lists (a Trainer passes all its weights at once): an
    optimiser with `aggregate_num` (SGD) gets them in `update` calls of up to that many and
    updates the arrays itself; any other one gets one call per index, in order, under no_grad
    (for an optimiser written with NDArray or Tensor ops: one grad mode for all its ops).
    """

    def __init__(self, optimizer):
        self.optimizer = optimizer
        self.states = {}

    def __call__(self, index, grad, weight):
        if not isinstance(index, (list, tuple)):
            index, grad, weight = (index,), (grad,), (weight,)
        optimizer, states = self.optimizer, self.states
        for i, w in zip(index, weight, strict=True):
            if i not in states:
                states[i] = optimizer.create_state(i, w)
        size = getattr(optimizer, "aggregate_num", 0)
        if size > 1 and len(index) > 1:
            for start in range(0, len(index), size):
                part = index[start:start + size]
                optimizer.update(list(part), list(weight[start:start + size]),
                                 list(grad[start:start + size]), [states[i] for i in part])
            return
        with no_grad():
            for i, g, w in zip(index, grad, weight, strict=True):
                optimizer.update(i, w, g, states[i])

    def get_states(self, dump_optimizer=False):
        """The states (and update counts), pickled; with `dump_optimizer`, the optimiser too."""
        states = {i: _host(s) for i, s in self.states.items()}
        counts = dict(self.optimizer._index_update_count)
        if not dump_optimizer:
            return pickle.dumps((states, counts))
        optimizer = copy.copy(self.optimizer)
        optimizer.param_dict = {}  # the Parameters stay with the model, not in the checkpoint
        return pickle.dumps((states, counts, optimizer))

    def set_states(self, blob):
        """Restore what get_states returned (onto each weight's device when next used)."""
        payload = pickle.loads(blob)  # noqa: S301 - the caller's own checkpoint
        if len(payload) == 3:
            payload[2].param_dict = self.optimizer.param_dict
            self.optimizer = payload[2]
        states, counts = payload[0], payload[1]
        self.states = {i: _device(s) for i, s in states.items()}
        self.optimizer._index_update_count = dict(counts)
        self.optimizer.num_update = max(counts.values(), default=self.optimizer.num_update)


def get_updater(optimizer):
    """An Updater for `optimizer`."""
    return Updater(optimizer)


def _host(state):
    if state is None:
        return None
    return {key: value.numpy() for key, value in state.items()}


def _device(state):
    from kit._creation import tensor

    if state is None:
        return None
    return {key: tensor(value) for key, value in state.items()}
