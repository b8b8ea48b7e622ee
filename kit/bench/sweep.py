"""A sweep: every (workload, device, size) timed once with the harness, into one document."""

from __future__ import annotations

from kit import backend
from kit.bench import report
from kit.bench.harness import time_call
from kit.bench.targets import evaluate_targets
from kit.bench.workloads import WORKLOADS

QUICK_TIMING = {"warmup": 1, "repeat": 3, "min_repeat": 3, "max_seconds": 0.02}
STANDARD_TIMING = {"warmup": 2, "repeat": 10, "min_repeat": 3, "max_seconds": 1.0}


def default_devices() -> tuple:
    """("cpu", "gpu") where a GPU is usable, else ("cpu",)."""
    return ("cpu", "gpu") if backend.gpu_available() else ("cpu",)


def plan(workloads=None, devices=None, quick=False, sizes=None):
    """The list of (workload, device, size) steps a sweep will take, in order."""
    names = list(WORKLOADS) if workloads is None else list(workloads)
    unknown = [n for n in names if n not in WORKLOADS]
    if unknown:
        raise ValueError(f"kit.bench: unknown workload(s) {unknown}; known: {sorted(WORKLOADS)}")
    devices = default_devices() if devices is None else tuple(
        backend.normalize_device(d) for d in devices)
    if "gpu" in devices and not backend.gpu_available():
        raise RuntimeError(f"kit.bench: device 'gpu' was asked for, but no GPU is usable: "
                           f"{backend.gpu_unavailable_reason()}")
    steps = []
    for name in names:
        w = WORKLOADS[name]
        for device in devices:
            if device in w.devices:
                steps += [(w, device, n) for n in (sizes or w.sizes_for(device, quick))]
    return steps


def run_sweep(workloads=None, devices=None, quick=False, sizes=None, progress=None, **timing):
    """Time every step of `plan(...)`; return a validated results document.

    `progress(done, total, label)` is called before each step and once at the end. Keyword
    arguments override the timing settings (warmup, repeat, min_repeat, max_seconds).

    >>> doc = run_sweep(["device_copy"], ["cpu"], sizes=[1024], repeat=3, max_seconds=0.01)
    >>> [(r["workload"], r["size"], r["repeats"]) for r in doc["results"]]
    [('device_copy', 1024, 3)]
    """
    settings = dict(QUICK_TIMING if quick else STANDARD_TIMING, **timing)
    steps = plan(workloads, devices, quick, sizes)
    rows = []
    for i, (w, device, n) in enumerate(steps):
        if progress is not None:
            progress(i, len(steps), f"{w.name} {device} {w.size_name}={n}")
        fn = w.setup(n, device)
        m = time_call(fn, device=device, **settings)
        row = {"workload": w.name, "device": device, "size": int(n), **m.to_dict()}
        if w.bytes_moved is not None:
            row["bytes"] = int(w.bytes_moved(n))
            row["gb_per_s"] = row["bytes"] / row["median_s"] / 1e9
        if w.flops is not None:
            row["flops"] = int(w.flops(n))
            row["gflop_per_s"] = row["flops"] / row["median_s"] / 1e9
        rows.append(row)
        del fn  # free the step's data before the next one allocates
    if progress is not None:
        progress(len(steps), len(steps), "done")
    doc = {
        "schema": report.SCHEMA,
        "date": report.now(),
        "machine": report.machine_info(),
        "versions": report.library_versions(),
        "config": {"quick": bool(quick), "devices": sorted({d for _, d, _ in steps}),
                   "workloads": list(dict.fromkeys(w.name for w, _, _ in steps)),
                   "timing": settings},
        "results": rows,
        "targets": [],
    }
    doc["targets"] = evaluate_targets(doc)
    return report.validate(doc)
