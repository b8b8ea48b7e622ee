"""The GPU targets of the project, answered from a results document.

Each target names the rows it needs. A run without them (no GPU, or `--quick`) reports the target
as "unmeasured" with the reason, never as met or missed.
"""

from __future__ import annotations

from dataclasses import dataclass

from kit.bench.report import find_row, rows_for
from kit.bench.workloads import WORKLOADS


@dataclass(frozen=True)
class Target:
    """A claim about a ratio of two timings, with its threshold."""

    name: str
    claim: str
    threshold: float
    at_most: bool  # True: the ratio must be <= threshold; False: >= threshold


MATMUL = Target("matmul_vs_raw_cupy", "kit.matmul 4096x4096 float32 on the GPU within 1.1x of "
                "raw CuPy (kit time / CuPy time)", 1.1, True)
FUSED = Target("fused_op_bandwidth", "kit.kernels.fused_gelu forward at >= 70% of the measured "
               "device copy bandwidth (fused GB/s / copy GB/s, largest size)", 0.7, False)
MLP = Target("mlp_gpu_speedup", "MLP forward+backward at batch 4096: GPU >= 10x faster than the "
             "CPU (CPU time / GPU time)", 10.0, False)
TARGETS = (MATMUL, FUSED, MLP)


def _ratio_of(doc, a, b):
    """median(a) / median(b) for two (workload, device, size) keys, or the missing key."""
    rows = [find_row(doc, *key) for key in (a, b)]
    for key, row in zip((a, b), rows, strict=True):
        if row is None:
            return None, f"{key[0]} on {key[1]} at size {key[2]} was not measured"
    return rows[0]["median_s"] / rows[1]["median_s"], None


def _bandwidth_ratio(doc):
    sizes = {r["size"] for r in rows_for(doc, "gelu_fused", "gpu")}
    sizes &= {r["size"] for r in rows_for(doc, "device_copy", "gpu")}
    if not sizes:
        return None, "gelu_fused and device_copy were not both measured on the GPU"
    n = max(sizes)
    # same bytes moved per call (read n, write n), so the bandwidth ratio is the inverse time ratio
    if WORKLOADS["gelu_fused"].bytes_moved(n) != WORKLOADS["device_copy"].bytes_moved(n):
        raise RuntimeError("kit.bench: gelu_fused and device_copy must move the same bytes")
    return _ratio_of(doc, ("device_copy", "gpu", n), ("gelu_fused", "gpu", n))


def evaluate_targets(doc: dict) -> list:
    """One entry per target: name, claim, threshold, value (or None) and status.

    >>> doc = {"results": [], "machine": {"gpu_unavailable_reason": "no GPU here"}}
    >>> [t["status"] for t in evaluate_targets(doc)]
    ['unmeasured', 'unmeasured', 'unmeasured']
    """
    values = {
        MATMUL.name: _ratio_of(doc, ("matmul", "gpu", 4096), ("matmul_raw", "gpu", 4096)),
        FUSED.name: _bandwidth_ratio(doc),
        MLP.name: _ratio_of(doc, ("mlp", "cpu", 4096), ("mlp", "gpu", 4096)),
    }
    reason = doc.get("machine", {}).get("gpu_unavailable_reason")
    out = []
    for target in TARGETS:
        value, missing = values[target.name]
        if value is None:
            status = "unmeasured"
            detail = missing + (f" (no usable GPU: {reason})" if reason else "")
        else:
            ok = value <= target.threshold if target.at_most else value >= target.threshold
            status = "met" if ok else "missed"
            detail = f"measured {value:.3g}, needs {'<=' if target.at_most else '>='} " \
                     f"{target.threshold:g}"
        out.append({"name": target.name, "claim": target.claim, "threshold": target.threshold,
                    "value": value, "status": status, "detail": detail})
    return out
