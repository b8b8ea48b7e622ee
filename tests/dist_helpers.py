"""Running kit.distributed scripts under a real `mpiexec`, for the dist-marked tests; they skip,
with the reason, where mpi4py or mpiexec is missing."""

import os
import sys
from pathlib import Path

import pytest

from kit.distributed import launch

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = Path(__file__).resolve().parent / "dist_scripts"
if str(SCRIPTS) not in sys.path:
    sys.path.append(str(SCRIPTS))  # the in-process tests use mini_mxnet, as the scripts do
_REASON = launch.unavailable_reason()
needs_mpi = pytest.mark.skipif(_REASON is not None, reason=f"kit.distributed: {_REASON}")


def mpirun(n, script, *args, timeout=120, env=None, check=True):
    """Run `script` (a name in tests/dist_scripts, or a path) on `n` processes (directly when
    n is 0) with kit.distributed.launch.run; returns the CompletedProcess, stdout and stderr
    together. The timeout keeps a hang from hanging CI."""
    paths = [str(SCRIPTS), str(SCRIPTS.parent)]  # the last for tests/fake_cupy.py
    result = launch.run(n, [sys.executable, SCRIPTS / script, *args], timeout=timeout,
                        env={**(env or {}), "PYTHONPATH": os.pathsep.join(paths)},
                        cwd=ROOT)
    if check and result.returncode != 0:
        raise AssertionError(f"{' '.join(result.args)} exited {result.returncode}:\n"
                             f"{result.stdout}")
    return result
