"""The lessons run from a copy of notebooks/ outside the repository (a student downloads one):
whatever a lesson reads, it finds through the installed kit, never from the current directory."""

import json
import shutil
from pathlib import Path

import pytest

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
LESSONS = sorted(p.name for p in NOTEBOOKS.glob("*.ipynb"))


@pytest.fixture(scope="module")
def elsewhere(tmp_path_factory):
    folder = tmp_path_factory.mktemp("downloaded-lessons")
    for name in LESSONS:
        shutil.copy(NOTEBOOKS / name, folder / name)
    assert NOTEBOOKS.parent not in folder.resolve().parents
    return folder


@pytest.mark.slow
@pytest.mark.parametrize("name", LESSONS)
def test_lesson_runs_from_a_copy_elsewhere(elsewhere, name):
    import nbformat
    from nbclient import NotebookClient

    path = elsewhere / name
    notebook = nbformat.read(path, as_version=4)
    # Errors are allowed only in cells tagged raises-exception (nbclient honours the tag).
    NotebookClient(notebook, timeout=600, kernel_name="python3",
                   resources={"metadata": {"path": str(elsewhere)}}).execute()
    counts = [c.execution_count for c in notebook.cells if c.cell_type == "code"]
    assert None not in counts
    assert json.loads(path.read_text()) == json.loads((NOTEBOOKS / name).read_text()), \
        "the copy is read, never written"
