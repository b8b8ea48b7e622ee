"""Allreduce throughput of kit.distributed next to mpi4py's raw Allreduce, and the step time of
a data-parallel MLP, on 1, 2 and 4 processes.

    python benchmarks/bench_allreduce.py            # starts mpiexec -n 2 and -n 4 itself
    python benchmarks/bench_allreduce.py --quick    # small sizes, few rounds (a smoke run)

Each message size (float32, 4 KB .. 16 MB) is reduced by three implementations in interleaved
rounds, each round timed between barriers on every rank (the slowest rank counts), in MB/s:
raw `comm.Allreduce(MPI.IN_PLACE, buf)` and `comm.Iallreduce(MPI.IN_PLACE, buf).Wait()` next to
kit's `allreduce_` (in place on a tensor, Sum; its ratio is to the faster raw call), and raw
`comm.Allreduce(send, recv)` next to kit's `allreduce` (a new tensor, Sum). A ratio is the median
over rounds of kit / raw; DESIGN.md's target is at most 1.10 at 1 MB and above.
The MLP (784-256-256-10, batch 64 per rank, SGD) reports the time per step and the part of it
spent waiting in step() for the gradient allreduce.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

SIZES = [4 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20]


def _timed(comm, fn, iterations):
    comm.Barrier()
    start = time.perf_counter()
    for _ in range(iterations):
        fn()
    elapsed = (time.perf_counter() - start) / iterations
    return comm.allreduce(elapsed, op=_max())  # the slowest rank is the collective's time


def _max():
    from mpi4py import MPI

    return MPI.MAX


def allreduce_rows(rounds, sizes):
    import numpy as np
    from mpi4py import MPI

    import kit
    import kit.distributed as dist

    dist.init()
    comm = dist.comm()
    rows = []
    for nbytes in sizes:
        send = np.ones(nbytes // 4, dtype=np.float32)
        recv, raw_inplace = np.empty_like(send), send.copy()
        inplace = kit.from_numpy(send.copy())
        fresh = kit.from_numpy(send.copy())
        impls = {
            "raw": lambda s=send, r=recv: comm.Allreduce(s, r),
            "raw in place": lambda b=raw_inplace: comm.Allreduce(MPI.IN_PLACE, b),
            # kit's call: MPICH's non-blocking algorithms differ from its blocking ones
            "raw Iallreduce": lambda b=raw_inplace: comm.Iallreduce(MPI.IN_PLACE, b).Wait(),
            "kit allreduce_": lambda t=inplace: dist.allreduce_(t, op=dist.Sum),
            "kit allreduce": lambda t=fresh: dist.allreduce(t, op=dist.Sum),
        }
        iterations = max(2, min(200, (8 << 20) // nbytes))
        times = {name: [] for name in impls}
        for _ in range(rounds):
            for name, fn in impls.items():
                fn()  # untimed: warm caches and pages
                times[name].append(_timed(comm, fn, iterations))
        row = {"bytes": nbytes}
        for name in impls:
            row[name] = nbytes / statistics.median(times[name]) / 1e6  # MB/s
        # kit's in-place form against the faster of MPI's in-place calls (the limit); the
        # new-tensor form against the raw call that writes into a separate buffer
        best = [min(a, b) for a, b in zip(times["raw in place"], times["raw Iallreduce"],
                                          strict=True)]
        row["kit allreduce_ ratio"] = statistics.median(
            k / r for k, r in zip(times["kit allreduce_"], best, strict=True))
        row["kit allreduce ratio"] = statistics.median(
            k / r for k, r in zip(times["kit allreduce"], times["raw"], strict=True))
        rows.append(row)
    return rows


def mlp_step(steps):
    """(ms per step, ms of it waiting for the gradient allreduce) of a data-parallel MLP."""
    import numpy as np

    import kit.distributed as dist
    import kit.torch as torch

    dist.init()
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(784, 256), torch.nn.ReLU(),
                                torch.nn.Linear(256, 256), torch.nn.ReLU(),
                                torch.nn.Linear(256, 10))
    opt = dist.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.01),
                                    named_parameters=model.named_parameters())
    rng = np.random.default_rng(dist.rank())
    x = torch.tensor(rng.standard_normal((64, 784)).astype(np.float32))
    y = torch.tensor(rng.integers(0, 10, 64))
    loss_fn = torch.nn.CrossEntropyLoss()
    step_times, wait_times = [], []
    for i in range(steps + 5):
        dist.comm().Barrier()
        start = time.perf_counter()
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        before_wait = time.perf_counter()
        opt.synchronize()
        waited = time.perf_counter() - before_wait
        opt.step()
        if i >= 5:
            step_times.append(time.perf_counter() - start)
            wait_times.append(waited)
    return 1e3 * statistics.median(step_times), 1e3 * statistics.median(wait_times)


def worker(args):
    import kit.distributed as dist

    dist.init()
    sizes = SIZES[:4] if args.quick else SIZES
    # a job of one process has nothing to reduce: only its MLP step (the compute) is timed
    rows = allreduce_rows(2 if args.quick else args.rounds, sizes) if dist.size() > 1 else []
    step_ms, wait_ms = mlp_step(5 if args.quick else 50)
    if dist.rank() == 0:
        print(f"## {dist.size()} process(es)")
        if rows:
            print("| size | raw in place | raw Iallreduce in place | kit allreduce_ | ratio | "
                  "raw send/recv | kit allreduce | ratio |")
            print("|---|---|---|---|---|---|---|---|")
        for row in rows:
            print(f"| {row['bytes'] >> 10} KB | {row['raw in place']:.0f} | "
                  f"{row['raw Iallreduce']:.0f} | {row['kit allreduce_']:.0f} | "
                  f"{row['kit allreduce_ ratio']:.2f} | {row['raw']:.0f} | "
                  f"{row['kit allreduce']:.0f} | {row['kit allreduce ratio']:.2f} |")
        print(f"MLP step: {step_ms:.2f} ms, of which {wait_ms:.2f} ms waiting in step() for the "
              f"gradient allreduce\n", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--procs", default="1,2,4", help="process counts, e.g. 1,2,4")
    args = parser.parse_args()
    if args.worker:
        worker(args)
        return
    mpiexec = Path(sys.executable).parent / "mpiexec"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get(
        "PYTHONPATH", "")]), "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    script = [sys.executable, str(Path(__file__).resolve()), "--worker"]
    script += ["--quick"] if args.quick else ["--rounds", str(args.rounds)]
    for n in [int(p) for p in args.procs.split(",")]:
        command = script if n == 1 else [str(mpiexec), "-n", str(n), *script]
        subprocess.run(command, env=env, check=True, timeout=1800, stdin=subprocess.DEVNULL)


if __name__ == "__main__":
    main()
