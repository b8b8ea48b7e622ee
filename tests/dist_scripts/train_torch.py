"""Data-parallel training in the kit.torch style, run under mpiexec by tests/test_distributed.py.

usage: train_torch.py OUT.npz BATCH_PER_RANK STEPS OPTIMIZER FUSION_BYTES [BACKWARD_PASSES
       [DEVICE]]
Every rank trains on its shard of the same global batches; rank 0 saves the weights. Run as one
process with BATCH_PER_RANK = N * B, it is the single-process reference. DEVICE "fake-gpu" trains
on device "gpu" of tests/fake_cupy.py (the GPU code paths, computed by NumPy), staged through
host memory; "fake-gpu-nccl" adds tests/fake_nccl.py; "gpu" uses the real GPU numbered by the
rank's local rank. Each rank prints whether its gradients went through NCCL.
"""

import sys

import numpy as np

import kit.horovod.torch as hvd
import kit.torch as torch
from kit.distributed import nccl

out, opt_name = sys.argv[1], sys.argv[4]
batch, steps, fusion = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[5])
passes = int(sys.argv[6]) if len(sys.argv) > 6 else 1
hvd.init()
rank, size = hvd.rank(), hvd.size()
device = sys.argv[7] if len(sys.argv) > 7 else "cpu"
if device.startswith("fake-gpu"):
    import fake_cupy

    fake = fake_cupy.installed(nccl=device == "fake-gpu-nccl")  # held: a dropped context
    fake.__enter__()  # manager would undo it; the fake stays for the whole run
elif device == "gpu":
    import cupy

    cupy.cuda.Device(hvd.local_rank()).use()  # one GPU per rank
device = "cpu" if device == "cpu" else "gpu"

torch.manual_seed(1234 + rank)  # every rank starts elsewhere: broadcast_parameters fixes that
model = torch.nn.Sequential(
    torch.nn.Linear(3, 16), torch.nn.Tanh(), torch.nn.Linear(16, 8), torch.nn.Tanh(),
    torch.nn.Linear(8, 2),
).double().to(device)
if opt_name == "sgd":
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
else:
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
opt = hvd.DistributedOptimizer(opt, named_parameters=model.named_parameters(),
                               backward_passes_per_step=passes, fusion_threshold_bytes=fusion)
hvd.broadcast_parameters(model.state_dict(), root_rank=0)
hvd.broadcast_optimizer_state(opt, root_rank=0)

data = np.random.default_rng(0)
global_batch = batch * size
for _ in range(steps):
    x = data.standard_normal((global_batch, 3))
    y = np.stack([np.sin(x[:, 0]) * x[:, 1], x[:, 2] ** 2], axis=1)
    shard = slice(rank * batch, (rank + 1) * batch)
    opt.zero_grad()
    for part in np.array_split(np.arange(batch), passes):
        xb = torch.tensor(x[shard][part], device=device)
        yb = torch.tensor(y[shard][part], device=device)
        loss = torch.nn.functional.mse_loss(model(xb), yb) * (len(part) / batch)
        loss.backward()
    opt.step()

assert all(p.device == device and p.grad.device == device for p in model.parameters())
used = all(nccl.usable(p._data) for p in model.parameters())
print(f"rank {rank} nccl: {'used' if used else 'not used'}", flush=True)
if rank == 0:
    np.savez(out, **{name: p.detach().to("cpu").numpy() for name, p in model.named_parameters()})
