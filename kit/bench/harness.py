"""Timing one call properly: warm-up, repeats, robust statistics, and device synchronisation.

A GPU call returns as soon as its kernels are queued, so a wall clock around it measures the launch,
not the work. On device "gpu" each repeat is therefore timed with CUDA events recorded on the stream
before and after the calls: the elapsed time between them is the device's own. On the CPU the clock
is `time.perf_counter`; `sync` lets any other asynchronous executor be waited for before the clock
stops (the lesson uses it for a simulated one).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from kit import backend


@dataclass(frozen=True)
class Measurement:
    """Per-call times (seconds) of one timed function, with their summary statistics."""

    times: tuple
    number: int
    timer: str

    @property
    def median(self) -> float:
        return float(np.median(self.times))

    @property
    def q1(self) -> float:
        return float(np.percentile(self.times, 25))

    @property
    def q3(self) -> float:
        return float(np.percentile(self.times, 75))

    @property
    def iqr(self) -> float:
        """Interquartile range: the spread of the middle half, blind to a few outliers."""
        return self.q3 - self.q1

    @property
    def mad(self) -> float:
        """Median absolute deviation from the median."""
        return float(np.median(np.abs(np.asarray(self.times) - self.median)))

    def to_dict(self) -> dict:
        """The statistics as JSON-ready numbers (seconds per call)."""
        t = self.times
        return {
            "median_s": self.median, "q1_s": self.q1, "q3_s": self.q3, "iqr_s": self.iqr,
            "mad_s": self.mad, "min_s": float(min(t)), "max_s": float(max(t)),
            "mean_s": float(np.mean(t)), "repeats": len(t), "number": self.number,
            "timer": self.timer,
        }


class WallTimer:
    """Seconds taken by `number` calls on a host clock, waiting for `sync()` before stopping."""

    name = "perf_counter"

    def __init__(self, clock=time.perf_counter, sync=None):
        self.clock = clock
        self.sync = sync

    def measure(self, fn, number):
        start = self.clock()
        for _ in range(number):
            fn()
        if self.sync is not None:
            self.sync()
        return self.clock() - start


class CudaEventTimer:
    """Seconds between two CUDA events recorded around `number` calls on the current stream."""

    name = "cuda_event"

    def __init__(self):
        self.cupy = backend.require_gpu("timing on the GPU")

    def measure(self, fn, number):
        cuda = self.cupy.cuda
        start, end = cuda.Event(), cuda.Event()
        start.record()
        for _ in range(number):
            fn()
        end.record()
        end.synchronize()  # the host waits for the work, then reads the device's own clock
        return cuda.get_elapsed_time(start, end) / 1e3  # ms -> s


def timer_for(device, clock=time.perf_counter, sync=None):
    """CUDA events on "gpu", the host clock (plus `sync`) on "cpu"."""
    if backend.normalize_device(device) == "gpu":
        return CudaEventTimer()
    return WallTimer(clock, sync)


def time_call(fn, *, device="cpu", warmup=2, repeat=10, min_repeat=3, max_seconds=1.0,
              number=None, min_time=2e-4, clock=time.perf_counter, sync=None):
    """Time `fn()`: `warmup` untimed calls, then up to `repeat` timed repeats of `number` calls.

    Repeats stop early once `max_seconds` of timing have passed and `min_repeat` are done, so one
    slow size cannot stall a sweep. `number=None` picks it so one repeat lasts at least `min_time`
    (a single fast call is too short for the clock). Returns a `Measurement` of per-call times.

    >>> m = time_call(lambda: sum(range(100)), repeat=5)
    >>> m.median > 0 and len(m.times) == 5
    True
    """
    if repeat < 1 or min_repeat < 1 or warmup < 0:
        raise ValueError(
            f"kit.bench.time_call: need repeat >= 1, min_repeat >= 1 and warmup >= 0, got "
            f"repeat={repeat}, min_repeat={min_repeat}, warmup={warmup}"
        )
    timer = timer_for(device, clock, sync)
    for _ in range(warmup):
        fn()
    if number is None:
        first = timer.measure(fn, 1)
        number = 1 if first >= min_time else min(10_000, math.ceil(min_time / max(first, 1e-9)))
    times = []
    began = clock()
    while len(times) < repeat:
        times.append(timer.measure(fn, number) / number)
        if len(times) >= min_repeat and clock() - began > max_seconds:
            break
    return Measurement(tuple(times), number, timer.name)
