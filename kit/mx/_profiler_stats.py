"""How MXNet names what kit's profiler recorded, and MXNet's aggregate statistics
(`mx.profiler.dumps()`): one table per category, as MXNet 1.x prints them."""

from __future__ import annotations

import json

from kit.mx._custom_function import CustomFunction
from kit.ops._registry import OPS

_MX_NAMES = {}
_SORT = {"total": "total", "avg": "avg", "min": "min", "max": "max", "count": "count"}
_MEMORY = "Device Storage"


def _mx_name(op):
    name = _MX_NAMES.get(op)
    if name is None:
        declared = OPS.get(op)
        name = _MX_NAMES[op] = op if declared is None else declared.profile or (
            declared.mx[0] if declared.mx else op)
    return name


def _is_custom(event):
    function = event.function
    return (event.kind == "function" and isinstance(function, type)
            and issubclass(function, CustomFunction))


def mx_spelling(event):
    """(name, category) as MXNet's profiler shows an event."""
    if event.category is not None:  # a Task, Frame or Event
        return event.name, event.category
    backward = "_backward_" if event.phase == "backward" else ""
    if _is_custom(event):
        return f"{backward}{event.op}::pure_python", "Custom Operator"
    if event.kind in ("range", "step"):
        return event.name, "event"
    name = backward + (_mx_name(event.op) if event.kind == "op" else event.op)
    outer = event.parent
    while outer is not None and not _is_custom(outer):
        outer = outer.parent
    if outer is not None:  # run by a CustomOp's forward or backward
        return f"{outer.op}::{name}", "Custom Operator"
    return name, "operator"


def _collect(events, counters):
    """{category: {name: [values]}}: durations in ms, memory sizes in kB, and the names of
    counters (whose values are their readings)."""
    table = {}
    for e in events:
        table.setdefault(e.category, {}).setdefault(e.name, []).append(e.duration_ns / 1e6)
    for e in events:
        for nbytes, device in ((e.self_cpu_bytes, "cpu/0"), (e.self_gpu_bytes, "gpu/0")):
            if nbytes:
                table.setdefault(_MEMORY, {}).setdefault(f"Memory: {device}", []).append(
                    nbytes / 1e3)
    for _, _, category, name, value in counters:
        table.setdefault(category, {}).setdefault(name, []).append(value)
    return table, {(category, name) for _, _, category, name, _ in counters}


def _stats(values, counter):
    """Count, Total (a counter's: its last value, as MXNet's), Min, Max, Avg."""
    return {"Count": len(values), "Total": values[-1] if counter else sum(values),
            "Min": min(values), "Max": max(values), "Avg": sum(values) / len(values)}


def aggregate_table(events, counters, format, sort_by, ascending):  # noqa: A002
    """MXNet's `dumps()` text (format "table") or JSON ("json")."""
    if sort_by not in _SORT:
        raise ValueError(f"mx.profiler.dumps: sort_by must be one of {sorted(_SORT)}, got "
                         f"{sort_by!r}")
    key = sort_by.capitalize()
    per_category = {}
    table, counter_names = _collect(events, counters)
    for category, names in table.items():
        rows = sorted(((name, _stats(values, (category, name) in counter_names))
                       for name, values in names.items()),
                      key=lambda row: row[1][key], reverse=not ascending)
        per_category[category] = rows
    if format == "json":
        out = {"Time": {}, "Memory": {}, "Unit": {"Time": "ms", "Memory": "kb"}}
        for category, rows in per_category.items():
            memory = category == _MEMORY
            out["Memory" if memory else "Time"][category] = {
                name: {k: v for k, v in stats.items() if not (memory and k == "Total")}
                for name, stats in rows
            }
        return json.dumps(out, indent=4)
    lines = ["", "Profile Statistics:", "\tNote the difference in units for different entries."]
    for category, rows in per_category.items():
        memory = category == _MEMORY
        lines += [category, "================="]
        if memory:
            lines.append(f"{'Name':<25}{'Total Count':>16} {'Min Use  (kb)':>16} "
                         f"{'Max Use  (kb)':>16} {'Avg Use  (kb)':>16}")
            lines.append(f"{'----':<25}{'-----------':>16} " + " ".join([f"{'-' * 13:>16}"] * 3))
        else:
            lines.append(f"{'Name':<25}{'Total Count':>16} {'Time (ms)':>16} "
                         f"{'Min Time (ms)':>16} {'Max Time (ms)':>16} {'Avg Time (ms)':>16}")
            lines.append(f"{'----':<25}{'-----------':>16} {'---------':>16} "
                         + " ".join([f"{'-' * 13:>16}"] * 3))
        for name, s in rows:
            values = [s["Min"], s["Max"], s["Avg"]] if memory else [
                s["Total"], s["Min"], s["Max"], s["Avg"]]
            lines.append(f"{name:<25}{s['Count']:>16} " + " ".join(f"{v:>16.4f}" for v in values))
        lines.append("")
    return "\n".join(lines) + "\n"
