"""Every lesson, Run All in JupyterLab in Chromium: nothing errors unexpectedly, every widget and
picture renders."""

import json

import pytest

from e2e.lesson_page import LESSONS, NOTEBOOKS, is_expected_error


def figures(cell):
    """How many PNG or SVG figures a code cell's outputs hold."""
    kinds = {"image/png", "image/svg+xml"}
    return sum(1 for output in cell["outputs"] if kinds & set(output.get("data", {})))


@pytest.mark.parametrize("name", LESSONS)
def test_run_all(ran_lesson, name):
    lesson = ran_lesson(name)
    assert "children=(" not in lesson.text_before_run, "a widget's text repr is stored"
    cells = lesson.notebook()["cells"]
    errors = [(i, o["ename"], o["evalue"]) for i, c in enumerate(cells)
              if c["cell_type"] == "code" and not is_expected_error(c)
              for o in c["outputs"] if o["output_type"] == "error"]
    assert not errors, f"unexpected errors (cell, name, message): {errors}"
    assert lesson.run_all_result == "done", lesson.run_all_result
    not_run = [i for i, c in enumerate(cells)
               if c["cell_type"] == "code" and c["execution_count"] is None]
    assert not not_run, f"cells {not_run} did not run"
    lesson.expect_no_text("Error displaying widget")
    lesson.expect_no_text("Loading widget")
    pictures = lesson.pictures()
    blank = [p for p in pictures if not (p["width"] > 0 and p["height"] > 0)]
    assert not blank, f"pictures that did not render: {blank}"
    # A picture is shown at most at its own size (enlarged, it blurs) and never squashed.
    shown = [p for p in pictures if p["kind"] == "img" and p.get("shown_width")]
    distorted = [p for p in shown if p["shown_width"] > p["width"] + 1
                 or abs(p["shown_height"] / p["shown_width"] - p["height"] / p["width"]) > 0.02
                 * p["height"] / p["width"]]
    assert not distorted, f"pictures enlarged or out of proportion: {distorted}"
    # Every figure the committed lesson shows comes back in the browser, and is on the page.
    committed = json.loads((NOTEBOOKS / name).read_text())["cells"]
    missing = [i for i, (now, before) in enumerate(zip(cells, committed, strict=True))
               if now["cell_type"] == "code" and figures(now) < figures(before)]
    assert not missing, f"cells {missing} show fewer figures than the committed lesson"
    assert len(pictures) >= sum(figures(c) for c in cells if c["cell_type"] == "code")
    assert not lesson.console_errors, lesson.console_errors
