"""Data-parallel training in the MXNet style, run under mpiexec by tests/test_distributed.py.

usage: train_mxnet.py OUT.npz BATCH_PER_RANK STEPS optimizer|trainer
`optimizer`: horovod.DistributedOptimizer around an MXNet-style SGD, updated by index;
`trainer`: a DistributedTrainer (kit.horovod.mxnet's mixin on a gluon-style Trainer). The loss is
summed over the batch and step(batch_size) rescales, as in gluon. Rank 0 saves the weights.
"""

import sys

import numpy as np
from mini_mxnet import SGD, Parameter, Trainer

import kit.mx as mx
from kit.horovod.mxnet import DistributedTrainerMixin
from kit.mx.contrib import horovod

out, batch, steps, mode = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
horovod.init()
rank, size = horovod.rank(), horovod.size()

init = np.random.default_rng(100 + rank)  # every rank starts elsewhere: the broadcast fixes it
params = {
    "w1": Parameter("w1", init.standard_normal((3, 8))), "b1": Parameter("b1", np.zeros(8)),
    "w2": Parameter("w2", init.standard_normal((8, 2))), "b2": Parameter("b2", np.zeros(2)),
}
horovod.broadcast_parameters(params, root_rank=0)
optimizer = SGD(learning_rate=0.05, momentum=0.9)
if mode == "optimizer":
    optimizer = horovod.DistributedOptimizer(optimizer)
    states = {i: optimizer.create_state(i, p.data()) for i, p in enumerate(params.values())}
else:
    trainer = type("DistributedTrainer", (DistributedTrainerMixin, Trainer), {})(
        params, optimizer)

data = np.random.default_rng(0)
for _ in range(steps):
    x = data.standard_normal((batch * size, 3))
    y = np.stack([np.sin(x[:, 0]) * x[:, 1], x[:, 2] ** 2], axis=1)
    shard = slice(rank * batch, (rank + 1) * batch)
    xb, yb = mx.nd.array(x[shard], dtype=x.dtype), mx.nd.array(y[shard], dtype=y.dtype)
    p = {name: param.data() for name, param in params.items()}
    with mx.autograd.record():
        hidden = mx.nd.tanh(mx.nd.broadcast_add(mx.nd.dot(xb, p["w1"]), p["b1"]))
        loss = mx.nd.square(mx.nd.broadcast_add(mx.nd.dot(hidden, p["w2"]), p["b2"]) - yb).sum()
    loss.backward()
    if mode == "optimizer":
        optimizer.rescale_grad = 1.0 / batch
        for i, param in enumerate(params.values()):
            optimizer.update(i, param.data(), param.grad(), states[i])
    else:
        trainer.step(batch)

if rank == 0:
    np.savez(out, **{name: param.data().asnumpy() for name, param in params.items()})
