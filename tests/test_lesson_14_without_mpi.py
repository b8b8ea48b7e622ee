"""Lesson 14 where mpi4py is missing: its live MPI cells say why they skip and nothing fails;
the rest of the lesson reads recordings and needs no MPI. (With MPI, nbval runs the lesson.)"""

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LESSON = ROOT / "notebooks" / "14_data_parallel_training.ipynb"


def test_live_cells_skip_with_the_reason_without_mpi(tmp_path):
    cells = json.loads(LESSON.read_text())["cells"]
    end = next(i for i, c in enumerate(cells)
               if c["cell_type"] == "markdown" and "".join(c["source"]).startswith("## 4."))
    code = "\n".join("".join(c["source"]) for c in cells[:end] if c["cell_type"] == "code")
    code = "\n".join(line for line in code.splitlines() if not line.startswith("%"))
    hidden = tmp_path / "mpi4py"
    hidden.mkdir()
    (hidden / "__init__.py").write_text('raise ImportError("hidden by the test")\n')
    env = {**os.environ, "MPLBACKEND": "Agg",
           "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            env=env, cwd=tmp_path, timeout=300, stdin=subprocess.DEVNULL)
    assert result.returncode == 0, result.stderr
    assert "MPI: not available here, so the live cells of section 3 will skip" in result.stdout
    assert "skipped: no MPI here (mpi4py is not installed (hidden by the test)" in result.stdout
