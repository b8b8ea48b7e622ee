"""vmap against a Python loop over 1,000 samples: elementwise work, matmul, per-sample gradients.

Run: `python benchmarks/bench_vmap.py`. Prints the median time of each way and the speedup of
vmap over the loop (the target is at least 5x for elementwise and matmul work). Standalone: it
uses only kit, NumPy and the standard library.
"""

from __future__ import annotations

import os

# One BLAS thread: on a shared 2-core machine a threaded BLAS spends more time waiting for
# cores than computing on these sizes, and the comparison should measure vmap, not contention.
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import statistics  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

import kit  # noqa: E402
from kit.func import grad, vmap  # noqa: E402

SAMPLES = 1000


def median_seconds(fn, repeat=7, warmup=1):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def elementwise(x):
    return (kit.tanh(x) * x + kit.exp(-x * x)).sum()


def affine(x, w):
    return kit.relu(x @ w + 1.0)


def loss(w, x, t):
    return ((kit.tanh(x @ w) - t) ** 2).mean()


def cases():
    rng = np.random.default_rng(0)
    xs = kit.tensor(rng.standard_normal((SAMPLES, 64)).astype(np.float32))
    w = kit.tensor(rng.standard_normal((64, 32)).astype(np.float32))
    ts = kit.tensor(rng.standard_normal((SAMPLES, 32)).astype(np.float32))
    return {
        "elementwise (64 per sample)": (
            lambda: vmap(elementwise)(xs),
            lambda: kit.stack([elementwise(xs[i]) for i in range(SAMPLES)]),
        ),
        "matmul (64 @ 64x32 per sample)": (
            lambda: vmap(affine, in_dims=(0, None))(xs, w),
            lambda: kit.stack([affine(xs[i], w) for i in range(SAMPLES)]),
        ),
        "per-sample gradients (tanh layer)": (
            lambda: vmap(grad(loss), in_dims=(None, 0, 0))(w, xs, ts),
            lambda: kit.stack([grad(loss)(w, xs[i], ts[i]) for i in range(SAMPLES)]),
        ),
    }


def main():
    print(f"vmap vs a Python loop over {SAMPLES} samples (median of 7 runs)")
    print(f"{'case':36s} {'vmap':>10s} {'loop':>10s} {'speedup':>9s}")
    for name, (batched, looped) in cases().items():
        np.testing.assert_allclose(np.asarray(batched()), np.asarray(looped()), rtol=1e-4,
                                   atol=1e-5)
        t_vmap = median_seconds(batched)
        t_loop = median_seconds(looped, repeat=3)
        print(f"{name:36s} {t_vmap * 1e3:8.2f}ms {t_loop * 1e3:8.1f}ms "
              f"{t_loop / t_vmap:8.0f}x")


if __name__ == "__main__":
    main()
