"""kit.viz gradient-flow plots: the numbers behind each figure, and the thresholds flagged."""

import struct

import numpy as np
import pytest

import kit
from kit.viz import (
    EXPLODING,
    VANISHING,
    GradHistory,
    compare_grad_norms,
    grad_norms,
    plot_grad_histograms,
    plot_grad_history,
    plot_grad_norms,
)
from kit.viz._style import png_display_size


def _deep_net(depth, scale, activation, seed=0):
    """A square MLP built from kit ops; returns its weights after one backward."""
    kit.manual_seed(seed)
    weights = {f"W{i}": (kit.randn(16, 16) * scale).requires_grad_() for i in range(depth)}
    h = kit.randn(8, 16)
    for w in weights.values():
        h = getattr(kit, activation)(h @ w)
    h.sum().backward()
    return weights


def test_grad_norms_are_the_l2_norms_of_grad():
    weights = _deep_net(3, 0.5, "tanh")
    norms = grad_norms(weights)
    for name, w in weights.items():
        assert norms[name] == pytest.approx(float(np.linalg.norm(w.grad.numpy())))
    assert grad_norms({"unused": kit.ones(2, requires_grad=True)}) == {"unused": None}


def test_vanishing_sigmoid_stack_is_flagged():
    weights = _deep_net(12, 0.3, "sigmoid")
    plot = plot_grad_norms(weights)
    norms = plot.data["norms"]
    assert plot.data["names"] == list(weights)
    assert norms[0] < VANISHING < norms[-1]
    assert norms == sorted(norms)  # the gradient shrinks layer by layer towards the input
    assert "W0" in plot.data["vanishing"] and "W11" not in plot.data["vanishing"]
    assert plot.data["exploding"] == []
    data, metadata = plot._repr_png_()
    assert data[:4] == b"\x89PNG"
    # drawn with twice the pixels it is shown with (sharp on a 2x screen), proportions kept
    assert png_display_size(data) == (metadata["width"], metadata["height"]) == (576, 307)
    assert struct.unpack(">II", data[16:24]) == (1152, 614)
    assert repr(plot) == "<Plot: gradient norms of 12 parameters>"


def test_exploding_linear_stack_is_flagged():
    weights = _deep_net(12, 1.5, "tanh")
    exploding = {f"W{i}": (kit.randn(8, 8) * 3.0).requires_grad_() for i in range(10)}
    h = kit.randn(4, 8)
    for w in exploding.values():
        h = h @ w
    h.sum().backward()
    data = plot_grad_norms(exploding).data
    assert data["norms"][0] > EXPLODING and "W0" in data["exploding"]
    assert plot_grad_norms(grad_norms(weights)).data["names"] == list(weights)


def test_history_records_each_step():
    weights = _deep_net(4, 0.5, "tanh")
    history = GradHistory(weights)
    x = kit.randn(8, 16)
    for step in range(3):
        for w in weights.values():
            w.grad = None
        h = x
        for w in weights.values():
            h = (h @ w).tanh()
        (h.sum() * (step + 1)).backward()
        history.record()
    plot = plot_grad_history(history)
    assert plot.data["steps"] == [0, 1, 2]
    for values in plot.data["norms"].values():
        np.testing.assert_allclose(values, [values[0], 2 * values[0], 3 * values[0]], rtol=1e-5)


def test_the_loss_beside_the_history_marks_where_it_diverged():
    w = kit.tensor([1.0], requires_grad=True)
    history = GradHistory({"w": w})
    losses = [4.0, 1e3, float("inf"), float("nan")]
    for scale in (1.0, 1e2, 1e4, 1e6):
        w.grad = None
        (w * scale).sum().backward()
        history.record()
    plot = plot_grad_history(history, losses=losses)
    assert plot.data["diverged_at"] == 2 and plot.data["losses"][:2] == [4.0, 1e3]
    loss_ax, norms_ax = plot.figure.axes[:2]
    assert loss_ax.get_title() == "loss: inf or NaN from step 2"
    assert norms_ax.get_position().x0 > loss_ax.get_position().x1  # side by side
    assert png_display_size(plot.png()) == (922, 307)  # 9.6 x 3.2 inches at 96 dpi
    assert plot_grad_history(history, losses=[1.0] * 4).data["diverged_at"] is None
    with pytest.raises(ValueError, match="3 losses for 4 recorded steps"):
        plot_grad_history(history, losses=[1.0] * 3)


def test_compare_grad_norms_draws_one_line_per_network():
    plain = _deep_net(8, 1.0, "sigmoid")
    runs = {"plain": plain, "given": {"W0": 1e-7, "W1": 1e4}}
    plot = compare_grad_norms(runs)
    assert plot.data["norms"]["plain"] == list(grad_norms(plain).values())
    assert plot.data["vanishing"]["given"] == ["W0"] and plot.data["exploding"]["given"] == ["W1"]
    lines = [line for line in plot.figure.axes[0].get_lines() if line.get_label() in runs]
    assert [line.get_label() for line in lines] == ["plain", "given"]
    legend = plot.figure.axes[0].get_legend()
    assert legend.get_bbox_to_anchor().x0 >= plot.figure.axes[0].bbox.x1  # beside, not over


def test_histograms_count_every_nonzero_element():
    weights = _deep_net(3, 0.5, "relu")
    plot = plot_grad_histograms(weights, bins=20)
    assert len(plot.data["edges"]) == 21
    for name, w in weights.items():
        nonzero = int((w.grad.numpy() != 0).sum())
        assert sum(plot.data["counts"][name]) == nonzero
        assert plot.data["zeros"][name] == w.grad.numpy().size - nonzero
    assert plot.data["edges"][0] <= np.log10(VANISHING) - 1


def test_errors_name_the_fix():
    with pytest.raises(ValueError, match="call backward"):
        plot_grad_histograms({"w": kit.ones(2, requires_grad=True)})
    with pytest.raises(TypeError, match="parameter 'w' is a list"):
        grad_norms({"w": [1.0]})
