"""`import kit.horovod.torch as hvd`: Horovod's PyTorch API over kit.distributed (MPI).

>>> import kit.horovod.torch as hvd
>>> import kit.torch as torch
>>> hvd.init()
>>> model = torch.nn.Linear(2, 1)
>>> opt = torch.optim.SGD(model.parameters(), lr=0.01 * hvd.size())
>>> opt = hvd.DistributedOptimizer(opt, named_parameters=model.named_parameters())
>>> hvd.broadcast_parameters(model.state_dict(), root_rank=0)
>>> hvd.broadcast_optimizer_state(opt, root_rank=0)
"""

from kit.distributed import (
    Average,
    DistributedOptimizer,
    Sum,
    allgather,
    allgather_object,
    allreduce,
    allreduce_,
    broadcast,
    broadcast_,
    broadcast_object,
    broadcast_optimizer_state,
    broadcast_parameters,
    init,
    is_initialized,
    local_rank,
    local_size,
    rank,
    size,
)

__all__ = [
    "Average", "DistributedOptimizer", "Sum", "allgather", "allgather_object", "allreduce",
    "allreduce_", "broadcast", "broadcast_", "broadcast_object", "broadcast_optimizer_state",
    "broadcast_parameters", "init", "is_initialized", "local_rank", "local_size", "rank", "size",
]
