"""Data-parallel training of the lessons' classifier (two interleaved spirals), one shard of
every batch per process:

    mpiexec -n 2 python -m kit.distributed.demo [--epochs 20] [--batch 64] [--lr 0.05]

Every rank draws the same data (one seed), takes its slice of each global batch, and a
DistributedOptimizer averages the gradients, so all ranks take the same step: the run is the
single-process one with batch N * B. Rank 0 prints the loss and accuracy of each epoch (averaged
over the ranks) and the time per step.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import kit.horovod.torch as hvd
import kit.torch as torch


def spirals(n, noise=0.2, seed=0):
    """Two interleaved spirals in the plane: `n` points (x of shape (n, 2), labels 0 or 1)."""
    rng = np.random.default_rng(seed)
    label = rng.integers(0, 2, n)
    radius = rng.uniform(0.1, 1.0, n)
    angle = 3 * np.pi * radius + np.pi * label
    x = np.stack([radius * np.cos(angle), radius * np.sin(angle)], axis=1)
    return (x + noise * 0.1 * rng.standard_normal((n, 2))).astype(np.float32), label


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--batch", type=int, default=64, help="examples per rank per step")
    parser.add_argument("--lr", type=float, default=0.05, help="learning rate of one process")
    parser.add_argument("--samples", type=int, default=2048)
    args = parser.parse_args(argv)

    hvd.init()
    rank, size = hvd.rank(), hvd.size()
    x, y = spirals(args.samples)
    torch.manual_seed(rank)  # different on every rank until the broadcast below
    model = torch.nn.Sequential(
        torch.nn.Linear(2, 64), torch.nn.ReLU(), torch.nn.Linear(64, 64), torch.nn.ReLU(),
        torch.nn.Linear(64, 2),
    )
    # NOTE: the global batch is size * batch; scaling the learning rate with it (Goyal et al.)
    # keeps the step per example about the same.
    opt = torch.optim.SGD(model.parameters(), lr=args.lr * size, momentum=0.9)
    opt = hvd.DistributedOptimizer(opt, named_parameters=model.named_parameters())
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    hvd.broadcast_optimizer_state(opt, root_rank=0)
    loss_fn = torch.nn.CrossEntropyLoss()

    global_batch = args.batch * size
    order = np.random.default_rng(1)
    if rank == 0:
        print(f"kit.distributed demo: {size} process(es), batch {args.batch} per rank "
              f"({global_batch} in all), {args.samples} spiral points", flush=True)
    for epoch in range(args.epochs):
        perm = order.permutation(args.samples)  # the same on every rank: one seed
        totals = np.zeros(3)  # loss sum, correct, examples
        start, steps = time.perf_counter(), 0
        for first in range(0, args.samples - global_batch + 1, global_batch):
            mine = perm[first + rank * args.batch:first + (rank + 1) * args.batch]
            xb, yb = torch.tensor(x[mine]), torch.tensor(y[mine])
            opt.zero_grad()
            logits = model(xb)
            loss = loss_fn(logits, yb)
            loss.backward()
            opt.step()
            with torch.no_grad():
                correct = (logits.argmax(dim=1) == yb).sum().item()
            totals += [loss.item() * len(mine), correct, len(mine)]
            steps += 1
        step_ms = 1000 * (time.perf_counter() - start) / max(steps, 1)
        totals = hvd.allreduce(torch.tensor(totals), op=hvd.Sum, name="epoch totals").numpy()
        if rank == 0:
            print(f"epoch {epoch + 1:3d}  loss {totals[0] / totals[2]:.4f}  "
                  f"accuracy {totals[1] / totals[2]:.3f}  step {step_ms:.2f} ms", flush=True)


if __name__ == "__main__":
    main()
