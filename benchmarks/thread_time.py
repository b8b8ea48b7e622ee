"""The MLP steps timed by thread CPU time, interleaved, medians: less sensitive to other jobs on
a shared machine than benchmarks.run's wall clock, and able to time another checkout of kit
side by side (its benchmarks/ and kit/ are imported from the path given).

    python -m benchmarks.thread_time [--steps 150] [CHECKOUT]

prints kit's eager and compiled MLP steps against NumPy's, and the nn.Linear and gluon steps
against the bare kit step. Run it for two checkouts one after the other (or alternating) to
compare them; BLAS is limited to one thread, as `benchmarks.run --threads 1`.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

for _name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")  # before NumPy is imported


def medians(fns, steps):
    """{name: median thread CPU seconds per call}, the calls interleaved round by round."""
    for fn in fns.values():
        for _ in range(5):
            fn()
    times = {name: [] for name in fns}
    for _ in range(steps):
        for name, fn in fns.items():
            start = time.thread_time()
            fn()
            times[name].append(time.thread_time() - start)
    return {name: statistics.median(t) for name, t in times.items()}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkout", nargs="?", help="another kit checkout to time (default: this)")
    parser.add_argument("--steps", type=int, default=150, help="interleaved rounds (median kept)")
    args = parser.parse_args(argv)
    if args.checkout:  # (run as a program: nothing else in this process uses kit)
        sys.path.insert(0, os.path.abspath(args.checkout))
        for name in [m for m in sys.modules if m.split(".")[0] in ("kit", "benchmarks")]:
            del sys.modules[name]
    from benchmarks import mlp, mlp_gluon, mlp_modules

    x, y, params = mlp.make_data(64)
    steps = {"numpy": mlp.numpy_step_fn(x, y, params), "eager": mlp.kit_step_fn(x, y, params)}
    try:
        steps["compiled"] = mlp.kit_step_fn(x, y, params, compiled=True)
    except TypeError:  # a checkout from before kit.compile
        pass
    got = medians(steps, args.steps)
    print("MLP step / NumPy: " + ", ".join(
        f"{name} {t * 1e3:.3f} ms ({t / got['numpy']:.3f}x)" for name, t in got.items()))
    modules = mlp_modules.impls(None, 64)
    layers = {"bare": modules["bare"], "nn.Linear": modules["kit"],
              "gluon": mlp_gluon.impls(64)["kit"]}
    got = medians(layers, args.steps)
    print("module layers / bare kit step: " + ", ".join(
        f"{name} {t * 1e3:.3f} ms ({t / got['bare']:.3f}x)" for name, t in got.items()))


if __name__ == "__main__":
    main()
