"""kit.bench: time kit on the CPU and the GPU, correctly, and see where each one wins.

- `time_call(fn, device=...)`: warm-up, repeats, median and spread (IQR, MAD); CUDA events on the
  GPU, so an asynchronous launch is never mistaken for the work.
- `run_sweep(...)`: the standard workloads over sizes and devices, into a JSON-ready document with
  the machine, library versions and date (`save_json` / `load_json` / `validate`);
  `recordings()` reads the ones recorded on real GPUs (benchmarks/recorded/);
  `packaged_recording(name)` reads one shipped inside kit (kit/bench/recorded/, package data).
- `plot_sweep(doc, workload)`: time against size, log-log, one line per device, crossover marked.
- `fit_overhead_model`, `crossover_size`, `model_crossover`: the launch-overhead model
  `t = overhead + n / rate` and the size where the GPU starts to win.
- `evaluate_targets(doc)`: the project's GPU targets, "unmeasured" when the rows are missing.

From the command line: `python -m kit.bench --out bench.json` (add `--quick` for a smoke run).

>>> import kit.bench
>>> m = kit.bench.time_call(lambda: None, repeat=3)
>>> m.to_dict()["repeats"]
3
"""

from kit.bench.analysis import crossover_size, fit_overhead_model, model_crossover, model_time
from kit.bench.harness import CudaEventTimer, Measurement, WallTimer, time_call, timer_for
from kit.bench.plot import plot_data, plot_sweep, save_plots
from kit.bench.report import (
    find_row,
    library_versions,
    load_json,
    machine_info,
    packaged_recording,
    recordings,
    rows_for,
    save_json,
    validate,
)
from kit.bench.sweep import default_devices, plan, run_sweep
from kit.bench.targets import TARGETS, evaluate_targets
from kit.bench.workloads import WORKLOADS, Workload

__all__ = [
    "TARGETS", "WORKLOADS", "CudaEventTimer", "Measurement", "WallTimer", "Workload",
    "crossover_size", "default_devices", "evaluate_targets", "find_row", "fit_overhead_model",
    "library_versions", "load_json", "machine_info", "model_crossover", "model_time",
    "packaged_recording", "plan",
    "plot_data", "plot_sweep", "recordings", "rows_for", "run_sweep", "save_json", "save_plots",
    "time_call", "timer_for", "validate",
]
