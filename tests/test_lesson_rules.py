"""The rules every lesson keeps (notebooks/99_maintainers_appendix.ipynb explains them), read from
the committed notebooks: executed, errors only where the browser expects them, ignored outputs
followed by checked cells, and a course map (lesson 00, README) that lists exactly the lessons
there are."""

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
LESSONS = sorted(p.name for p in NOTEBOOKS.glob("*.ipynb"))


def code_cells(name):
    cells = json.loads((NOTEBOOKS / name).read_text())["cells"]
    return [(i, c, "".join(c["source"])) for i, c in enumerate(cells) if c["cell_type"] == "code"]


@pytest.mark.parametrize("name", LESSONS)
def test_committed_executed_with_errors_only_where_tagged(name):
    for i, cell, source in code_cells(name):
        assert cell["execution_count"] is not None, f"cell {i} was not run before committing"
        tagged = "raises-exception" in cell["metadata"].get("tags", [])
        failed = any(o["output_type"] == "error" for o in cell["outputs"])
        assert failed == tagged, (
            f"cell {i}: " + ("an error without the raises-exception tag stops Run All" if failed
                             else "tagged raises-exception but raises nothing"))
        # nbval warns about "overlapping options" when the tag and its comment meet: an error here
        assert not (tagged and "NBVAL_RAISES_EXCEPTION" in source), \
            f"cell {i}: the raises-exception tag alone, without the NBVAL_RAISES_EXCEPTION comment"


@pytest.mark.parametrize("name", LESSONS)
def test_every_ignored_output_is_followed_by_a_checked_cell(name):
    cells = code_cells(name)
    for k, (i, _, source) in enumerate(cells):
        if source.startswith("# NBVAL_IGNORE_OUTPUT"):
            assert any(not later.startswith("# NBVAL_IGNORE_OUTPUT")
                       for _, _, later in cells[k + 1:]), \
                f"cell {i}: no checked cell follows this ignored output"


def _mapped(text):
    """The notebook files a course map links to."""
    return set(re.findall(r"\]\(([0-9]{2}[a-z]?_\w+\.ipynb)\)", text))


def test_lesson_00_maps_exactly_the_lessons_in_the_folder():
    text = "".join("".join(c["source"]) for c in
                   json.loads((NOTEBOOKS / "00_start_here.ipynb").read_text())["cells"]
                   if c["cell_type"] == "markdown")
    linked = _mapped(text)
    assert linked - set(LESSONS) == set(), "lesson 00 links to lessons that do not exist"
    assert set(LESSONS) - linked - {"00_start_here.ipynb"} == set(), \
        "lessons missing from lesson 00's map"


def test_readme_maps_every_lesson():
    text = (ROOT / "README.md").read_text()
    section = text[text.index("## Lesson map"):]
    section = section[:section.index("\n## ", 1)]
    named = set(re.findall(r"`([0-9]{2}[a-z]?_\w+\.ipynb)`", section))
    assert set(LESSONS) - named == set(), "lessons missing from README's lesson map"
    assert named - set(LESSONS) == set(), "README's lesson map names lessons that do not exist"
