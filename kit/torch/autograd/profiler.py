"""`torch.autograd.profiler`: PyTorch's older spelling of the profiler (kit.profiler underneath).

    with torch.autograd.profiler.profile(record_shapes=True) as prof:
        model(x).sum().backward()
    print(prof.table(sort_by="self_cpu_time_total"))
"""

from __future__ import annotations

from kit.profiler import record_function
from kit.torch.profiler import _refuse
from kit.torch.profiler import profile as _profile

__all__ = ["profile", "record_function"]


class profile(_profile):  # noqa: N801 - PyTorch's name
    """`torch.autograd.profiler.profile(enabled=True, *, use_cuda=False, record_shapes=False,
    profile_memory=False, with_stack=False)`; `enabled=False` records nothing."""

    def __init__(self, enabled=True, *, use_cuda=False, use_device=None, record_shapes=False,
                 with_flops=False, profile_memory=False, with_stack=False, with_modules=False,
                 use_kineto=False, use_cpu=True, acc_events=False):
        _refuse(with_flops=with_flops, with_modules=with_modules)
        self.enabled = enabled
        use_cuda = use_cuda or use_device in ("cuda", "gpu")
        super().__init__(record_shapes=record_shapes, profile_memory=profile_memory,
                         with_stack=with_stack, use_cuda=use_cuda, acc_events=acc_events,
                         activities=())

    def start(self):
        if self.enabled:
            super().start()

    def stop(self):
        if self.enabled:
            super().stop()

    @property
    def function_events(self):
        """Every event recorded (an EventList)."""
        return self.events()

    @property
    def self_cpu_time_total(self):
        return self.events().self_cpu_time_total

    def total_average(self):
        return self.events().total_average()

    def table(self, sort_by=None, row_limit=100, max_src_column_width=75,
              max_name_column_width=55, max_shapes_column_width=80, header=None,
              top_level_events_only=False):
        """`key_averages().table(...)`: PyTorch's table of the events added up per name."""
        return self.key_averages().table(
            sort_by, row_limit, max_src_column_width, max_name_column_width,
            max_shapes_column_width, header, top_level_events_only)

    def __str__(self):
        return self.table()
