"""Data-parallel training over MPI (mpi4py), with Horovod's API: `kit.horovod.torch` and
`kit.horovod.mxnet` spell it as Horovod does. Start a job with `mpiexec -n 4 python train.py`;
each process runs the same program on its shard of the data, and DistributedOptimizer averages
the gradients so that every rank takes the same step.

>>> import kit.distributed as dist
>>> dist.init(); dist.size()
1
"""

from kit.distributed.collectives import (
    Average,
    ReduceOp,
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
    grouped_allreduce_,
)
from kit.distributed.fusion import GradientReducer, fusion_buckets
from kit.distributed.optimizer import DistributedOptimizer
from kit.distributed.runtime import (
    DistributedError,
    RankFailedError,
    available,
    comm,
    init,
    is_initialized,
    local_rank,
    local_size,
    rank,
    settings,
    size,
    unavailable_reason,
)

__all__ = [
    "Average", "DistributedError", "DistributedOptimizer", "GradientReducer", "RankFailedError",
    "ReduceOp", "Sum", "allgather", "allgather_object", "allreduce", "allreduce_", "available",
    "broadcast", "broadcast_", "broadcast_object", "broadcast_optimizer_state",
    "broadcast_parameters", "comm", "fusion_buckets", "grouped_allreduce_", "init",
    "is_initialized", "local_rank", "local_size", "rank", "settings", "size",
    "unavailable_reason",
]
