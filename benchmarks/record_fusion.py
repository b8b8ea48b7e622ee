"""Record the data-parallel step time against the tensor-fusion threshold, for lesson 14.

    python benchmarks/record_fusion.py                    # 1, 2 and 4 processes
    python benchmarks/record_fusion.py --quick --out x.json   # a smoke run

writes kit/bench/recorded/fusion_sweep.json (package data: the lesson finds it through the
installed kit, `kit.bench.packaged_recording("fusion_sweep")`).

The model is an MLP of widths 256-256-192-160-128-96-80-64-48-32-10 (20 parameter tensors,
0.7 MB of float32 gradients), batch 64 per rank, SGD. For each process count one mpiexec job
times every threshold in interleaved rounds (the machine may be shared): a round builds a
DistributedOptimizer with that threshold and runs 2 untimed then `--steps` timed steps, each
started after a barrier. A step is split into compute (zero_grad, forward, backward: the
gradient hooks that fill the fusion buffers and start their allreduce run inside it) and wait
(synchronize(): the communication still running when backward ends), both on rank 0 (the
barrier before each step makes every rank wait for the slowest). The JSON keeps, per
(processes, threshold), the number of buffers and the median, quartiles and minimum (the least
disturbed step on a shared machine) over all timed steps of the step, compute and wait, with
the machine, versions, the load average and the date. OPENBLAS/OMP threads are 1: one core per rank.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

WIDTHS = [256, 256, 192, 160, 128, 96, 80, 64, 48, 32, 10]
THRESHOLDS = [0] + [1024 << k for k in range(11)]  # 0, 1 KiB .. 1 MiB
OUT = ROOT / "kit" / "bench" / "recorded" / "fusion_sweep.json"
SCHEMA = "kit.distributed.fusion/1"


def build_model():
    """The recorded MLP (kit.torch), the same on every rank after the broadcast."""
    import kit.torch as torch

    layers = []
    for width_in, width_out in zip(WIDTHS, WIDTHS[1:], strict=False):
        layers += [torch.nn.Linear(width_in, width_out), torch.nn.ReLU()]
    return torch.nn.Sequential(*layers[:-1])


def quartiles(samples):
    q1, median, q3 = statistics.quantiles(samples, n=4, method="inclusive")
    return {"median": 1e3 * median, "q1": 1e3 * q1, "q3": 1e3 * q3, "min": 1e3 * min(samples)}


def worker(args):
    import numpy as np

    import kit.distributed as dist
    import kit.torch as torch

    dist.init()
    comm = dist.comm()
    torch.manual_seed(0)
    model = build_model()
    rng = np.random.default_rng(dist.rank())
    x = torch.tensor(rng.standard_normal((64, WIDTHS[0])).astype(np.float32))
    y = torch.tensor(rng.integers(0, WIDTHS[-1], 64))
    loss_fn = torch.nn.CrossEntropyLoss()
    thresholds = THRESHOLDS[::4] if args.quick else THRESHOLDS
    samples = {t: {"step": [], "compute": [], "wait": []} for t in thresholds}
    for _ in range(args.rounds):
        for threshold in thresholds:
            opt = dist.DistributedOptimizer(
                torch.optim.SGD(model.parameters(), lr=1e-4),
                named_parameters=model.named_parameters(), fusion_threshold_bytes=threshold)
            for i in range(args.steps + 2):
                comm.Barrier()
                start = time.perf_counter()
                opt.zero_grad()
                loss_fn(model(x), y).backward()
                backward_end = time.perf_counter()
                opt.synchronize()
                end = time.perf_counter()
                opt.step()
                if i >= 2:  # the first steps of a new buffer layout touch fresh memory
                    samples[threshold]["step"].append(end - start)
                    samples[threshold]["compute"].append(backward_end - start)
                    samples[threshold]["wait"].append(end - backward_end)
            opt._reducer.remove()
    if dist.rank() != 0:
        return
    runs = []
    for threshold in thresholds:
        runs.append({
            "processes": dist.size(), "threshold_bytes": threshold,
            "buffers": len(dist.fusion_buckets(model.named_parameters(), threshold)),
            "steps": len(samples[threshold]["step"]),
            "step_ms": quartiles(samples[threshold]["step"]),
            "compute_ms": quartiles(samples[threshold]["compute"]),
            "wait_ms": quartiles(samples[threshold]["wait"]),
        })
    Path(args.part).write_text(json.dumps(runs))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--procs", default="1,2,4")
    parser.add_argument("--out", default=str(OUT))
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--part", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.quick:
        args.rounds, args.steps = 1, 2
    if args.worker:
        worker(args)
        return

    import mpi4py

    import kit.bench
    from kit.distributed import launch

    env = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    runs, loads = [], []
    for n in [int(p) for p in args.procs.split(",")]:
        part = Path(args.out).with_suffix(f".{n}.part")
        command = [sys.executable, __file__, "--worker", "--part", part, "--rounds",
                   args.rounds, "--steps", args.steps] + (["--quick"] if args.quick else [])
        loads.append(os.getloadavg()[0])
        result = launch.run(n if n > 1 else 0, command, timeout=1800, env=env)
        if result.returncode != 0:
            raise SystemExit(f"{n} process(es) failed:\n{result.stdout}")
        runs += json.loads(part.read_text())
        part.unlink()
    from mpi4py import MPI

    doc = {
        "schema": SCHEMA, "date": kit.bench.report.now(), "machine": kit.bench.machine_info(),
        "versions": {**kit.bench.library_versions(), "mpi4py": mpi4py.__version__,
                     "mpi": MPI.Get_library_version().splitlines()[0].strip()},
        "command": " ".join(["python benchmarks/record_fusion.py", *sys.argv[1:]]),
        "load_average_before_each_job": loads,
        "model": {"widths": WIDTHS, "batch_per_rank": 64, "dtype": "float32",
                  "gradient_bytes": 4 * sum(p.numel() for p in build_model().parameters())},
        "runs": runs,
    }
    Path(args.out).write_text(json.dumps(doc, indent=1) + "\n")
    print(f"wrote {args.out}: {len(runs)} runs")


if __name__ == "__main__":
    main()
