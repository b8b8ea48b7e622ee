"""The results document: machine, library versions, date, configuration and one row per timing.

Saved as JSON so a run on one machine (say a GPU box running scripts/gpu_check.sh) can be read,
checked and plotted on another. `validate` says exactly which field is missing or wrong.
"""

from __future__ import annotations

import datetime
import importlib.metadata
import importlib.resources
import json
import os
import platform
import sys
from pathlib import Path

from kit import backend

SCHEMA = "kit.bench/1"
# Recordings of real GPU runs live in the repository, beside the kit package (an editable
# install); found from kit's own files, so a lesson copied anywhere still finds them.
RECORDED = Path(__file__).resolve().parents[2] / "benchmarks" / "recorded"
TOP_FIELDS = {
    "schema": str, "date": str, "machine": dict, "versions": dict, "config": dict,
    "results": list, "targets": list,
}
MACHINE_FIELDS = {"platform": str, "python": str, "cpu": str, "cores": int}
ROW_FIELDS = {
    "workload": str, "device": str, "size": int, "median_s": float, "q1_s": float,
    "q3_s": float, "iqr_s": float, "mad_s": float, "min_s": float, "repeats": int,
    "number": int, "timer": str,
}


def cpu_name() -> str:
    """The CPU's model name (from /proc/cpuinfo on Linux), or the best platform guess."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def gpu_info() -> dict | None:
    """Name, memory and CUDA versions of GPU 0, or None without a usable GPU."""
    if not backend.gpu_available():
        return None
    cupy = backend.require_gpu("reading the GPU's properties")
    runtime = cupy.cuda.runtime
    props = runtime.getDeviceProperties(0)
    name = props["name"]
    return {
        "name": name.decode() if isinstance(name, bytes) else str(name),
        "memory_bytes": int(props["totalGlobalMem"]),
        "cuda_runtime": int(runtime.runtimeGetVersion()),
        "cuda_driver": int(runtime.driverGetVersion()),
    }


def machine_info() -> dict:
    """Where the numbers were measured.

    >>> sorted(machine_info())[:3]
    ['cores', 'cpu', 'gpu']
    """
    return {
        "platform": platform.platform(),
        "python": platform.python_version(),
        "cpu": cpu_name(),
        "cores": os.cpu_count() or 0,
        "gpu": gpu_info(),
        "gpu_unavailable_reason": backend.gpu_unavailable_reason(),
    }


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def library_versions() -> dict:
    """Versions of kit and the libraries that do the work (None when not installed)."""
    import numpy

    import kit

    cupy = sys.modules.get("cupy")
    cupy_version = getattr(cupy, "__version__", None) or next(
        (v for v in map(_version, ("cupy", "cupy-cuda12x", "cupy-cuda11x")) if v), None
    )
    return {"kit": kit.__version__, "numpy": numpy.__version__, "cupy": cupy_version,
            "matplotlib": _version("matplotlib")}


def now() -> str:
    """The current UTC time, ISO 8601 to the second."""
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def _check_fields(where, mapping, fields):
    if not isinstance(mapping, dict):
        raise ValueError(f"kit.bench results: {where} must be an object, got "
                         f"{type(mapping).__name__}")
    for key, kind in fields.items():
        if key not in mapping:
            raise ValueError(f"kit.bench results: {where} lacks the field {key!r}")
        value = mapping[key]
        ok = isinstance(value, kind) and not isinstance(value, bool)
        if kind is float:
            ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        if not ok:
            raise ValueError(
                f"kit.bench results: {where}[{key!r}] must be {kind.__name__}, got "
                f"{type(value).__name__} {value!r}"
            )


def validate(doc: dict) -> dict:
    """Check a results document's structure; return it, or raise ValueError naming the field."""
    _check_fields("the document", doc, TOP_FIELDS)
    if doc["schema"] != SCHEMA:
        raise ValueError(f"kit.bench results: schema is {doc['schema']!r}, expected {SCHEMA!r}")
    datetime.datetime.fromisoformat(doc["date"])
    _check_fields("machine", doc["machine"], MACHINE_FIELDS)
    for i, row in enumerate(doc["results"]):
        _check_fields(f"results[{i}]", row, ROW_FIELDS)
        if row["device"] not in backend.DEVICES:
            raise ValueError(f"kit.bench results: results[{i}] has unknown device "
                             f"{row['device']!r}")
        if not 0 < row["min_s"] <= row["median_s"]:
            raise ValueError(f"kit.bench results: results[{i}] needs 0 < min_s <= median_s, got "
                             f"{row['min_s']} and {row['median_s']}")
    return doc


def save_json(doc: dict, path) -> None:
    """Validate and write a results document."""
    validate(doc)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


def load_json(path) -> dict:
    """Read and validate a results document."""
    with open(path, encoding="utf-8") as f:
        return validate(json.load(f))


def recordings(folder=RECORDED) -> list:
    """Every results document (`bench.json`) under `folder`, validated, in path order.

    The default is the repository's benchmarks/recorded/, found from the installed kit package
    (not from the current directory). Without it (kit installed from a wheel, without its
    repository), FileNotFoundError says so.

    >>> import kit.bench
    >>> isinstance(kit.bench.recordings(), list)
    True
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(
            f"kit.bench.recordings: no folder {folder}; recordings live in kit's repository "
            "(benchmarks/recorded/), which this kit was installed without: install kit from "
            "a checkout with `pip install -e .`, or pass the folder"
        )
    return [load_json(path) for path in sorted(folder.glob("**/bench.json"))]


def packaged_recording(name: str) -> dict:
    """A recording shipped inside the kit package (kit/bench/recorded/NAME.json, package data),
    found through the installed kit, so a lesson copied anywhere reads it: for instance
    "fusion_sweep", data-parallel step times against the fusion threshold, recorded by
    benchmarks/record_fusion.py. It names its schema, date and machine.

    >>> doc = packaged_recording("fusion_sweep")
    >>> doc["schema"], doc["machine"]["cores"] > 0
    ('kit.distributed.fusion/1', True)
    """
    source = importlib.resources.files("kit.bench") / "recorded" / f"{name}.json"
    if not source.is_file():
        known = sorted(p.name[:-5] for p in (importlib.resources.files("kit.bench") / "recorded")
                       .iterdir() if p.name.endswith(".json"))
        raise FileNotFoundError(f"kit.bench.packaged_recording: no recording {name!r}; kit "
                                f"ships {known}")
    doc = json.loads(source.read_text(encoding="utf-8"))
    for key in ("schema", "date", "machine"):
        if key not in doc:
            raise ValueError(f"kit.bench.packaged_recording: {name!r} lacks the field {key!r}")
    return doc


def rows_for(doc: dict, workload: str, device: str) -> list:
    """The rows of one workload on one device, by increasing size."""
    rows = [r for r in doc["results"] if r["workload"] == workload and r["device"] == device]
    return sorted(rows, key=lambda r: r["size"])


def find_row(doc: dict, workload: str, device: str, size: int) -> dict | None:
    """The row for one (workload, device, size), or None if it was not measured."""
    return next((r for r in rows_for(doc, workload, device) if r["size"] == size), None)
