"""gluon `Trainer`: applies an mx.optimizer to a set of Parameters, as MXNet 1.x's.

`step(batch_size)` sets the optimiser's `rescale_grad` to `scale / batch_size` (so gradients of
a loss summed over the batch become averages) and updates every Parameter whose grad_req is not
'null', in place: references to `param.data()` stay valid.

>>> import kit.mx as mx
>>> p = mx.gluon.Parameter("w", shape=(1,), init=mx.init.One()); p.initialize()
>>> trainer = mx.gluon.Trainer([p], "sgd", {"learning_rate": 0.5})
>>> with mx.autograd.record():
...     y = 4 * p.data()
>>> y.backward(); trainer.step(2); p.data().asnumpy()  # 1 - 0.5 * 4 / 2
array([0.], dtype=float32)
"""

from __future__ import annotations

from kit.mx import optimizer as opt
from kit.mx.gluon.parameter import Parameter
from kit.mx.gluon.parameter_dict import ParameterDict


class Trainer:
    """`Trainer(params, 'sgd' | 'adam' | Optimizer, {'learning_rate': ..., ...})`."""

    def __init__(self, params, optimizer, optimizer_params=None, kvstore="device",
                 compression_params=None, update_on_kvstore=None):
        if isinstance(params, (dict, ParameterDict)):
            params = list(params.values())
        if not isinstance(params, (list, tuple)):
            raise ValueError(
                f"First argument must be a list or dict of Parameters, got {type(params)}. Fix: "
                f"Trainer(net.collect_params(), ...)"
            )
        self._params = []
        seen = set()
        for param in params:
            if not isinstance(param, Parameter):
                raise ValueError(
                    f"First argument must be a list or dict of Parameters, got list of "
                    f"{type(param)}."
                )
            if id(param) not in seen:
                seen.add(id(param))
                self._params.append(param)
        if compression_params is not None:
            raise NotImplementedError(
                "Trainer(compression_params=...): kit trains on one device, with nothing to "
                "compress; drop the argument"
            )
        optimizer_params = dict(optimizer_params or {})
        self._scale = optimizer_params.get("rescale_grad", 1.0)
        param_dict = dict(enumerate(self._params))
        if isinstance(optimizer, opt.Optimizer):
            if optimizer_params:
                raise ValueError(
                    "optimizer_params must be None if optimizer is an instance of Optimizer "
                    "instead of str"
                )
            optimizer.param_dict = param_dict
            self._optimizer = optimizer
        else:
            self._optimizer = opt.create(optimizer, param_dict=param_dict, **optimizer_params)
        self._updater = opt.get_updater(self._optimizer)
        self._kvstore = kvstore

    @property
    def optimizer(self):
        return self._optimizer

    @property
    def learning_rate(self):
        return self._optimizer.learning_rate

    def set_learning_rate(self, lr):
        """Set the learning rate of the optimiser (without an lr_scheduler)."""
        self._optimizer.set_learning_rate(lr)

    def step(self, batch_size, ignore_stale_grad=False):
        """One update of every Parameter, with gradients scaled by 1 / batch_size.

        As MXNet, a Parameter whose gradient no backward wrote since the last step is an error
        (UserWarning, raised before anything is updated); with ignore_stale_grad=True such
        Parameters are skipped instead.
        """
        self._optimizer.rescale_grad = self._scale / batch_size
        self._update(ignore_stale_grad)

    def allreduce_grads(self):
        """Sum gradients across devices: with one copy of each Parameter, nothing to do."""

    def update(self, batch_size, ignore_stale_grad=False):
        """The update half of step(), for use after allreduce_grads()."""
        self.step(batch_size, ignore_stale_grad)

    def _update(self, ignore_stale_grad=False):
        indices, grads, weights = [], [], []
        for i, param in enumerate(self._params):
            if param._grad_req == "null":
                continue
            weight = param._var if param._var is not None else param.data()
            slot = weight._slot
            if slot.fresh:
                indices.append(i)
                grads.append(slot.grad)
                weights.append(weight)
            elif not ignore_stale_grad:
                raise UserWarning(
                    f"Gradient of Parameter `{param.name}` on context {weight.context} has not "
                    f"been updated by backward since last `step`. This could mean a bug in your "
                    f"model that made it only use a subset of the Parameters (Blocks) for this "
                    f"iteration. If you are intentionally only using a subset, call step with "
                    f"ignore_stale_grad=True to suppress this warning and skip updating of "
                    f"Parameters with stale gradient"
                )
        if not indices:
            return
        # NOTE: one Updater call for the step, with lists (as MXNet 1.x's Trainer): SGD then
        # updates every weight in one loop, and no grad mode is entered for it (the Updater
        # runs any other optimizer under no_grad)
        self._updater(indices, grads, weights)
        for weight in weights:
            weight._slot.fresh = False

    def save_states(self, fname):
        """Write the optimiser's states (momenta, Adam moments, update counts) to `fname`."""
        with open(fname, "wb") as f:
            f.write(self._updater.get_states(dump_optimizer=True))

    def load_states(self, fname):
        """Restore the states written by save_states."""
        with open(fname, "rb") as f:
            self._updater.set_states(f.read())
        self._optimizer = self._updater.optimizer
