"""`torch.profiler` on kit's profiler (kit.profiler): profile, record_function, schedule,
ProfilerActivity, ProfilerAction, tensorboard_trace_handler, supported_activities.

Tables and traces name things as PyTorch does: a built-in op's forward as its ATen name
(`aten::mul`), a backward node as its grad_fn (`MulBackward0`), a custom Function by its class
(`Square`, `SquareBackward`). kit has no separate kernel library below its ops, so each op is one
row (PyTorch shows `aten::matmul` calling `aten::mm`).

>>> import kit.torch as torch
>>> from kit.torch.profiler import profile, ProfilerActivity
>>> x = torch.ones(3, requires_grad=True)
>>> with profile(activities=[ProfilerActivity.CPU]) as prof:
...     (x * 2).sum().backward()
>>> [e.key for e in prof.key_averages()]
['aten::mul', 'aten::sum', 'SumBackward0', 'MulBackward0']
"""

from __future__ import annotations

import enum
import os
import socket
import time

from kit import backend
from kit import profiler as _core
from kit.ops._registry import OPS
from kit.profiler import ProfilerAction, record_function, schedule

__all__ = [
    "ProfilerAction", "ProfilerActivity", "profile", "record_function", "schedule",
    "supported_activities", "tensorboard_trace_handler",
]


class ProfilerActivity(enum.Enum):
    """What to profile: the CPU's ops, and the GPU's work (timed with CUDA events)."""

    CPU = 0
    CUDA = 2


def supported_activities():
    """The activities this machine can profile: the CPU, and CUDA when a GPU is usable."""
    found = {ProfilerActivity.CPU}
    if backend.gpu_available():
        found.add(ProfilerActivity.CUDA)
    return found


_ATEN = {}


def torch_spelling(event):
    """(name, category) as PyTorch shows an event."""
    if event.kind == "op" and event.phase == "forward":
        name = _ATEN.get(event.op)
        if name is None:
            declared = OPS.get(event.op)
            base = event.op if declared is None else declared.profile or (
                declared.torch[0] if declared.torch else event.op)
            name = _ATEN[event.op] = f"aten::{base}"
        return name, None
    return event.name, None


def _refuse(**options):
    for option, value in options.items():
        if value:
            raise NotImplementedError(
                f"kit.torch.profiler: {option} is not supported (kit counts no FLOPs, records no "
                f"module hierarchy and has no Kineto settings). Fix: leave it out; mark parts "
                f"of the model with record_function('name') to see them as rows"
            )


class profile(_core.profile):  # noqa: N801 - PyTorch's name
    """PyTorch's `torch.profiler.profile`, on kit's ops (see kit.profiler.profile).

    `activities`: ProfilerActivity.CPU and .CUDA (default: what `supported_activities()` finds);
    CUDA on a machine without a GPU records the CPU only, as code written for either runs here.
    """

    spelling = staticmethod(torch_spelling)

    def __init__(self, *, activities=None, schedule=None, on_trace_ready=None,
                 record_shapes=False, profile_memory=False, with_stack=False, with_flops=False,
                 with_modules=False, experimental_config=None, execution_trace_observer=None,
                 acc_events=False, use_cuda=None):
        _refuse(with_flops=with_flops, with_modules=with_modules,
                experimental_config=experimental_config,
                execution_trace_observer=execution_trace_observer)
        activities = supported_activities() if activities is None else set(activities)
        for activity in activities:
            if not isinstance(activity, ProfilerActivity):
                raise ValueError(
                    f"kit.torch.profiler.profile: unknown activity {activity!r}. Fix: "
                    f"activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]"
                )
        cuda = (ProfilerActivity.CUDA in activities or bool(use_cuda)) and (
            backend.gpu_available())
        super().__init__(cuda=cuda, record_shapes=record_shapes, profile_memory=profile_memory,
                         with_stack=with_stack, schedule=schedule, on_trace_ready=on_trace_ready,
                         acc_events=acc_events)
        self.activities = activities


def tensorboard_trace_handler(dir_name, worker_name=None, use_gzip=False):
    """An `on_trace_ready` that writes each saved trace into `dir_name` as
    `{worker_name}.{time_ns}.pt.trace.json` (`.gz` with use_gzip), as PyTorch names them for
    TensorBoard's profiler plugin; worker_name defaults to "{hostname}_{pid}"."""
    worker = worker_name or f"{socket.gethostname()}_{os.getpid()}"

    def handler(prof):
        os.makedirs(dir_name, exist_ok=True)
        name = f"{worker}.{time.time_ns()}.pt.trace.json"
        prof.export_chrome_trace(os.path.join(dir_name, name + (".gz" if use_gzip else "")))

    return handler
