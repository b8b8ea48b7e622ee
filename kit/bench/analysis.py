"""What a sweep means: the launch-overhead model and the size where one device starts to win.

Every call costs a fixed overhead (Python, dispatch, a kernel launch) plus a part that grows with
the work: `t(n) = overhead + n / rate`. A GPU has a larger overhead and a far larger rate than a
CPU, so below some size the CPU wins and above it the GPU does: the crossover.
"""

from __future__ import annotations

import math

import numpy as np


def fit_overhead_model(sizes, times):
    """Least-squares fit of `t = overhead + n / rate`; returns (overhead_s, rate_per_s).

    Each point is weighted by 1/t, so that the small sizes (where the overhead shows) count as much
    as the large ones (where the rate does).

    >>> overhead, rate = fit_overhead_model([1, 10, 100], [1.1e-6, 2e-6, 1.1e-5])
    >>> round(overhead * 1e6, 9), round(rate)
    (1.0, 10000000)
    """
    n = np.asarray(sizes, dtype=float)
    t = np.asarray(times, dtype=float)
    if n.shape != t.shape or n.size < 2 or len(set(n.tolist())) < 2:
        raise ValueError(
            "kit.bench.fit_overhead_model: need at least two distinct sizes with one time each, "
            f"got sizes {list(n)} and times {list(t)}"
        )
    design = np.stack([np.ones_like(n), n], axis=1) / t[:, None]
    (overhead, per_item), *_ = np.linalg.lstsq(design, t / t, rcond=None)
    rate = 1.0 / per_item if per_item > 0 else math.inf
    return max(float(overhead), 0.0), float(rate)


def model_time(n, overhead, rate):
    """t(n) = overhead + n / rate (seconds)."""
    return overhead + np.asarray(n, dtype=float) / rate


def model_crossover(slow_start, fast_start):
    """Size where two (overhead, rate) models take equal time, or None if they never do.

    `fast_start` is the device with the smaller overhead (the CPU), `slow_start` the one with the
    larger overhead and, for a crossover to exist, the larger rate (the GPU).

    >>> round(model_crossover((1e-5, 1e10), (1e-6, 1e9)))
    10000
    """
    (a_slow, r_slow), (a_fast, r_fast) = slow_start, fast_start
    gain = 1.0 / r_fast - 1.0 / r_slow  # seconds saved per item on the slow-start device
    if gain <= 0:
        return None
    return max(a_slow - a_fast, 0.0) / gain


def crossover_size(sizes, times_a, times_b):
    """The size from which b stays faster than a, interpolated in log-log between the largest
    measured size where a still wins and the next one.

    Returns the smallest size when b wins everywhere, None when b does not win at the largest size.

    >>> round(crossover_size([10, 100, 1000], [1, 10, 100], [5, 5, 5]), 6)
    50.0
    """
    n = np.asarray(sizes, dtype=float)
    a = np.asarray(times_a, dtype=float)
    b = np.asarray(times_b, dtype=float)
    if not (n.shape == a.shape == b.shape) or n.size == 0:
        raise ValueError(
            f"kit.bench.crossover_size: sizes and both time lists must have the same non-zero "
            f"length, got {n.size}, {a.size} and {b.size}"
        )
    order = np.argsort(n)
    n, a, b = n[order], a[order], b[order]
    losses = np.flatnonzero(b >= a)
    if losses.size == 0:
        return float(n[0])
    lo = int(losses[-1])
    if lo == n.size - 1:
        return None
    # log(a/b) changes sign between lo and lo + 1: find its zero on a log-size axis
    hi = lo + 1
    d_lo, d_hi = math.log(a[lo] / b[lo]), math.log(a[hi] / b[hi])
    frac = d_lo / (d_lo - d_hi)
    log_n = math.log(n[lo]) + frac * (math.log(n[hi]) - math.log(n[lo]))
    return math.exp(log_n)
