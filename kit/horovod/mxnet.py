"""`import kit.horovod.mxnet as hvd` (also `from kit.mx.contrib import horovod`): Horovod's MXNet
API over kit.distributed (MPI), for kit.mx NDArrays, mx.optimizer optimizers and gluon Trainers.

The tutorial's snippet runs with the import changed:

    from kit.mx.contrib import horovod
    horovod.init()
    optimizer = mx.optimizer.SGD(learning_rate=0.01)
    optimizer = horovod.DistributedOptimizer(optimizer)

>>> import kit.mx as mx
>>> import kit.horovod.mxnet as hvd
>>> hvd.init(); hvd.allreduce(mx.nd.array([1.0, 2.0])).asnumpy()
array([1., 2.], dtype=float32)
"""

from __future__ import annotations

import warnings

from kit.distributed import (
    collectives,
    init,
    is_initialized,
    local_rank,
    local_size,
    rank,
    size,
)
from kit.mx.ndarray import NDArray

try:  # mx.optimizer and gluon come with kit.mx's gluon layer; without it the wrappers say so
    from kit.mx import optimizer as _mx_optimizer
except ImportError:
    _mx_optimizer = None
try:
    from kit.mx import gluon as _gluon
except ImportError:
    _gluon = None

__all__ = [
    "DistributedOptimizer", "DistributedTrainer", "allgather", "allreduce", "allreduce_",
    "broadcast", "broadcast_", "broadcast_parameters", "grouped_allreduce_", "init",
    "is_initialized", "local_rank", "local_size", "rank", "size",
]


def _tensor(array, what):
    if not isinstance(array, NDArray):
        raise TypeError(f"{what}: expected an mx.nd.NDArray, got {type(array).__name__}")
    return array.tensor


def _op(average):
    return collectives.Average if average else collectives.Sum


def allreduce(tensor, average=True, name=None):
    """A new NDArray: `tensor` averaged (or, average=False, summed) over every rank."""
    return NDArray(collectives.allreduce(_tensor(tensor, "allreduce"), _op(average), name))


def allreduce_(tensor, average=True, name=None):
    """Allreduce in place; returns `tensor`."""
    collectives.allreduce_(_tensor(tensor, "allreduce_"), _op(average), name)
    return tensor


def grouped_allreduce_(tensors, average=True, name=None):
    """Allreduce a list of NDArrays in place, fused into one buffer per dtype."""
    collectives.grouped_allreduce_([_tensor(t, "grouped_allreduce_") for t in tensors],
                                   _op(average), name)
    return tensors


def allgather(tensor, name=None):
    """Every rank's NDArray, concatenated along axis 0."""
    return NDArray(collectives.allgather(_tensor(tensor, "allgather"), name))


def broadcast(tensor, root_rank, name=None):
    """A new NDArray with `root_rank`'s value."""
    return NDArray(collectives.broadcast(_tensor(tensor, "broadcast"), root_rank, name))


def broadcast_(tensor, root_rank, name=None):
    """Broadcast in place; returns `tensor`."""
    collectives.broadcast_(_tensor(tensor, "broadcast_"), root_rank, name)
    return tensor


def broadcast_parameters(params, root_rank=0):
    """Give every rank `root_rank`'s parameters, in place: a dict of NDArrays or of gluon
    Parameters (`net.collect_params()`); shapes and names are checked across ranks first."""
    if not isinstance(params, dict) and not hasattr(params, "items"):
        raise ValueError(f"invalid params of type: {type(params)}; expected a dict or "
                         f"net.collect_params()")
    collectives.broadcast_parameters(dict(params.items()), root_rank)


_OptimizerBase = object if _mx_optimizer is None else _mx_optimizer.Optimizer


class DistributedOptimizer(_OptimizerBase):
    """Wraps an MXNet-style optimizer (an object with `update(index, weight, grad, state)`):
    each update first averages `grad` over every rank, in place.

    NOTE: Horovod folds the 1/size into the optimizer's `rescale_grad` and sums; a gluon
    Trainer overwrites `rescale_grad` at every step, so kit averages in the allreduce instead
    and leaves `rescale_grad` to its owner.
    """

    def __init__(self, optimizer):
        if not callable(getattr(optimizer, "update", None)):
            raise TypeError(
                f"DistributedOptimizer wraps an MXNet-style optimizer such as "
                f"mx.optimizer.SGD(learning_rate=0.01): an object with update(index, weight, "
                f"grad, state); got {type(optimizer).__name__}"
            )
        object.__setattr__(self, "_optimizer", optimizer)

    def __getattr__(self, item):
        if item == "_optimizer":  # copy/pickle look before __init__ ran
            raise AttributeError(item)
        return getattr(self._optimizer, item)

    def __setattr__(self, item, value):
        setattr(self._optimizer, item, value)  # e.g. a Trainer's param_dict, rescale_grad

    def create_state(self, index, weight):
        return self._optimizer.create_state(index, weight)

    def create_state_multi_precision(self, index, weight):
        return self._optimizer.create_state_multi_precision(index, weight)

    def _do_allreduce(self, index, grad):
        if isinstance(index, list | tuple):
            grouped_allreduce_(list(grad), name=f"{index[0]}:{index[-1]}")
        else:
            allreduce_(grad, name=str(index))

    def update(self, index, weight, grad, state):
        self._do_allreduce(index, grad)
        self._optimizer.update(index, weight, grad, state)

    def update_multi_precision(self, index, weight, grad, state):
        self._do_allreduce(index, grad)
        self._optimizer.update_multi_precision(index, weight, grad, state)

    def set_learning_rate(self, lr):
        self._optimizer.set_learning_rate(lr)

    def set_lr_mult(self, args_lr_mult):
        self._optimizer.set_lr_mult(args_lr_mult)

    def set_wd_mult(self, args_wd_mult):
        self._optimizer.set_wd_mult(args_wd_mult)


class DistributedTrainerMixin:
    """What DistributedTrainer adds to a gluon-style Trainer (one whose `_params` are
    Parameters with `grad_req` and `grad()`, and whose `step(batch_size)` updates them): step()
    first averages every gradient over the ranks, fused into one buffer per dtype.
    `allreduce_grads()` does it early (to clip gradients before `update`)."""

    def __init__(self, params, optimizer, optimizer_params=None, prefix=None):
        if isinstance(optimizer, DistributedOptimizer):
            optimizer = optimizer._optimizer
            warnings.warn("DistributedTrainer does not take DistributedOptimizer as its "
                          "optimizer. We have unwrapped it for you.", stacklevel=2)
        if isinstance(params, list | tuple):
            params = sorted(params, key=lambda p: p.name)  # one order on every rank
        super().__init__(params, optimizer, optimizer_params=optimizer_params, kvstore=None)
        self._prefix = prefix or ""
        self._grads_reduced = False

    def _allreduce_grads(self):
        grads = [p.grad() for p in self._params if p.grad_req != "null"]
        if grads:
            grouped_allreduce_(grads, name=f"{self._prefix}gradients")

    def allreduce_grads(self):
        """Average the gradients over every rank now; the next step() does not again."""
        self._allreduce_grads()
        self._grads_reduced = True

    def step(self, batch_size, ignore_stale_grad=False):
        if not self._grads_reduced:
            self._allreduce_grads()
        self._grads_reduced = False
        super().step(batch_size, ignore_stale_grad)


if _gluon is not None:
    class DistributedTrainer(DistributedTrainerMixin, _gluon.Trainer):
        """A gluon Trainer whose step averages the gradients over every rank first."""
else:
    def __getattr__(name):
        if name == "DistributedTrainer":
            raise ImportError(
                "kit.horovod.mxnet.DistributedTrainer subclasses kit.mx.gluon.Trainer, and this "
                "kit has no kit.mx.gluon yet. Fix: use DistributedOptimizer around an "
                "MXNet-style optimizer, or update kit"
            )
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
