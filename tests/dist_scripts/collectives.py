"""Collectives checked on every rank, run under mpiexec by tests/test_distributed.py; each rank
prints 'rank R ok' when every check passed."""

import sys

import numpy as np

import kit
import kit.distributed as dist
import kit.mx as mx
import kit.torch as torch
from kit.horovod import mxnet as hvd_mx

dist.init()
rank, size = dist.rank(), dist.size()
assert 0 <= dist.local_rank() < dist.local_size() == size  # one machine

x = kit.tensor(np.arange(4.0) + rank)
ranks_sum = size * (size - 1) / 2
np.testing.assert_allclose(dist.allreduce(x, op=dist.Sum).numpy(),
                           size * np.arange(4.0) + ranks_sum)
np.testing.assert_allclose(dist.allreduce(x).numpy(), np.arange(4.0) + ranks_sum / size)
np.testing.assert_allclose(x.numpy(), np.arange(4.0) + rank)  # allreduce leaves its input
w = kit.tensor([float(rank)], requires_grad=True)
dist.allreduce_(w, op=dist.Sum)
assert w.requires_grad and w.item() == ranks_sum

counts = kit.tensor(np.array([rank, 1]))  # integers: Sum is exact, Average refused
assert dist.allreduce(counts, op=dist.Sum).numpy().tolist() == [ranks_sum, size]
try:
    dist.allreduce(counts)
except TypeError as error:
    assert "op=kit.distributed.Sum" in str(error)
else:
    raise AssertionError("Average of an integer tensor must raise")

gathered = dist.allgather(kit.tensor(np.full((rank + 1, 2), float(rank))))
expected = np.concatenate([np.full((r + 1, 2), float(r)) for r in range(size)])
np.testing.assert_array_equal(gathered.numpy(), expected)

y = kit.tensor([10.0 * rank, 1.0])
assert dist.broadcast(y, root_rank=size - 1).numpy().tolist() == [10.0 * (size - 1), 1.0]
dist.broadcast_(y, root_rank=1)
assert y.numpy().tolist() == [10.0, 1.0]

group = [kit.tensor([float(rank)]), kit.tensor(np.ones((2, 2), np.float32) * rank),
         kit.tensor([2.0 * rank])]
dist.grouped_allreduce_(group, op=dist.Sum)
assert [g.numpy().ravel()[0] for g in group] == [ranks_sum, ranks_sum, 2 * ranks_sum]
assert group[1].dtype == kit.float32

# optimizer state: rank 0's momentum buffers and learning rate reach everyone
model = torch.nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1 * (rank + 1), momentum=0.9)
model(torch.ones(3, 2) * (rank + 1)).sum().backward()
opt.step()
dist.broadcast_optimizer_state(opt, root_rank=0)
assert opt.param_groups[0]["lr"] == 0.1
buffer = opt.state[model.weight]["momentum_buffer"].numpy()
np.testing.assert_allclose(buffer, np.full((1, 2), 3.0))  # rank 0's gradient: 3 rows of ones

# Python objects
import kit.horovod.torch as hvd  # noqa: E402

assert hvd.broadcast_object({"epoch": rank + 3}, root_rank=1) == {"epoch": 4}
assert hvd.allgather_object(("rank", rank)) == [("rank", r) for r in range(size)]

# the MXNet spelling
a = mx.nd.array([1.0 + rank, 2.0])
np.testing.assert_allclose(hvd_mx.allreduce(a, average=False).asnumpy(),
                           [size + ranks_sum, 2.0 * size])
hvd_mx.broadcast_(a, root_rank=0)
assert a.asnumpy().tolist() == [1.0, 2.0]
assert hvd_mx.allgather(mx.nd.array([[rank]])).shape == (size, 1)
sys.stdout.write(f"rank {rank} ok\n")  # one write: the ranks share one pipe
