"""Events added up per name (`key_averages`) and the table PyTorch prints for them.

The attributes are PyTorch's (`torch.autograd.profiler_util.FunctionEvent` / `FunctionEventAvg`):
times in microseconds (`cpu_time_total`, `self_cpu_time_total`, `cpu_time` the mean,
`device_time_total`, ...; `cuda_*` are the same as `device_*`), memory in bytes
(`cpu_memory_usage`, `self_cpu_memory_usage`, `device_memory_usage`, ...), `count`, `key`.
"""

from __future__ import annotations

SORT_KEYS = (
    "cpu_time_total", "self_cpu_time_total", "cpu_time", "device_time_total",
    "self_device_time_total", "device_time", "cpu_memory_usage", "self_cpu_memory_usage",
    "device_memory_usage", "self_device_memory_usage", "count",
)


class Timings:
    """PyTorch's time and memory attributes, from the `_cpu_ns`, `_self_cpu_ns`, `_device_ns`,
    `_self_device_ns` totals and `count` a subclass keeps."""

    __slots__ = ()

    @property
    def cpu_time_total(self):
        return self._cpu_ns / 1e3

    @property
    def self_cpu_time_total(self):
        return self._self_cpu_ns / 1e3

    @property
    def cpu_time(self):
        return self.cpu_time_total / self.count if self.count else 0.0

    @property
    def device_time_total(self):
        return self._device_ns / 1e3

    @property
    def self_device_time_total(self):
        return self._self_device_ns / 1e3

    @property
    def device_time(self):
        return self.device_time_total / self.count if self.count else 0.0

    cuda_time_total = device_time_total
    self_cuda_time_total = self_device_time_total
    cuda_time = device_time

    @property
    def cuda_memory_usage(self):
        return self.device_memory_usage

    @property
    def self_cuda_memory_usage(self):
        return self.self_device_memory_usage

    @property
    def is_user_annotation(self):
        return self.kind == "range"

    node_id = -1
    overload_name = ""


class Average(Timings):
    """The events that share a key, added up (PyTorch's FunctionEventAvg)."""

    __slots__ = (
        "key", "kind", "count", "_cpu_ns", "_self_cpu_ns", "_device_ns", "_self_device_ns",
        "cpu_memory_usage", "self_cpu_memory_usage", "device_memory_usage",
        "self_device_memory_usage", "input_shapes", "stack", "cpu_parent", "category",
    )

    def __init__(self, key, kind="range", input_shapes=None, stack=None):
        self.key = key
        self.kind = kind
        self.count = 0
        self._cpu_ns = self._self_cpu_ns = self._device_ns = self._self_device_ns = 0
        self.cpu_memory_usage = self.self_cpu_memory_usage = 0
        self.device_memory_usage = self.self_device_memory_usage = 0
        self.input_shapes = input_shapes
        self.stack = stack
        self.cpu_parent = None
        self.category = None

    def add(self, other):
        """Add an Event or an Average into this one; returns self."""
        if self.count == 0:
            self.kind, self.cpu_parent = other.kind, other.cpu_parent
            self.category = other.category
        self.count += other.count
        self._cpu_ns += other._cpu_ns
        self._self_cpu_ns += other._self_cpu_ns
        self._device_ns += other._device_ns
        self._self_device_ns += other._self_device_ns
        self.cpu_memory_usage += other.cpu_memory_usage
        self.self_cpu_memory_usage += other.self_cpu_memory_usage
        self.device_memory_usage += other.device_memory_usage
        self.self_device_memory_usage += other.self_device_memory_usage
        return self

    def __repr__(self):
        return (f"<FunctionEventAvg key={self.key} self_cpu_time={_time(self.self_cpu_time_total)}"
                f" cpu_time={_time(self.cpu_time_total)} self_cuda_time="
                f"{_time(self.self_device_time_total)} cuda_time={_time(self.device_time_total)}"
                f" input_shapes={self.input_shapes or ''} cpu_memory_usage="
                f"{self.cpu_memory_usage} cuda_memory_usage={self.device_memory_usage}>")


class EventList(list):
    """A list of events or of averages, with PyTorch's `table`, `key_averages`,
    `total_average` and `self_cpu_time_total`."""

    def __init__(self, events=(), use_device=None, profile_memory=False, exporter=None):
        super().__init__(events)
        self.use_device = use_device
        self.profile_memory = profile_memory
        self._exporter = exporter

    def _like(self, items):
        return EventList(items, self.use_device, self.profile_memory)

    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0):
        """One Average per name (and input shapes, and the first `group_by_stack_n` frames of
        the stack, when asked), in order of first appearance."""
        groups = {}
        for event in self:
            key = [event.key]
            shapes = stack = None
            if group_by_input_shape:
                shapes = event.input_shapes or []
                key.append(str(shapes))
            if group_by_stack_n > 0:
                stack = list(event.stack or ())[:group_by_stack_n]
                key.append(tuple(stack))
            key = tuple(key)
            average = groups.get(key)
            if average is None:
                average = groups[key] = Average(event.key, input_shapes=shapes, stack=stack)
            average.add(event)
        return self._like(groups.values())

    def total_average(self):
        """Everything added into one Average named "Total"."""
        total = Average("Total")
        for event in self:
            total.add(event)
        return total

    @property
    def self_cpu_time_total(self):
        return sum(event.self_cpu_time_total for event in self)

    def export_chrome_trace(self, path):
        """Write the events in the Chrome trace format (only for `profile.events()`)."""
        if self._exporter is None:
            raise RuntimeError(
                "kit.profiler: export_chrome_trace needs the events themselves, not averages; "
                "call it on the profile (prof.export_chrome_trace(path)) or on prof.events()"
            )
        self._exporter(path)

    def table(self, sort_by=None, row_limit=100, max_src_column_width=75,
              max_name_column_width=55, max_shapes_column_width=80, header=None,
              top_level_events_only=False, time_unit=None):
        """The text table PyTorch prints: one row per entry, sorted by `sort_by` (largest
        first), at most `row_limit` rows."""
        return _table(self, sort_by, row_limit, max_src_column_width, max_name_column_width,
                      max_shapes_column_width, header, top_level_events_only, time_unit)

    def __str__(self):
        return self.table()


def _sort_key(sort_by):
    key = sort_by.replace("cuda", "device")
    if key not in SORT_KEYS:
        raise ValueError(
            f"kit.profiler: cannot sort by {sort_by!r}. Fix: sort_by one of "
            f"{', '.join(SORT_KEYS)} (a 'cuda_' name means the 'device_' one)"
        )
    return key


def _table(events, sort_by, row_limit, max_src_width, max_name_width, max_shapes_width, header,
           top_level_only, time_unit):
    if not events:
        return ""
    device = (events.use_device or "cuda").upper()
    profile_memory = events.profile_memory
    if sort_by is not None:
        key = _sort_key(sort_by)
        events = sorted(events, key=lambda e: getattr(e, key), reverse=True)
    has_device_time = any(e.self_device_time_total > 0 for e in events)
    has_device_mem = any(e.self_device_memory_usage > 0 for e in events)
    has_shapes = any(e.input_shapes for e in events)
    has_stack = any(e.stack for e in events)

    widths, headers = [], []

    def column(title, width):
        headers.append(title)
        widths.append(width)

    name_width = max(len(e.key) for e in events) + 4
    if max_name_width is not None:
        name_width = min(name_width, max_name_width)
    column("Name", name_width)
    for title in ("Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg"):
        column(title, 12)
    if has_device_time:
        for title in (f"Self {device}", f"Self {device} %", f"{device} total",
                      f"{device} time avg"):
            column(title, 12)
    if profile_memory:
        column("CPU Mem", 12)
        column("Self CPU Mem", 12)
        if has_device_mem:
            column(f"{device} Mem", 12)
            column(f"Self {device} Mem", 12)
    column("# of Calls", 12)
    if has_shapes:
        shapes_width = max(len(str(e.input_shapes)) for e in events) + 4
        if max_shapes_width is not None:
            shapes_width = min(shapes_width, max_shapes_width)
        column("Input Shapes", shapes_width)
    if has_stack:
        src_width = max(len(line) for e in events for line in e.stack or ()) + 4
        if max_src_width is not None:
            src_width = min(src_width, max_src_width)
        column("Source Location", src_width)

    def row(values):
        cells = []
        for i, (value, width) in enumerate(zip(values, widths, strict=True)):
            align = "<" if has_stack and i == len(widths) - 1 else ">"
            cells.append(f"{value!s:{align}{width}}  ")
        return "".join(cells)

    separator = "".join("-" * w + "  " for w in widths)
    line_length = sum(w + 2 for w in widths) - 2
    self_cpu_total = sum(e.self_cpu_time_total for e in events)
    self_device_total = sum(e.self_device_time_total for e in events)
    lines = []
    if header is not None:
        lines += ["=" * line_length, header]
    if top_level_only:
        lines += ["=" * line_length, "This report only display top-level ops statistics"]
    lines += [separator, row(headers), separator]
    shown = 0
    for e in events:
        if shown == row_limit:
            break
        if top_level_only and e.cpu_parent is not None:
            continue
        shown += 1
        name = e.key
        if max_name_width is not None and len(name) >= max_name_width - 3:
            name = name[: max_name_width - 3] + "..."
        values = [name, _share(e.self_cpu_time_total, self_cpu_total),
                  _time(e.self_cpu_time_total, time_unit),
                  _share(e.cpu_time_total, self_cpu_total), _time(e.cpu_time_total, time_unit),
                  _time(e.cpu_time, time_unit)]
        if has_device_time:
            values += [_time(e.self_device_time_total, time_unit),
                       _share(e.self_device_time_total, self_device_total),
                       _time(e.device_time_total, time_unit), _time(e.device_time, time_unit)]
        if profile_memory:
            values += [_memory(e.cpu_memory_usage), _memory(e.self_cpu_memory_usage)]
            if has_device_mem:
                values += [_memory(e.device_memory_usage), _memory(e.self_device_memory_usage)]
        values.append(e.count)
        if has_shapes:
            values.append(str(e.input_shapes)[:shapes_width])
        if has_stack:
            stack = list(e.stack or ())
            values.append(_trim(stack[0], src_width) if stack else "")
        lines.append(row(values))
        if has_stack:
            blank = [""] * (len(widths) - 1)
            lines += [row(blank + [_trim(entry, src_width)]) for entry in stack[1:]]
            lines.append(row(blank + [""]))
    lines.append(separator)
    lines.append(f"Self CPU time total: {_time(self_cpu_total, time_unit)}")
    if has_device_time:
        lines.append(f"Self {device} time total: {_time(self_device_total, time_unit)}")
    return "\n".join(lines) + "\n"


def _time(us, unit=None):
    """Microseconds as PyTorch prints them."""
    if unit == "s" or (unit is None and us >= 1e6):
        return f"{us / 1e6:.3f}s"
    if unit == "ms" or (unit is None and us >= 1e3):
        return f"{us / 1e3:.3f}ms"
    return f"{us:.3f}us"


def _share(us, total):
    if total == 0:
        return "NaN"
    return f"{us * 100.0 / total:.2f}%"


def _memory(nbytes):
    for unit, size in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if abs(nbytes) >= size:
            return f"{nbytes / size:.2f} {unit}"
    return f"{nbytes} B"


def _trim(path, width):
    if len(path) > width:
        path = "..." + path[len(path) - width + 3:]
    return path
