"""kit.profiler: where the time (and the memory) goes, op by op, forward and backward.

>>> import kit
>>> x = kit.tensor([1.0, 2.0, 3.0], requires_grad=True)
>>> with kit.profiler.profile() as prof:
...     with kit.profiler.record_function("loss"):
...         loss = (x * x).sum()
...     loss.backward()
>>> [(e.key, e.count) for e in prof.key_averages()]
[('loss', 1), ('mul', 1), ('sum', 1), ('SumBackward0', 1), ('MulBackward0', 1)]

Each primitive's forward, each backward node, each Function (a CustomOp too) and each
`record_function` range is an event: its thread, start and end, nested as they ran (self time is
what is not in nested events); with `record_shapes` its inputs' shapes, with `profile_memory` the
bytes of the new arrays it returned. `prof.key_averages().table()` prints PyTorch's table,
`prof.export_chrome_trace(path)` writes a trace that Perfetto (ui.perfetto.dev) or
chrome://tracing opens. On a GPU, CuPy runs ops asynchronously: the time an op takes on the
device is measured between CUDA events recorded around it (read once, at the end), so the CPU
columns show the launch and the device columns the work. Tensor creation (`kit.zeros`,
`kit.randn`) and in-place updates outside autograd (an optimiser's step) are not primitives, so
they are not rows of their own: wrap them in `record_function` to see them.

kit.torch spells it as `torch.profiler` (and `torch.autograd.profiler`), kit.mx as
`mx.profiler` (set_config, set_state, dumps, dump). Work kit cannot see op by op (a compiled
function's fused kernels) reports itself through `current()` (see kit/profiler/_record.py).
While no profiler runs, ops pay nothing: a running one is an entry on the thread's stack of
modes (kit/_modes.py) that routes the primitives' existing hook through it.
"""

from kit.profiler._record import Event, Recorder, current
from kit.profiler._session import ProfilerAction, profile, record_function, schedule
from kit.profiler._stats import Average, EventList

__all__ = [
    "Average", "Event", "EventList", "ProfilerAction", "Recorder", "current", "profile",
    "record_function", "schedule",
]
