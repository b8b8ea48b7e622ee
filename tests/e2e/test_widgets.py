"""The lessons' widgets, used in the browser as a student would: sliders moved with the keyboard
or typed into, buttons pressed, dropdown entries picked. Each shown number is checked against
kit's own answer, computed here."""

import base64
import contextlib
import io
import json
import re

import pytest

import kit
from e2e.lesson_page import LESSONS, NOTEBOOKS
from kit.viz._style import fmt_number

# The lessons whose widgets the tests below drive; every lesson that builds a widget must be here.
DRIVEN = ["00_start_here.ipynb", "01_autograd_from_scratch.ipynb", "08_gradient_flow.ipynb",
          "14_data_parallel_training.ipynb"]
WIDGET_MARKERS = re.compile(r"\bipywidgets\b|\bexplorer\(|\bstep_backward\(")
HIGHLIGHTED = """output => Array.from(output.querySelectorAll('g.node'))
    .filter(g => g.querySelector('[stroke="#dc2626"]'))
    .map(g => Array.from(g.querySelectorAll('text')).map(t => t.textContent).join(' '))"""


def expect(locator):
    """Playwright's auto-retrying expect, with room for a busy 2-core machine."""
    from playwright.sync_api import expect as playwright_expect

    playwright_expect.set_options(timeout=30_000)
    return playwright_expect(locator)


def readout_text(value, digits):
    """A number as a slider's readout spells it (d3-format: a real minus sign)."""
    return f"{value:.{digits}f}".replace("-", "\u2212")


def code_cells(name):
    cells = json.loads((NOTEBOOKS / name).read_text())["cells"]
    return ["".join(c["source"]) for c in cells if c["cell_type"] == "code"]


def lessons_with_widgets():
    return sorted(n for n in LESSONS if any(WIDGET_MARKERS.search(s) for s in code_cells(n)))


def image_source(output):
    return output.locator(".widget-image").first.get_attribute("src")


def set_readout(slider, value):
    """Type `value` into a slider's editable readout and press Enter."""
    readout = slider.locator(".widget-readout")
    readout.fill(str(value))
    readout.press("Enter")


def press_handle(slider, key):
    handle = slider.locator(".noUi-handle")
    handle.focus()
    handle.press(key)


def test_every_lesson_with_widgets_is_driven_here():
    assert lessons_with_widgets() == sorted(DRIVEN)


# --- 00: one slider, one derivative ------------------------------------------------------------
def cube_readout(x0):
    """What lesson 00's readout shows at x0: f'(x0) for f = x**3 + 2x, by kit."""
    x = kit.tensor(x0, requires_grad=True)
    (x ** 3 + 2 * x).backward()
    return f"f'({x0:g}) = {x.grad.item():g}"


@pytest.mark.parametrize("name", ["00_start_here.ipynb"])
def test_start_here_slider(ran_lesson, name):
    lesson = ran_lesson(name)
    output = lesson.output_of("with_fallback(widgets.VBox([slider, readout])")
    slider, text = output.locator(".widget-slider"), output.locator(".widget-html-content")
    expect(text).to_have_text(cube_readout(2.0))
    press_handle(slider, "End")  # to the maximum, 3
    expect(text).to_have_text(cube_readout(3.0))
    lesson.screenshot("slider-end", output)
    press_handle(slider, "ArrowLeft")  # one step of 0.5 down
    expect(text).to_have_text(cube_readout(2.5))
    set_readout(slider, -1)
    expect(text).to_have_text(cube_readout(-1.0))
    expect(slider.locator(".widget-readout")).to_have_text(readout_text(-1, 2))
    lesson.screenshot("slider-typed", output)


# --- 01: the explorer and the step-through backward pass ---------------------------------------
def f_xy(x, y):
    return x * y + x.sin()


def explorer_summary(x0, y0):
    """The explorer's readout at (x0, y0): f and both partial derivatives, by kit."""
    x = kit.tensor(x0, dtype=kit.float64, requires_grad=True)
    y = kit.tensor(y0, dtype=kit.float64, requires_grad=True)
    out = f_xy(x, y)
    gx, gy = kit.grad(out, [x, y])
    return (f"f(x={fmt_number(x0)}, y={fmt_number(y0)}) = {fmt_number(out.item())}\n"
            f"df/dx = {fmt_number(gx.item())}\ndf/dy = {fmt_number(gy.item())}")


@pytest.mark.parametrize("name", ["01_autograd_from_scratch.ipynb"])
def test_explorer(ran_lesson, name):
    lesson = ran_lesson(name)
    output = lesson.output_of("ex")
    sliders = output.locator(".widget-slider")
    readout = output.locator(".widget-html-content pre").first
    expect(readout).to_have_text(explorer_summary(2.0, 3.0), use_inner_text=True)
    picture, graph = image_source(output), output.locator("svg").first.inner_html()

    set_readout(sliders.nth(0), 0)
    expect(readout).to_have_text(explorer_summary(0.0, 3.0), use_inner_text=True)
    expect(output.locator(".widget-image").first).not_to_have_attribute("src", picture)
    assert output.locator("svg").first.inner_html() != graph
    lesson.screenshot("explorer-x-typed", output)

    press_handle(sliders.nth(1), "Home")  # y to its minimum, -3
    expect(readout).to_have_text(explorer_summary(0.0, -3.0), use_inner_text=True)
    lesson.screenshot("explorer-y-home", output)

    picture = image_source(output)
    output.locator(".widget-dropdown select").select_option("y")
    expect(output.locator(".widget-image").first).not_to_have_attribute("src", picture)
    expect(readout).to_have_text(explorer_summary(0.0, -3.0), use_inner_text=True)
    lesson.screenshot("explorer-plot-along-y", output)


@pytest.mark.parametrize("name", ["01_autograd_from_scratch.ipynb"])
def test_step_backward(ran_lesson, name):
    lesson = ran_lesson(name)
    output = lesson.output_of("sb")
    x = kit.tensor(2.0, dtype=kit.float64, requires_grad=True)
    y = kit.tensor(3.0, dtype=kit.float64, requires_grad=True)
    x.name, y.name = "x", "y"
    steps = kit.viz.step_backward(f_xy(x, y), params={"x": x, "y": y})
    text = output.locator(".widget-html-content pre").first
    position = output.locator(".widget-label").first
    next_button = output.get_by_role("button", name="Next")
    prev_button = output.get_by_role("button", name="Prev")
    seen = []
    for index in range(len(steps.steps)):
        frame = steps.render(index)
        expect(position).to_have_text(f"step {index + 1} of {len(steps.steps)}")
        expect(text).to_have_text(frame.summary(), use_inner_text=True)
        (expected,) = [n["label"] for n in frame.graph.nodes if n["attributes"].get("highlight")]
        highlighted = output.evaluate(HIGHLIGHTED)
        assert highlighted == [" ".join(expected.splitlines())]
        seen.append(highlighted)
        lesson.screenshot(f"step-{index + 1}", output)
        if index < len(steps.steps) - 1:
            next_button.click()
    expect(next_button).to_be_disabled()
    assert len(set(map(tuple, seen))) == len(seen), seen
    prev_button.click()
    expect(position).to_have_text(f"step {len(steps.steps) - 1} of {len(steps.steps)}")
    expect(text).to_have_text(steps.render(len(steps.steps) - 2).summary(), use_inner_text=True)


# --- 08: depth, initial scale, activation -------------------------------------------------------
@pytest.fixture(scope="module")
def flow_view():
    """Lesson 08's own `flow_view` (its definitions run here), to draw the expected picture."""
    namespace = {}
    wanted = ("import ipywidgets", "def deep_net(", "def flow_view(")
    with contextlib.redirect_stdout(io.StringIO()):
        for source in code_cells("08_gradient_flow.ipynb"):
            if any(w in source for w in wanted):
                exec(compile(source, "08_gradient_flow.ipynb", "exec"), namespace)
    return namespace["flow_view"]


def shown_png(image):
    """The bytes of the PNG an image widget shows (its src is a blob: URL)."""
    encoded = image.evaluate("""async img => {
        const bytes = new Uint8Array(await (await fetch(img.src)).arrayBuffer());
        let text = '';
        for (const b of bytes) text += String.fromCharCode(b);
        return btoa(text);
    }""")
    return base64.b64decode(encoded)


def widget_png(plot):
    """The PNG bytes an Image widget gets from `plot.show_in`, as the lesson shows it."""
    import ipywidgets

    image = ipywidgets.Image()
    plot.show_in(image)
    return image.value


@pytest.mark.parametrize("name", ["08_gradient_flow.ipynb"])
def test_gradient_flow_controls(ran_lesson, name, flow_view):
    lesson = ran_lesson(name)
    output = lesson.output_of("with_fallback(widgets.VBox([widgets.HBox([depth, scale,")
    depth, scale = (output.locator(".widget-slider").nth(i) for i in range(2))
    picture = output.locator(".widget-image").first
    assert shown_png(picture) == widget_png(flow_view(20, 1.0, "sigmoid"))
    # drawn with twice the pixels it is shown with: sharp on a 2x screen, never stretched
    natural, shown = picture.evaluate(
        "img => [img.naturalWidth, img.getBoundingClientRect().width]")
    assert natural == 2 * shown

    def after(action, *expected_args, label):
        before = picture.get_attribute("src")
        action()
        expect(picture).not_to_have_attribute("src", before)
        assert shown_png(picture) == widget_png(flow_view(*expected_args)), expected_args
        lesson.screenshot(label, output)

    after(lambda: set_readout(depth, 10), 10, 1.0, "sigmoid", label="depth-10")
    after(lambda: output.locator(".widget-dropdown select").select_option("relu"),
          10, 1.0, "relu", label="relu")
    after(lambda: press_handle(scale, "End"), 10, 3.0, "relu", label="scale-end")
    expect(scale.locator(".widget-readout")).to_have_text(readout_text(3, 2))


# --- 14: the fusion threshold over recorded runs ------------------------------------------------
@pytest.fixture(scope="module")
def fusion_summary():
    """Lesson 14's own `fusion_summary` (its recording and summary cells run here)."""
    import numpy as np

    import kit.bench
    import kit.distributed
    import kit.torch

    namespace = {"kit": kit, "np": np, "torch": kit.torch, "dist": kit.distributed}
    wanted = ("recording = kit.bench.packaged_recording(", "def fusion_summary(")
    with contextlib.redirect_stdout(io.StringIO()):
        for source in code_cells("14_data_parallel_training.ipynb"):
            if any(w in source for w in wanted):
                exec(compile(source, "14_data_parallel_training.ipynb", "exec"), namespace)
    return namespace["fusion_summary"], namespace["THRESHOLDS"]


@pytest.mark.parametrize("name", ["14_data_parallel_training.ipynb"])
def test_fusion_threshold_slider(ran_lesson, name, fusion_summary):
    summary_of, thresholds = fusion_summary
    lesson = ran_lesson(name)
    output = lesson.output_of("with_fallback(widgets.VBox([slider, summary, picture]),")
    slider, text = output.locator(".widget-slider"), output.locator(".widget-html-content")
    picture = output.locator(".widget-image").first
    expect(text).to_have_text(summary_of(64 << 10))
    before = picture.get_attribute("src")
    press_handle(slider, "End")  # the largest recorded threshold: one buffer
    expect(text).to_have_text(summary_of(thresholds[-1]))
    expect(slider.locator(".widget-readout")).to_have_text("1 MiB")
    expect(picture).not_to_have_attribute("src", before)
    lesson.screenshot("fusion-largest", output)
    press_handle(slider, "Home")  # 0: every tensor on its own
    expect(text).to_have_text(summary_of(0))
    assert "20 fusion buffers" in text.inner_text()
    lesson.screenshot("fusion-none", output)
