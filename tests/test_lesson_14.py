"""Lesson 14 beyond nbval: its live MPI cells where mpi4py is missing (they say why they skip,
nothing fails; the rest reads recordings and needs no MPI), and what it states about PyTorch's
DistributedDataParallel, checked on PyTorch 2.13 where it is installed."""

import inspect
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LESSON = ROOT / "notebooks" / "14_data_parallel_training.ipynb"


def test_live_cells_skip_with_the_reason_without_mpi(tmp_path):
    cells = json.loads(LESSON.read_text())["cells"]

    def heading(prefix):
        return next(i for i, c in enumerate(cells)
                    if c["cell_type"] == "markdown" and "".join(c["source"]).startswith(prefix))

    # the set-up cells, then section 3 (the live one); sections 1 and 2 need no MPI
    chosen = cells[:heading("## 1.")] + cells[heading("## 3."):heading("## 4.")]
    code = "\n".join("".join(c["source"]) for c in chosen if c["cell_type"] == "code")
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


def test_what_the_lesson_says_about_ddp_holds_in_pytorch():
    torch = pytest.importorskip("torch", reason="PyTorch is the oracle; it is not installed")
    from torch.nn.parallel import distributed as ddp

    text = "".join("".join(c["source"]) for c in json.loads(LESSON.read_text())["cells"])
    assert "`bucket_cap_mb` (25 MiB)" in text and "first bucket at 1 MiB" in text
    assert ddp._DEFAULT_BUCKET_CAP_MB == 25
    assert torch.distributed._DEFAULT_FIRST_BUCKET_BYTES == 1 << 20
    parameters = inspect.signature(ddp.DistributedDataParallel.__init__).parameters
    assert "`forward_sync_buffers`" in text and "gradient_as_bucket_view=True" in text
    assert {"forward_sync_buffers", "gradient_as_bucket_view", "bucket_cap_mb"} <= set(parameters)
    doc = " ".join(ddp.DistributedDataParallel.__doc__.split())
    assert "Use ``forward_sync_buffers`` instead" in doc  # broadcast_buffers, deprecated
    assert "Replaces the deprecated ``broadcast_buffers`` argument. When ``None``, defaults to " \
           "``True``" in doc
