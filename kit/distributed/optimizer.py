"""`DistributedOptimizer`: a kit.torch.optim optimizer whose step first averages the gradients
over every rank (hvd.DistributedOptimizer).

The wrapped optimizer keeps its class (a DistributedOptimizer around SGD is an SGD) and shares
its param_groups and state with the original. Reduction starts during backward, from gradient
hooks, in fusion buffers (see kit.distributed.fusion); `step()` waits for it.

>>> import kit, kit.distributed as dist
>>> from kit import nn, optim
>>> dist.init()
>>> model = nn.Linear(2, 1)
>>> opt = dist.DistributedOptimizer(optim.SGD(model.parameters(), lr=0.1),
...                                 named_parameters=model.named_parameters())
>>> isinstance(opt, optim.SGD)
True
"""

from __future__ import annotations

from kit.distributed.collectives import Average
from kit.distributed.fusion import GradientReducer
from kit.grad_mode import enable_grad


class _Distributed:
    """The methods a DistributedOptimizer adds to the optimizer's own class."""

    def synchronize(self):
        """Finish the gradient reduction now (e.g. to clip gradients before step()); the next
        step() then does not reduce again."""
        self._reducer.synchronize()
        self._synchronized = True

    def step(self, closure=None):
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()  # its backward starts the reduction; step waits below
        if not self._synchronized:
            self._reducer.synchronize()
        self._synchronized = False
        super().step()
        return loss


def DistributedOptimizer(optimizer, named_parameters=None, op=Average,
                         backward_passes_per_step=1, fusion_threshold_bytes=None):
    """Wrap `optimizer` so that step() applies gradients averaged over every rank.

    named_parameters: `model.named_parameters()`; names appear in error messages. Without it the
    parameters are named by position. op: Average (the default) or Sum. backward_passes_per_step:
    backward calls accumulated locally before one reduction. fusion_threshold_bytes: the size of
    a fusion buffer (default kit.distributed.settings.fusion_threshold_bytes).
    """
    params = [p for group in optimizer.param_groups for p in group["params"]]
    names = _names(params, named_parameters)
    cls = type(type(optimizer).__name__, (_Distributed, type(optimizer)), {})
    wrapped = cls.__new__(cls)
    wrapped.__dict__.update(optimizer.__dict__)
    wrapped._synchronized = False
    wrapped._reducer = GradientReducer(
        [(names[id(p)], p) for p in params], op=op,
        backward_passes_per_step=backward_passes_per_step,
        fusion_threshold_bytes=fusion_threshold_bytes,
    )
    return wrapped


def _names(params, named_parameters):
    if named_parameters is None:
        return {id(p): f"allreduce.noname.{i}" for i, p in enumerate(params)}
    named = list(named_parameters)
    if not all(isinstance(item, tuple) and len(item) == 2 for item in named):
        raise ValueError(
            "DistributedOptimizer: named_parameters should be a sequence of (name, parameter) "
            "pairs, usually model.named_parameters()"
        )
    names = [name for name, _ in named]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise ValueError(
            f"DistributedOptimizer: parameter names in named_parameters must be unique; "
            f"repeated: {repeated}"
        )
    by_id = {id(p): name for name, p in named}
    unnamed = [i for i, p in enumerate(params) if id(p) not in by_id]
    if unnamed:
        raise ValueError(
            f"DistributedOptimizer: named_parameters was given, but the optimizer's parameters "
            f"at positions {unnamed} are not in it. Fix: pass the named_parameters() of the "
            f"model whose parameters() the optimizer was built with"
        )
    return by_id
