"""Run every benchmark once and print kit's medians and ratios against NumPy and PyTorch.

    python -m benchmarks.run            # full sizes (a few minutes on the 2-core CI machine)
    python -m benchmarks.run --quick    # small sizes, few repeats: a smoke run
    python -m benchmarks.run --json results.json

Targets (docs: DESIGN.md, "Performance"): MLP step <= 1.15x NumPy, the same step written with
nn.Linear + optim.SGD <= 1.05x the bare-tensor step, tiny-op chain <= 2.5x NumPy
per op, large elementwise <= 1.2x NumPy, 100,000-deep chain faster than PyTorch, 1,000,000-deep
chain completes. Compiled (kit.compile): tiny-op chain <= 1.3x NumPy per op, MLP step <= 1.05x
NumPy, large elementwise fused faster than NumPy (with the bytes each moves per element).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time

if __package__ in (None, ""):  # run as a script: make `benchmarks` and `kit` importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

THREAD_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
if "--threads" in sys.argv[:-1]:
    # NOTE: BLAS reads these once, when NumPy is first imported, so they are set before that.
    for _var in THREAD_VARS:
        os.environ[_var] = sys.argv[sys.argv.index("--threads") + 1]

import numpy as np  # noqa: E402

from benchmarks import chains, large, mlp, mlp_gluon, mlp_modules  # noqa: E402
from benchmarks.harness import Case, as_json, import_torch, measure, table  # noqa: E402

FULL = {"mlp_batch": 64, "tiny_n": 1000, "large_n": 4_000_000, "deep": (100_000, 1_000_000),
        "repeats": 15, "deep_repeats": 3, "min_sample": 0.05}
QUICK = {"mlp_batch": 64, "tiny_n": 300, "large_n": 200_000, "deep": (10_000, 100_000),
         "repeats": 3, "deep_repeats": 1, "min_sample": 0.01}


def cases(torch, cfg):
    """The workloads at the sizes in `cfg`, as Cases ready to measure."""
    tiny_n, (deep_a, deep_b) = cfg["tiny_n"], cfg["deep"]
    deep_b_impls = {"kit": chains.deep_impls(None, deep_b)["kit"]}
    fused, moved = large.compiled_impls(cfg["large_n"])
    return [
        Case(f"MLP step, batch {cfg['mlp_batch']}, 784-256-256-10",
             mlp.impls(torch, cfg["mlp_batch"]), target="<= 1.15x numpy",
             limit=("numpy", 1.15)),
        Case(f"MLP step as nn.Linear + optim.SGD, batch {cfg['mlp_batch']}",
             mlp_modules.impls(torch, cfg["mlp_batch"]), target="<= 1.05x bare kit step",
             limit=("bare", 1.05)),
        Case(f"MLP step as gluon Dense + Trainer.step (SGD), batch {cfg['mlp_batch']}",
             mlp_gluon.impls(cfg["mlp_batch"]), target="<= 1.05x bare kit step",
             limit=("bare", 1.05)),
        Case(f"tiny-op chain, {tiny_n} ops on 16 floats", chains.tiny_impls(torch, tiny_n),
             per=tiny_n, unit="op", target="<= 2.5x numpy", limit=("numpy", 2.5)),
        Case(f"5 elementwise ops, {cfg['large_n']:,} floats", large.impls(torch, cfg["large_n"]),
             target="<= 1.2x numpy", limit=("numpy", 1.2)),
        Case(f"compiled: MLP step, batch {cfg['mlp_batch']}", mlp.compiled_impls(cfg["mlp_batch"]),
             target="<= 1.05x numpy", limit=("numpy", 1.05)),
        Case(f"compiled: tiny-op chain, {tiny_n} ops", chains.tiny_compiled_impls(tiny_n),
             per=tiny_n, unit="op", target="<= 1.3x numpy", limit=("numpy", 1.3)),
        Case(f"compiled: 5 ops, {cfg['large_n']:,} floats, {moved} B/element (numpy "
             f"{large.NUMPY_BYTES_PER_ELEMENT})", fused, target="< 1x numpy",
             limit=("numpy", 1.0)),
        Case(f"scalar chain, {deep_a:,} deep", chains.deep_impls(torch, deep_a), single=True,
             target="< 1x torch", limit=("torch", 1.0)),
        Case(f"scalar chain, {deep_b:,} deep", deep_b_impls, single=True, target="completes"),
    ]


def environment(torch):
    return {
        "python": platform.python_version(), "numpy": np.__version__,
        "torch": torch.__version__ if torch is not None else None,
        "machine": platform.machine(), "cpus": os.cpu_count(),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, a smoke run")
    parser.add_argument("--json", metavar="PATH", help="also save the results as JSON")
    parser.add_argument("--repeats", type=int, help="timed rounds per workload (median kept)")
    parser.add_argument(
        "--threads", type=int,
        help="threads for NumPy's BLAS and PyTorch alike (on the command line only); on a machine "
             "shared with other jobs, 1 avoids spinning thread pools that distort every timing",
    )
    args = parser.parse_args(argv)
    cfg = dict(QUICK if args.quick else FULL)
    if args.repeats:
        cfg["repeats"] = args.repeats
    torch = import_torch()
    if torch is not None and args.threads:
        torch.set_num_threads(args.threads)
    env = environment(torch)
    env["threads"] = args.threads or "library default"
    print("kit benchmarks: " + ", ".join(f"{k} {v}" for k, v in env.items()), flush=True)
    done = []
    for case in cases(torch, cfg):
        repeats = cfg["deep_repeats"] if case.single else cfg["repeats"]
        if case.target == "completes":
            repeats = 1
        print(f"  {case.name} ...", flush=True)
        measure(case, repeats, cfg["min_sample"])
        done.append(case)
    print()
    print(table(done))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"environment": env, "config": cfg, "results": as_json(done)}, f, indent=2)
    return done


if __name__ == "__main__":
    main()
