"""Collectives on GPU tensors through NCCL, checked on every rank, run under mpiexec by
tests/test_distributed_nccl.py: `collectives_gpu.py fake` on tests/fake_cupy.py's GPU with
tests/fake_nccl.py, `collectives_gpu.py real` on one real GPU per rank. Each rank prints
'rank R ok' when every check passed."""

import sys

import numpy as np

import kit
import kit.distributed as dist
from kit.distributed import nccl

dist.init()
rank, size = dist.rank(), dist.size()
if sys.argv[1] == "fake":
    import fake_cupy
    import fake_nccl

    fake = fake_cupy.installed(nccl=True)
    fake.__enter__()  # for the whole run
else:
    import cupy

    cupy.cuda.Device(dist.local_rank()).use()


def host(t):
    assert t.device == "gpu"
    return t.to("cpu").numpy()


ranks_sum = size * (size - 1) / 2
x = kit.tensor(np.arange(4.0) + rank, device="gpu")
assert nccl.unavailable_reason(x) is None
np.testing.assert_allclose(host(dist.allreduce(x, op=dist.Sum)), size * np.arange(4.0) + ranks_sum)
np.testing.assert_allclose(host(dist.allreduce(x)), np.arange(4.0) + ranks_sum / size)
np.testing.assert_allclose(host(x), np.arange(4.0) + rank)  # allreduce leaves its input
storage = x._data
assert dist.allreduce_(x, op=dist.Sum) is x and x._data is storage  # in its own memory
np.testing.assert_allclose(host(x), size * np.arange(4.0) + ranks_sum)

counts = kit.tensor(np.array([rank, 1]), device="gpu")  # int64 through NCCL
assert host(dist.allreduce(counts, op=dist.Sum)).tolist() == [ranks_sum, size]

y = kit.tensor([10.0 * rank, 1.0], device="gpu")
assert host(dist.broadcast(y, root_rank=size - 1)).tolist() == [10.0 * (size - 1), 1.0]
dist.broadcast_(y, root_rank=1)
assert host(y).tolist() == [10.0, 1.0]

group = [kit.tensor([float(rank)], device="gpu"), kit.tensor([2.0 * rank]),  # GPU and CPU
         kit.tensor(np.ones((2, 2), np.float32) * rank, device="gpu")]
dist.grouped_allreduce_(group, op=dist.Sum)
assert [g.device for g in group] == ["gpu", "cpu", "gpu"]
assert [float(g.to("cpu").numpy().ravel()[0]) for g in group] == [ranks_sum, 2 * ranks_sum,
                                                                  ranks_sum]
gathered = dist.allgather(kit.tensor(np.full((rank + 1, 2), float(rank)), device="gpu"))
expected = np.concatenate([np.full((r + 1, 2), float(r)) for r in range(size)])
np.testing.assert_array_equal(host(gathered), expected)  # staged: pieces differ in size

if sys.argv[1] == "fake":
    kinds = [call[0] for call in fake_nccl.CALLS]
    assert kinds.count("init") == 1 and "bcast" in kinds and "allReduce" in kinds, kinds
    assert ("allReduce", 2, "NCCL_INT64") in fake_nccl.CALLS
sys.stdout.write(f"rank {rank} ok\n")  # one write: the ranks share one pipe
