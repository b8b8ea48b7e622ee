"""`python -m kit.bench`: run the standard sweep, show progress on stderr, write JSON.

    python -m kit.bench --out bench.json             # every workload, every usable device
    python -m kit.bench --quick --out quick.json     # small sizes, a few seconds on a CPU
    python -m kit.bench --workloads matmul,mlp --devices gpu --plot bench.png
"""

from __future__ import annotations

import argparse
import sys
import time

from kit.bench.plot import plot_data, save_plots
from kit.bench.report import save_json
from kit.bench.sweep import run_sweep
from kit.bench.workloads import WORKLOADS


class ProgressBar:
    """A plain-text progress bar; redraws one line on a terminal, prints lines otherwise."""

    def __init__(self, stream=sys.stderr, width=30):
        self.stream = stream
        self.width = width
        self.tty = hasattr(stream, "isatty") and stream.isatty()
        self.start = time.perf_counter()

    def __call__(self, done, total, label):
        filled = self.width * done // max(total, 1)
        bar = "#" * filled + "." * (self.width - filled)
        elapsed = time.perf_counter() - self.start
        line = f"[{bar}] {done}/{total} {elapsed:5.1f}s {label}"
        if self.tty:
            self.stream.write("\r" + line.ljust(100)[:100] + ("\n" if done == total else ""))
        else:
            self.stream.write(line + "\n")
        self.stream.flush()


def _csv(text):
    return [part.strip() for part in text.split(",") if part.strip()]


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m kit.bench", description="Time kit's standard workloads on CPU and GPU.")
    parser.add_argument("--out", default="bench.json", help="results JSON (default bench.json)")
    parser.add_argument("--quick", action="store_true",
                        help="small sizes and few repeats: a smoke run of a few seconds")
    parser.add_argument("--workloads", type=_csv, default=None,
                        help=f"comma-separated subset of: {', '.join(WORKLOADS)}")
    parser.add_argument("--devices", type=_csv, default=None,
                        help="comma-separated devices (default: cpu, plus gpu when usable)")
    parser.add_argument("--repeat", type=int, default=None, help="timed repeats per point")
    parser.add_argument("--max-seconds", type=float, default=None,
                        help="stop repeating a point after this long (at least 3 repeats)")
    parser.add_argument("--plot", default=None, help="also save a PNG of all workloads here")
    return parser.parse_args(argv)


def summary(doc) -> str:
    """A short text report: the crossover of each workload and the status of each target."""
    lines = []
    for name in dict.fromkeys(r["workload"] for r in doc["results"]):
        data = plot_data(doc, name)
        if len(data["series"]) == 2:
            x = data["crossover"]
            where = f"from ~{x:.3g} {data['size_name']}" if x is not None else "never (in range)"
            lines.append(f"  {name}: GPU faster {where}")
    lines.append("targets:")
    lines += [f"  {t['name']}: {t['status']} - {t['detail']}" for t in doc["targets"]]
    return "\n".join(lines)


def main(argv=None) -> int:
    args = parse_args(argv)
    timing = {k: v for k, v in (("repeat", args.repeat), ("max_seconds", args.max_seconds))
              if v is not None}
    try:
        doc = run_sweep(args.workloads, args.devices, quick=args.quick, progress=ProgressBar(),
                        **timing)
    except (ValueError, RuntimeError) as exc:
        print(f"kit.bench: {exc}", file=sys.stderr)
        return 2
    save_json(doc, args.out)
    print(f"wrote {len(doc['results'])} timings to {args.out}")
    if args.plot:
        save_plots(doc, args.plot)
        print(f"wrote the plot to {args.plot}")
    print(summary(doc))
    return 0


if __name__ == "__main__":
    sys.exit(main())
