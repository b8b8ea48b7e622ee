"""Gradient-flow plots: how big the gradients of each layer are, and how that changes in training.

Each function returns a `Plot`: `.figure` (matplotlib) and `.data`, the numbers plotted, so a lesson
can assert on what the picture shows. Norms below `vanishing` or above `exploding` are flagged.
"""

from __future__ import annotations

import math

import numpy as np

from kit._tensor import Tensor
from kit.viz._style import EXPLODING, VANISHING, Plot, grad_colour, host, new_figure, norm


def named_parameters(params):
    """(name, Tensor) pairs from a dict, a list of Tensors, or an object with named_parameters()."""
    if hasattr(params, "named_parameters"):
        pairs = list(params.named_parameters())
    elif isinstance(params, dict):
        pairs = list(params.items())
    else:
        pairs = [(str(i), t) for i, t in enumerate(params)]
    for name, t in pairs:
        if not isinstance(t, Tensor):
            raise TypeError(
                f"kit.viz: parameter {name!r} is a {type(t).__name__}; expected a kit Tensor "
                f"(pass a dict name -> Tensor, a list of Tensors or a module)"
            )
    return pairs


def grad_norms(params):
    """{name: L2 norm of its .grad} (None where .grad is None).

    >>> import kit
    >>> w = kit.tensor([3.0, 4.0], requires_grad=True)
    >>> (w * w).sum().backward()
    >>> grad_norms({"w": w})
    {'w': 10.0}
    """
    return {name: None if t.grad is None else norm(t.grad._data)
            for name, t in named_parameters(params)}


def _norms_of(params):
    """{name: norm}: the norms themselves if given, else the gradient norms of the parameters."""
    if isinstance(params, dict) and all(v is None or isinstance(v, float)
                                        for v in params.values()):
        return dict(params)
    return grad_norms(params)


def _flags(norms, vanishing, exploding):
    return {
        "vanishing": [k for k, v in norms.items() if v is not None and v < vanishing],
        "exploding": [k for k, v in norms.items() if v is not None and v > exploding],
    }


def _thresholds(ax, vanishing, exploding, axis="y"):
    """Shade the vanishing (blue) and exploding (red) zones of a log axis."""
    line = ax.axhline if axis == "y" else ax.axvline
    span = ax.axhspan if axis == "y" else ax.axvspan
    lo, hi = (ax.get_ylim() if axis == "y" else ax.get_xlim())
    line(vanishing, color=grad_colour(vanishing / 1e3), linestyle="--", linewidth=1,
         label=f"vanishing < {vanishing:.0e}")
    line(exploding, color=grad_colour(exploding * 1e3), linestyle="--", linewidth=1,
         label=f"exploding > {exploding:.0e}")
    span(min(lo, vanishing / 10), vanishing, color=grad_colour(vanishing / 1e3), alpha=0.08)
    span(exploding, max(hi, exploding * 10), color=grad_colour(exploding * 1e3), alpha=0.08)


def _legend_beside(ax, **kwargs):
    """The legend to the right of the axes, where it cannot cover a bar or a line."""
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0, **kwargs)


def _log_limits(values, vanishing, exploding):
    finite = [v for v in values if v is not None and v > 0 and math.isfinite(v)]
    lo = min(finite + [vanishing]) / 10
    hi = max(finite + [exploding]) * 10
    return lo, hi


def plot_grad_norms(params, vanishing=VANISHING, exploding=EXPLODING, title=None):
    """Bar chart of the gradient norm of each parameter (after backward), on a log scale.

    `params` is a dict name -> Tensor, a list of Tensors, a module, or already a dict of norms.
    `.data`: {"names", "norms", "vanishing" (names below the threshold), "exploding"}.

    >>> plot_grad_norms({"W0": 1e-7, "W1": 0.5, "W2": 1e4}).data["vanishing"]
    ['W0']
    """
    norms = _norms_of(params)
    names = list(norms)
    figure = new_figure()
    ax = figure.add_subplot()
    heights = [v if v else np.nan for v in norms.values()]
    ax.bar(range(len(names)), heights, color=[grad_colour(v, vanishing, exploding)
                                              for v in norms.values()], edgecolor="#555555")
    ax.set_yscale("log")
    ax.set_ylim(*_log_limits(list(norms.values()), vanishing, exploding))
    _thresholds(ax, vanishing, exploding)
    ax.set_xticks(range(len(names)), names, rotation=45 if len(names) > 8 else 0, ha="right"
                  if len(names) > 8 else "center")
    ax.set_xlabel("parameter (input side first)")
    ax.set_ylabel("gradient norm")
    ax.set_title(title or "gradient norm per layer")
    _legend_beside(ax, fontsize=8)
    data = {"names": names, "norms": list(norms.values()),
            **_flags(norms, vanishing, exploding)}
    return Plot(figure, data, f"gradient norms of {len(names)} parameters")


class GradHistory:
    """Per-parameter gradient norms recorded across training steps.

    >>> import kit
    >>> w = kit.tensor([1.0], requires_grad=True)
    >>> history = GradHistory({"w": w})
    >>> for step in range(3):
    ...     w.grad = None
    ...     (w * (step + 1)).sum().backward()
    ...     history.record()
    >>> history.norms["w"]
    [1.0, 2.0, 3.0]
    """

    def __init__(self, params):
        self.params = dict(named_parameters(params))
        self.steps = []
        self.norms = {name: [] for name in self.params}

    def record(self, step=None):
        """Append the current gradient norms (call after backward, before zeroing .grad)."""
        self.steps.append(len(self.steps) if step is None else step)
        for name, value in grad_norms(self.params).items():
            self.norms[name].append(value)


def plot_grad_history(history, vanishing=VANISHING, exploding=EXPLODING, title=None,
                      losses=None):
    """One line per parameter: its gradient norm across the recorded steps (log scale).

    With `losses` (the loss at each recorded step) the loss is drawn in a panel to the left, so
    a divergence or a plateau is read against the gradients; a loss that stops being finite is
    marked where it happened.

    `.data`: {"steps", "norms" ({name: [norm per step]}), "vanishing", "exploding" (names whose
    last norm is past the threshold)}; with `losses` also "losses" and "diverged_at" (the first
    step whose loss is inf or NaN, or None).

    >>> import kit
    >>> w = kit.tensor([1.0], requires_grad=True)
    >>> history = GradHistory({"w": w})
    >>> (w * 1e4).sum().backward()
    >>> history.record()
    >>> plot_grad_history(history).data["exploding"]
    ['w']
    """
    if losses is None:
        figure = new_figure()
        ax = figure.add_subplot()
    else:
        if len(losses) != len(history.steps):
            raise ValueError(
                f"kit.viz.plot_grad_history: {len(losses)} losses for {len(history.steps)} "
                f"recorded steps; record the loss once per history.record()"
            )
        figure = new_figure(9.6, 3.2)
        loss_ax, ax = figure.subplots(1, 2, width_ratios=(2, 3))
        diverged_at = _plot_losses(loss_ax, history.steps, losses)
    for name, values in history.norms.items():
        ax.plot(history.steps, [v if v else np.nan for v in values], label=name, linewidth=1.5)
    if len(history.steps) > 1:  # every step, also those whose norms are inf or NaN
        ax.set_xlim(history.steps[0], history.steps[-1])
    if losses is not None and diverged_at is not None:
        ax.axvline(diverged_at, color=grad_colour(EXPLODING * 1e3), linestyle=":")
    ax.set_yscale("log")
    everything = [v for values in history.norms.values() for v in values]
    ax.set_ylim(*_log_limits(everything, vanishing, exploding))
    _thresholds(ax, vanishing, exploding)
    ax.set_xlabel("training step")
    ax.set_ylabel("gradient norm")
    ax.set_title(title or "gradient norm per layer during training")
    _legend_beside(ax, fontsize=7)
    last = {name: values[-1] if values else None for name, values in history.norms.items()}
    data = {"steps": list(history.steps),
            "norms": {k: list(v) for k, v in history.norms.items()},
            **_flags(last, vanishing, exploding)}
    if losses is not None:
        data.update(losses=[float(v) for v in losses], diverged_at=diverged_at)
    return Plot(figure, data, f"gradient norms of {len(last)} parameters over "
                              f"{len(history.steps)} steps")


def _plot_losses(ax, steps, losses):
    """The loss per step on a log axis; the first step where it is not finite is marked."""
    losses = [float(v) for v in losses]
    diverged_at = next((step for step, v in zip(steps, losses, strict=True)
                        if not math.isfinite(v)), None)
    ax.plot(steps, [v if math.isfinite(v) and v > 0 else np.nan for v in losses],
            color="#111827", linewidth=1.5)
    ax.set_yscale("log")
    if diverged_at is not None:
        ax.axvline(diverged_at, color=grad_colour(EXPLODING * 1e3), linestyle=":")
        ax.set_title(f"loss: inf or NaN from step {diverged_at}", fontsize=10)
    else:
        ax.set_title("loss", fontsize=10)
    if len(steps) > 1:
        ax.set_xlim(steps[0], steps[-1])
    ax.set_xlabel("training step")
    return diverged_at


def compare_grad_norms(runs, vanishing=VANISHING, exploding=EXPLODING, title=None):
    """One line per network: the gradient norm of each of its layers, input side first (log
    scale), to compare fixes on one picture. `runs` is {label: params or {name: norm}}, each as
    `plot_grad_norms` takes it.

    `.data`: {"norms" ({label: [norm per layer]}), "vanishing", "exploding" ({label: names past
    the threshold})}.

    >>> compare_grad_norms({"a": {"W0": 1e-7, "W1": 0.5}, "b": {"W0": 1.0, "W1": 2.0}}
    ...                    ).data["vanishing"]
    {'a': ['W0'], 'b': []}
    """
    from matplotlib.ticker import MaxNLocator

    figure = new_figure(7.2, 3.2)
    ax = figure.add_subplot()
    norms, flags = {}, {"vanishing": {}, "exploding": {}}
    for label, params in runs.items():
        run = _norms_of(params)
        norms[label] = list(run.values())
        for kind, names in _flags(run, vanishing, exploding).items():
            flags[kind][label] = names
        ax.plot(range(len(run)), [v if v else np.nan for v in run.values()], marker="o",
                markersize=3, linewidth=1.5, label=label)
    ax.set_yscale("log")
    ax.set_ylim(*_log_limits([v for run in norms.values() for v in run], vanishing, exploding))
    _thresholds(ax, vanishing, exploding)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("layer (input side first)")
    ax.set_ylabel("gradient norm")
    ax.set_title(title or "gradient norm per layer")
    _legend_beside(ax, fontsize=8)
    return Plot(figure, {"norms": norms, **flags}, f"gradient norms of {len(runs)} networks")


def plot_grad_histograms(params, bins=40, vanishing=VANISHING, exploding=EXPLODING, title=None):
    """Histograms of log10 |gradient element| per parameter, thresholds marked.

    `.data`: {"names", "edges" (log10 bin edges, shared), "counts" ({name: counts}),
    "zeros" ({name: number of exact zeros, which a log axis cannot show})}.

    >>> import kit
    >>> w = kit.tensor([1.0, -2.0, 0.0], requires_grad=True)
    >>> kit.relu(w).sum().backward()
    >>> plot_grad_histograms({"w": w}).data["zeros"]
    {'w': 2}
    """
    pairs = [(name, t) for name, t in named_parameters(params) if t.grad is not None]
    if not pairs:
        raise ValueError(
            "kit.viz.plot_grad_histograms: no parameter has a .grad yet. Fix: call backward() "
            "on the loss first"
        )
    magnitudes = {name: np.abs(host(t.grad._data).astype(np.float64).ravel()) for name, t in pairs}
    nonzero = np.concatenate([m[m > 0] for m in magnitudes.values()] + [np.ones(1)])
    lo = min(math.floor(np.log10(nonzero.min())), math.log10(vanishing) - 1)
    hi = max(math.ceil(np.log10(nonzero.max())), math.log10(exploding) + 1)
    edges = np.linspace(lo, hi, bins + 1)
    figure = new_figure()
    ax = figure.add_subplot()
    counts, zeros = {}, {}
    for name, m in magnitudes.items():
        counts[name], _ = np.histogram(np.log10(m[m > 0]), bins=edges)
        zeros[name] = int((m == 0).sum())
        ax.stairs(counts[name], 10.0 ** edges, label=name, linewidth=1.5)
    ax.set_xscale("log")
    _thresholds(ax, vanishing, exploding, axis="x")
    ax.set_xlabel("|gradient element|")
    ax.set_ylabel("count")
    ax.set_title(title or "distribution of gradient magnitudes")
    _legend_beside(ax, fontsize=7)
    data = {"names": list(counts), "edges": edges.tolist(),
            "counts": {k: v.tolist() for k, v in counts.items()}, "zeros": zeros}
    return Plot(figure, data, f"gradient histograms of {len(counts)} parameters")
