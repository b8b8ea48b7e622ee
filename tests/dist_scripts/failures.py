"""Failure cases, run under mpiexec by tests/test_distributed_failures.py.

usage: failures.py MODE FAILING_RANK
  raise     FAILING_RANK raises ValueError in its third step; every rank must stop with an error
            naming it
  kill      FAILING_RANK kills itself (SIGKILL) in its third step
  stall     FAILING_RANK sleeps in its third step past the (short) collective timeout
  mismatch  FAILING_RANK builds a layer of another shape; broadcast_parameters must raise on every
            rank, naming the parameter (each rank prints its error and exits 0)
  count     FAILING_RANK builds one layer more; the same, naming the extra parameters
"""

import os
import signal
import sys
import time

import numpy as np

import kit.distributed as dist
import kit.horovod.torch as hvd
import kit.torch as torch


def say(line):
    """One write per line: the ranks share one pipe, and print's two writes interleave."""
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


mode, failing = sys.argv[1], int(sys.argv[2])
hvd.init()
dist.settings.timeout = 5.0
rank = hvd.rank()
say(f"rank {rank} pid {os.getpid()}")

hidden = 5 if (mode == "mismatch" and rank == failing) else 4
model = torch.nn.Sequential(torch.nn.Linear(3, hidden), torch.nn.Tanh(),
                            torch.nn.Linear(hidden, 1)).double()
if mode == "count" and rank == failing:
    model.append(torch.nn.Linear(1, 1).double())
if mode in ("mismatch", "count"):
    try:
        hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    except ValueError as error:
        say(f"rank {rank} caught: {error}")
    sys.exit(0)

opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                               named_parameters=model.named_parameters())
hvd.broadcast_parameters(model.state_dict(), root_rank=0)
data = np.random.default_rng(rank)
for step in range(100):
    if step == 2 and rank == failing:
        if mode == "raise":
            raise ValueError("a bad batch on purpose")
        if mode == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        if mode == "stall":
            time.sleep(60)
    x = torch.tensor(data.standard_normal((8, 3)))
    opt.zero_grad()
    model(x).pow(2).mean().backward()
    opt.step()
say(f"rank {rank} finished")
