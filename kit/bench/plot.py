"""Log-log plots of time against size, one line per device, with the crossover marked."""

from __future__ import annotations

from kit.bench.analysis import crossover_size
from kit.bench.report import rows_for
from kit.bench.workloads import WORKLOADS


def plot_data(doc: dict, workload: str) -> dict:
    """What `plot_sweep` draws: per device the sizes, medians and quartiles, and the crossover
    (the size from which the GPU stays faster, on the sizes both devices measured; None if it
    never does or there is only one device).

    >>> from kit.bench.sweep import run_sweep
    >>> doc = run_sweep(["device_copy"], ["cpu"], sizes=[256, 4096], repeat=3, max_seconds=0.01)
    >>> data = plot_data(doc, "device_copy")
    >>> sorted(data["series"]), data["series"]["cpu"]["sizes"], data["crossover"]
    (['cpu'], [256, 4096], None)
    """
    series = {}
    for device in ("cpu", "gpu"):
        rows = rows_for(doc, workload, device)
        if rows:
            series[device] = {key: [r[field] for r in rows] for key, field in (
                ("sizes", "size"), ("median", "median_s"), ("q1", "q1_s"), ("q3", "q3_s"))}
    crossover = None
    if len(series) == 2:
        cpu = dict(zip(series["cpu"]["sizes"], series["cpu"]["median"], strict=True))
        gpu = dict(zip(series["gpu"]["sizes"], series["gpu"]["median"], strict=True))
        common = sorted(set(cpu) & set(gpu))
        if common:
            crossover = crossover_size(common, [cpu[n] for n in common], [gpu[n] for n in common])
    size_name = WORKLOADS[workload].size_name if workload in WORKLOADS else "size"
    return {"workload": workload, "size_name": size_name, "series": series,
            "crossover": crossover}


def plot_sweep(doc: dict, workload: str, ax=None, models=None):
    """Draw `plot_data(doc, workload)` on `ax` (a new figure if None); returns the axes.

    `models` maps a label to (sizes, times) drawn as dashed lines, e.g. a fitted overhead model.
    """
    import matplotlib.pyplot as plt

    data = plot_data(doc, workload)
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 4))
    for device, s in data["series"].items():
        lower = [m - q for m, q in zip(s["median"], s["q1"], strict=True)]
        upper = [q - m for m, q in zip(s["median"], s["q3"], strict=True)]
        ax.errorbar(s["sizes"], s["median"], yerr=[lower, upper], marker="o", capsize=3,
                    label=f"{device} (median, IQR)")
    for label, (sizes, times) in (models or {}).items():
        ax.plot(sizes, times, linestyle="--", label=label)
    if data["crossover"] is not None:
        ax.axvline(data["crossover"], color="gray", linestyle=":")
        ax.annotate(f"crossover ~{data['crossover']:.3g}", (data["crossover"], 0.5),
                    xycoords=("data", "axes fraction"), rotation=90, ha="right", va="center")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(data["size_name"])
    ax.set_ylabel("seconds per call")
    ax.set_title(workload)
    # Time grows with size, so the top left is the corner the curves leave empty.
    ax.legend(fontsize="small", loc="upper left")
    return ax


def save_plots(doc: dict, path) -> list:
    """One panel per workload in the document, saved as an image at `path`; returns the
    workloads drawn."""
    from matplotlib.figure import Figure  # no pyplot: no GUI backend, no global figure state

    names = list(dict.fromkeys(r["workload"] for r in doc["results"]))
    if not names:
        raise ValueError("kit.bench: nothing to plot, the document has no results")
    cols = min(3, len(names))
    rows = -(-len(names) // cols)
    fig = Figure(figsize=(5 * cols, 3.6 * rows))
    axes = fig.subplots(rows, cols, squeeze=False)
    for ax, name in zip(axes.flat, names, strict=False):
        plot_sweep(doc, name, ax=ax)
    for ax in list(axes.flat)[len(names):]:
        ax.set_visible(False)
    machine = doc["machine"]
    gpu = (machine.get("gpu") or {}).get("name", "no GPU")
    fig.suptitle(f"kit.bench on {machine['cpu']} ({machine['cores']} cores), {gpu}, "
                 f"{doc['date'][:10]}")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    return names
