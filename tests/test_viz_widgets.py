"""kit.viz widgets driven from Python: set slider values, click buttons, assert on the frames."""

import math

import numpy as np
import pytest

import kit
from kit.viz import explorer, gradcheck_view, step_backward
from kit.viz._style import png_display_size


def f(x, y):
    return x * y + x.sin()


def test_explorer_updates_value_partials_plot_and_graph_on_slider_change():
    ex = explorer(f, x=(-3, 3, 1.0), y=(-2, 2, 0.5))
    assert ex.frame.value == pytest.approx(0.5 + math.sin(1.0))
    ex.sliders["x"].value = 2.0
    ex.sliders["y"].value = -1.0
    frame = ex.frame
    assert frame.values == {"x": 2.0, "y": -1.0}
    assert frame.grads["x"] == pytest.approx(-1.0 + math.cos(2.0))
    assert frame.grads["y"] == pytest.approx(2.0)
    # the curve is f along x with y fixed, the tangent touches it at x with slope df/dx
    xs, ys = frame.curve
    np.testing.assert_allclose(ys, -xs + np.sin(xs))
    (tx, ty) = frame.tangent
    assert (ty[1] - ty[0]) / (tx[1] - tx[0]) == pytest.approx(frame.grads["x"])
    leaves = {n["attributes"]["name"]: n for n in frame.graph.find("tensor", role="leaf")}
    assert leaves["y"]["attributes"]["grad"] == pytest.approx(2.0)
    assert "df/dx" in ex.readout.value
    assert ex.plot_view.value[:4] == b"\x89PNG" and "<svg" in ex.graph_view.value


def test_explorer_plot_axis_and_static_fallback():
    ex = explorer(f, x=(-3, 3), y=(-2, 2, 0.5), plot="y")
    assert ex.frame.axis == "y" and ex.frame.values["x"] == 0.0
    ex.axis.value = "x"
    assert ex.frame.axis == "x"
    static = ex.static()
    assert static.values == {"x": 0.0, "y": 0.5} and static.png[:4] == b"\x89PNG"
    bundle = static._repr_mimebundle_()
    assert bundle["text/plain"].startswith("f(x=0, y=0.5) = 0")
    assert "data:image/png;base64," in bundle["text/html"]
    # the plot is drawn at twice its display size and shown at that size: sharp at 2x
    width, height = png_display_size(static.png)
    assert f'<img width="{width}" height="{height}" src="data:image/png' in bundle["text/html"]
    assert ex.plot_view.width == str(width)
    assert "data:image/svg+xml;base64," in bundle["text/html"]


def test_explorer_falls_back_to_point_by_point_curves():
    def g(x, y):
        return kit.stack([x, y]).max() * x  # stacking a vector with a scalar: not vectorisable

    ex = explorer(g, x=(-1, 1, 0.5), y=(-1, 1, 0.25))
    xs, ys = ex.frame.curve
    np.testing.assert_allclose(ys, np.maximum(xs, 0.25) * xs)
    assert ex.frame.grads["x"] == pytest.approx(1.0)  # max(x, y) = x here: d(x * x) / dx


def test_explorer_errors():
    with pytest.raises(TypeError, match="slider range"):
        explorer(f)
    with pytest.raises(ValueError, match="lo < hi"):
        explorer(f, x=(1, -1), y=(0, 1))
    with pytest.raises(ValueError, match="plot='z'"):
        explorer(f, x=(0, 1), y=(0, 1), plot="z")
    with pytest.raises(TypeError, match="one-element kit Tensor"):
        explorer(lambda x: kit.stack([x, x]), x=(0, 1))


def test_step_backward_walks_the_engine_order_with_buttons():
    a = kit.tensor(3.0, requires_grad=True)
    b = kit.tensor(2.0, requires_grad=True)
    sb = step_backward(a * b + a, params={"a": a, "b": b})
    assert sb.prev_button.disabled and not sb.next_button.disabled
    names = []
    for _ in range(len(sb.steps)):
        names.append(sb.frame.node_name.split(":")[0])
        sb.next_button.click()
    assert names[:2] == ["AddBackward0", "MulBackward0"]
    assert sorted(names[2:]) == ["AccumulateGrad", "AccumulateGrad"]
    assert sb.next_button.disabled and sb.index == len(sb.steps) - 1
    sb.prev_button.click()
    sb.go(1)
    frame = sb.frame
    assert frame.received == ["1"]
    assert frame.passed == [("leaf a", "2"), ("leaf b", "3")]
    marked = [n for n in frame.graph.nodes if n["attributes"].get("highlight")]
    assert [n["attributes"]["op"] for n in marked] == ["mul"]
    # only the steps taken so far have sent gradients: the leaves have none yet
    assert all("grad" not in n["attributes"] for n in frame.graph.find("tensor", role="leaf"))
    sb.go(len(sb.steps) - 1)
    leaf_grads = {n["attributes"]["name"]: n["attributes"].get("grad")
                  for n in sb.frame.graph.find("tensor", role="parameter")}
    assert leaf_grads == {"a": 3.0, "b": 3.0}  # d(ab + a)/da = b + 1, d/db = a
    assert "step 4 of 4" in sb.position.value


def test_step_backward_accumulates_reused_inputs_like_the_engine():
    a = kit.tensor(3.0, requires_grad=True)
    y = a * a + a
    sb = step_backward(y, params={"a": a}, graph=False)
    last = sb.steps[-1]
    y.backward()
    assert float(last.received[0]) == float(a.grad) == 7.0
    assert sb.static(len(sb.steps) - 1).summary().endswith("receives: 7")
    with pytest.raises(IndexError, match="step 9"):
        sb.render(9)


def test_step_backward_errors():
    with pytest.raises(ValueError, match="no graph"):
        step_backward(kit.tensor(1.0, requires_grad=True))
    x = kit.tensor(1.0, requires_grad=True)
    y = x.exp()
    y.backward()
    with pytest.raises(RuntimeError, match="retain_graph=True"):
        step_backward(y)


class LeakyGrad(kit.Function):
    """exp with a backward that is 10% too large: gradcheck must catch it."""

    @staticmethod
    def forward(ctx, x):
        y = x.exp()
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return g * y * 1.1


def test_gradcheck_view_passes_a_correct_op_and_reacts_to_eps():
    x = kit.tensor([0.5, -1.0, 2.0], dtype=kit.float64, requires_grad=True)
    view = gradcheck_view(kit.tanh, (x,))
    data = view.result.data
    assert data["passed"] and data["max_abs_diff"] < 1e-8
    np.testing.assert_allclose(np.diag(data["analytical"]), 1 - np.tanh([0.5, -1.0, 2.0]) ** 2)
    view.eps.value = 1e-1  # truncation error of central differences: about eps**2
    assert not view.result.data["passed"] and view.result.data["max_abs_diff"] > 1e-4
    assert view.image.value[:4] == b"\x89PNG"


def test_gradcheck_view_finds_a_wrong_backward_and_shows_each_block():
    x = kit.tensor([[0.1, 0.2], [0.3, 0.4]], requires_grad=True)
    view = gradcheck_view(LeakyGrad, (x,))
    data = view.result.data
    assert not data["passed"] and data["worst"] == (3, 3)
    np.testing.assert_allclose(np.diag(data["difference"]), 0.1 * np.exp([0.1, 0.2, 0.3, 0.4]),
                               rtol=1e-6)
    a = kit.tensor([1.0, 2.0], requires_grad=True)
    b = kit.tensor([3.0], requires_grad=True)
    two = gradcheck_view(lambda a, b: a * b, (a, b))
    assert two.blocks == [(0, 0), (0, 1)]
    two.block.value = (0, 1)
    np.testing.assert_allclose(two.result.data["analytical"], [[1.0], [2.0]])
    assert "output 0, input 1" in two.summary.value
    assert two.static().data["block"] == (0, 1)
    with pytest.raises(ValueError, match="requires grad"):
        gradcheck_view(kit.tanh, (kit.tensor([1.0]),))


def test_a_displayed_view_stores_its_frame_next_to_the_widget():
    ex = explorer(f, x=(-3, 3, 2.0), y=(-3, 3, 3.0))
    bundle, metadata = ex._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle and metadata == {}
    assert bundle["text/plain"] == ex.frame.summary()  # not "VBox(children=(..."
    assert "data:image/png;base64," in bundle["text/html"]
    assert "data:image/svg+xml;base64," in bundle["text/html"]
    assert all(s.value == ex.defaults[name] for name, s in ex.sliders.items())


def test_slider_defaults_lie_on_the_slider_grid():
    ex = explorer(f, x=(-3, 3, 2.0), y=(-1, 1, 0.25))
    for name, s in ex.sliders.items():
        steps = (ex.defaults[name] - s.min) / s.step
        assert steps == pytest.approx(round(steps)), name
        assert (s.max - s.min) / s.step <= 400


def test_with_fallback_stores_a_plot_as_png():
    import ipywidgets

    from kit.viz import plot_grad_norms, with_fallback

    w = kit.tensor([1.0, 2.0], requires_grad=True)
    (w * w).sum().backward()
    plot = plot_grad_norms({"w": w})
    bundle, metadata = with_fallback(ipywidgets.IntSlider(1), plot)._repr_mimebundle_()
    assert bundle["text/plain"] == repr(plot)
    assert metadata == {"image/png": {"width": 576, "height": 307}}  # 6 x 3.2 inches at 96 dpi
    assert bundle["image/png"].startswith("iVBORw0KGgo")  # base64 of the PNG signature
    assert "application/vnd.jupyter.widget-view+json" in bundle


def test_step_backward_names_a_freed_leaf():
    sb = step_backward((kit.tensor([2.0, 1.0], requires_grad=True) * 3).sum())
    sb.go(1)
    assert sb.frame.passed == [("a freed leaf", "[3, 3]")]
    sb.go(2)
    assert sb.frame.node_name == "AccumulateGrad: adds it into .grad of a freed leaf"
