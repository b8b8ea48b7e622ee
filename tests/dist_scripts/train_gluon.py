"""Data-parallel training with kit.mx.gluon and horovod.DistributedTrainer, run under mpiexec by
tests/test_distributed.py (where kit.mx.gluon exists).

usage: train_gluon.py OUT.npz BATCH_PER_RANK STEPS
Rank 0 saves the weights; as one process with BATCH_PER_RANK = N * B it is the reference.
"""

import sys

import numpy as np

import kit.mx as mx
from kit.mx.contrib import horovod

out, batch, steps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
horovod.init()
rank, size = horovod.rank(), horovod.size()

net = mx.gluon.nn.Sequential()
with net.name_scope():
    net.add(mx.gluon.nn.Dense(8, activation="tanh", in_units=3, dtype="float64"))
    net.add(mx.gluon.nn.Dense(2, in_units=8, dtype="float64"))
net.initialize(mx.init.Uniform(0.5 + rank))  # a different start on every rank
params = net.collect_params()
horovod.broadcast_parameters(params, root_rank=0)
trainer = horovod.DistributedTrainer(params, "sgd", {"learning_rate": 0.1, "momentum": 0.9})
loss_fn = mx.gluon.loss.L2Loss()

data = np.random.default_rng(0)
for _ in range(steps):
    x = data.standard_normal((batch * size, 3))
    y = np.stack([np.sin(x[:, 0]) * x[:, 1], x[:, 2] ** 2], axis=1)
    shard = slice(rank * batch, (rank + 1) * batch)
    xb, yb = mx.nd.array(x[shard], dtype="float64"), mx.nd.array(y[shard], dtype="float64")
    with mx.autograd.record():
        loss = loss_fn(net(xb), yb)
    loss.backward()
    trainer.step(batch)

if rank == 0:
    np.savez(out, **{name: p.data().asnumpy() for name, p in params.items()})
