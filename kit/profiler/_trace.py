"""The Chrome trace (Trace Event Format, JSON): what chrome://tracing and Perfetto open.

Every event is a complete event (`"ph": "X"`) with its start `ts` and duration `dur` in
microseconds, on the process `pid` and the thread `tid` that ran it; events nested in time nest
in the picture. Work timed on the GPU is drawn again on its own track (process "GPU 0"), on the
device's clock; memory is shown as `[memory]` instant events (`"ph": "i"`) as PyTorch shows it.
"""

from __future__ import annotations

import gzip
import json
import os

GPU_PID = 0  # the GPU's track, as PyTorch numbers device 0


def chrome_trace(events, origin_ns, category, process_name="python"):
    """The trace as a dict: `events` (kit/profiler/_record.py Events), times from `origin_ns`;
    `category(event)` gives each event's "cat"."""
    pid = os.getpid()
    out = [_meta("process_name", pid, 0, process_name)]
    threads = sorted({e.thread for e in events})
    out += [_meta("thread_name", pid, tid, f"thread {tid}") for tid in threads]
    on_gpu = [e for e in events if e.device_start_ns is not None]
    if on_gpu:
        out += [_meta("process_name", GPU_PID, 0, "GPU 0"),
                _meta("thread_name", GPU_PID, 0, "stream (current)")]
    for e in events:
        args = {"External id": e.id}
        if e.phase is not None:
            args["Phase"] = e.phase
        if e.input_shapes is not None:
            args["Input Dims"] = e.input_shapes
        if e.stack:
            args["Call stack"] = ";".join(e.stack)
        out.append({"ph": "X", "cat": category(e), "name": e.name, "pid": pid, "tid": e.thread,
                    "ts": _us(e.start_ns - origin_ns), "dur": _us(e.end_ns - e.start_ns),
                    "args": args})
        for nbytes, device in ((e.self_cpu_bytes, "cpu"), (e.self_gpu_bytes, "gpu")):
            if nbytes:
                out.append({"ph": "i", "s": "t", "cat": "cpu_instant_event", "name": "[memory]",
                            "pid": pid, "tid": e.thread, "ts": _us(e.end_ns - origin_ns),
                            "args": {"Bytes": nbytes, "Device Type": device,
                                     "External id": e.id}})
    for e in on_gpu:
        out.append({"ph": "X", "cat": "kernel", "name": e.name, "pid": GPU_PID, "tid": 0,
                    "ts": _us(e.device_start_ns - origin_ns), "dur": _us(e.device_ns),
                    "args": {"External id": e.id, "device": 0}})
    return {"schemaVersion": 1, "displayTimeUnit": "ms", "traceEvents": out}


def write(path, trace):
    """Write `trace` as JSON to `path` (gzip-compressed when it ends with .gz); returns path."""
    path = os.fspath(path)
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "wt", encoding="utf-8") as f:
        json.dump(trace, f)
    return path


def _meta(name, pid, tid, value):
    return {"ph": "M", "name": name, "pid": pid, "tid": tid, "args": {"name": value}}


def _us(ns):
    return round(ns / 1e3, 3)
