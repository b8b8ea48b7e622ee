"""A gradient check you can see: analytical and numerical Jacobians side by side, and where they
differ as a heat map. Uses kit.gradcheck's own Jacobians and tolerance rule
(|analytical - numerical| <= atol + rtol * |numerical|), in float64 as kit.gradcheck does."""

from __future__ import annotations

import html

import numpy as np

import kit
from kit.gradcheck import analytical_jacobian, as_float64, numerical_jacobian
from kit.viz._style import Plot, fmt_number, new_figure
from kit.viz.widgets import View


def gradcheck_view(fn, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3):
    """Compare the backward of `fn` (a function of Tensors, or a Function class) with central
    differences; a slider changes the finite-difference step, a menu the (output, input) block.

    >>> import kit
    >>> x = kit.tensor([0.5, -1.0, 2.0], requires_grad=True)
    >>> view = gradcheck_view(kit.tanh, (x,))
    >>> view.result.data["passed"]
    True
    """
    return GradcheckView(fn, inputs, eps, atol, rtol)


class GradcheckView(View):
    """The gradient-check widget; see `gradcheck_view`."""

    def __init__(self, fn, inputs, eps=1e-6, atol=1e-5, rtol=1e-3):
        import ipywidgets as w

        is_function = isinstance(fn, type) and issubclass(fn, kit.Function)
        self.func = fn.apply if is_function else fn
        self.label = fn.__name__ if hasattr(fn, "__name__") else type(fn).__name__
        inputs = inputs if isinstance(inputs, (tuple, list)) else (inputs,)
        self.inputs = as_float64(inputs, warn=False)
        if not any(isinstance(x, kit.Tensor) and x.requires_grad for x in self.inputs):
            raise ValueError(
                f"kit.viz.gradcheck_view: no input of {self.label} requires grad, so there is no "
                f"Jacobian to check. Fix: create the inputs with requires_grad=True"
            )
        self.atol, self.rtol = atol, rtol
        self.analytical = analytical_jacobian(self.func, self.inputs)
        self.blocks = [(o, i) for o, row in enumerate(self.analytical)
                       for i, block in enumerate(row) if block is not None]
        self._numerical = {}
        self.eps = w.FloatLogSlider(value=eps, base=10, min=-12, max=-1, step=0.25,
                                    description="eps", readout_format=".0e")
        self.block = w.Dropdown(options=[(f"output {o}, input {i}", (o, i))
                                         for o, i in self.blocks],
                                value=self.blocks[0], description="block")
        self.summary = w.HTML()
        self.image = w.Image(format="png")
        self.eps.observe(self._update, names="value")
        self.block.observe(self._update, names="value")
        controls = [self.eps] + ([self.block] if len(self.blocks) > 1 else [])
        self.widget = w.VBox([w.HBox(controls), self.summary, self.image])
        self.result = None
        self._update()

    def numerical(self, eps):
        """Central-difference Jacobians with step `eps` (cached per step)."""
        if eps not in self._numerical:
            self._numerical[eps] = numerical_jacobian(self.func, self.inputs, eps)
        return self._numerical[eps]

    def render(self, eps=None, block=None):
        """The figure and numbers for one (output, input) block at step `eps`: a `Plot` whose
        `.data` holds analytical, numerical, difference, max_abs_diff, worst, passed."""
        eps = self.eps.value if eps is None else eps
        o, i = block or self.block.value
        a = self.analytical[o][i]
        n = self.numerical(eps)[o][i]
        diff = a - n
        excess = np.abs(diff) - (self.atol + self.rtol * np.abs(n))
        worst = np.unravel_index(int(np.argmax(np.abs(diff))), diff.shape) if diff.size else ()
        passed = bool(excess.max() <= 0) if excess.size else True
        data = {"analytical": a, "numerical": n, "difference": diff, "eps": eps, "block": (o, i),
                "max_abs_diff": float(np.abs(diff).max()) if diff.size else 0.0,
                "worst": tuple(int(k) for k in worst), "passed": passed}
        figure = new_figure(9.0, 3.0)
        axes = figure.subplots(1, 3)
        scale = max(float(np.abs(a).max(initial=0)), float(np.abs(n).max(initial=0)), 1e-12)
        for ax, matrix, title in ((axes[0], a, "analytical (backward)"),
                                  (axes[1], n, f"numerical (eps={eps:.0e})")):
            image = ax.imshow(matrix, cmap="RdBu_r", vmin=-scale, vmax=scale)
            ax.set_title(title, fontsize=10)
        figure.colorbar(image, ax=axes[:2], shrink=0.8)
        heat = axes[2].imshow(np.abs(diff), cmap="magma")
        axes[2].set_title("|analytical - numerical|", fontsize=10)
        figure.colorbar(heat, ax=axes[2], shrink=0.8)
        for ax in axes:
            ax.set_xlabel(f"input {i} element")
            ax.set_ylabel(f"output {o} element")
        verdict = "passes" if passed else "FAILS"
        figure.suptitle(f"{self.label}: gradcheck {verdict} (max |diff| "
                        f"{fmt_number(data['max_abs_diff'])}, float64)", fontsize=11)
        return Plot(figure, data, f"gradcheck of {self.label}, output {o}, input {i}")

    def static(self):
        """The default block at the default step, as a plain figure."""
        return self.render()

    def current(self):
        """The figure shown now (what a saved notebook shows)."""
        return self.result

    def _update(self, change=None):
        self.result = self.render()
        data = self.result.data
        self.summary.value = (
            f"<pre>{html.escape(self.label)}: output {data['block'][0]}, input "
            f"{data['block'][1]}: max |analytical - numerical| = "
            f"{fmt_number(data['max_abs_diff'])} at {data['worst']}; "
            f"{'passes' if data['passed'] else 'fails'} atol={self.atol}, rtol={self.rtol}</pre>"
        )
        self.result.show_in(self.image)
