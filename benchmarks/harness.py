"""Timing helpers shared by the workloads: interleaved repeats, medians, the printed table.

The machine is shared and noisy, so every implementation of a workload is timed in turns
(round-robin) inside one process and the median of the repeats is kept; a ratio is the median of
the per-round ratios, so that a burst of load from elsewhere hits both sides of a ratio alike.
Garbage collection stays
as the user would have it (enabled) for every implementation alike.

NumPy's BLAS (OpenBLAS) and PyTorch (OpenMP) each keep a pool of worker threads that spin for a
while after a parallel call. On two cores the spinning pool of the previous implementation steals
the CPU from the next one, so each sample starts after a short pause and one untimed call.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, field


def import_torch():
    """PyTorch if it is installed (a peer to compare with, never needed by kit), else None."""
    try:
        import torch
    except ImportError:
        return None
    return torch


@dataclass
class Case:
    """One workload: its implementations (each runs one forward + backward) and its target."""

    name: str
    impls: dict
    per: int = 1  # report time per this many ops (the tiny-op chain reports per op)
    unit: str = "step"
    target: str = ""  # e.g. "kit/numpy <= 1.15"
    limit: tuple | None = None  # (baseline impl, max ratio of kit to it)
    single: bool = False  # too slow to repeat many times: time whole calls, few repeats
    results: dict = field(default_factory=dict)
    samples: dict = field(default_factory=dict)


def _time(fn, number):
    start = time.perf_counter()
    for _ in range(number):
        fn()
    return time.perf_counter() - start


SETTLE = 0.1  # seconds; about OpenBLAS's spin-wait before its threads sleep


def measure(case, repeats, min_sample, settle=SETTLE):
    """Median seconds per call of each implementation, timed in interleaved rounds."""
    numbers = {}
    for name, fn in case.impls.items():
        elapsed = _time(fn, 1)  # warm-up (first calls allocate caches)
        number = 1
        if not case.single:
            while elapsed * number < min_sample and number < 1 << 20:
                number *= 2
        numbers[name] = number
    samples = {name: [] for name in case.impls}
    for _ in range(repeats):
        for name, fn in case.impls.items():
            time.sleep(settle)
            if not case.single:
                fn()
            samples[name].append(_time(fn, numbers[name]) / numbers[name])
    case.samples = samples
    case.results = {name: statistics.median(s) for name, s in samples.items()}
    return case.results


def ratios(case):
    """kit's time over each other implementation's, the median over the timed rounds."""
    kit = case.samples["kit"]
    return {
        name: statistics.median(k / t for k, t in zip(kit, s, strict=True))
        for name, s in case.samples.items() if name != "kit"
    }


def verdict(case):
    """'met', 'MISSED' or '' for the case's target."""
    if case.limit is None:
        return ""
    base, most = case.limit
    found = ratios(case)
    if base not in found:
        return "n/a"
    return "met" if found[base] <= most else "MISSED"


def _fmt_time(seconds):
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


def table(cases):
    """The side-by-side table as text: medians per implementation, ratios, target, verdict."""
    rows = [("workload", "unit", "kit", "numpy", "torch", "kit/numpy", "kit/torch", "target",
             "")]
    for case in cases:
        res = {k: v / case.per for k, v in case.results.items()}
        rat = ratios(case)
        target = case.target
        base = case.limit[0] if case.limit else None
        if base in rat and base not in ("numpy", "torch"):  # a ratio the columns don't show
            target += f" (now {rat[base]:.2f}x)"
        rows.append((
            case.name, case.unit,
            *(_fmt_time(res[k]) if k in res else "-" for k in ("kit", "numpy", "torch")),
            *(f"{rat[k]:.2f}x" if k in rat else "-" for k in ("numpy", "torch")),
            target, verdict(case),
        ))
    widths = [max(len(str(r[i])) for r in rows) for i in range(len(rows[0]))]
    lines = [
        "  ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows
    ]
    lines.insert(1, "-" * len(lines[0]))
    return "\n".join(lines)


def as_json(cases):
    """The results as plain data (seconds per unit), for --json."""
    return [
        {
            "workload": c.name, "unit": c.unit,
            "seconds": {k: v / c.per for k, v in c.results.items()},
            "ratios": ratios(c), "target": c.target, "verdict": verdict(c),
        }
        for c in cases
    ]
