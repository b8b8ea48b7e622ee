"""Running kit.distributed scripts under a real `mpiexec`, for the dist-marked tests; they skip,
with the reason, where mpi4py or mpiexec is missing."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kit.distributed import runtime

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = Path(__file__).resolve().parent / "dist_scripts"
if str(SCRIPTS) not in sys.path:
    sys.path.append(str(SCRIPTS))  # the in-process tests use mini_mxnet, as the scripts do
# The mpich wheel installs mpiexec next to the interpreter; a system MPI puts it on PATH.
MPIEXEC = next((str(p) for p in (Path(sys.executable).parent / "mpiexec",) if p.exists()),
               shutil.which("mpiexec"))
_REASON = runtime.unavailable_reason() or (
    None if MPIEXEC else "no mpiexec found. Fix: pip install -e \".[dist]\" (the mpich wheel)"
)
needs_mpi = pytest.mark.skipif(_REASON is not None, reason=f"kit.distributed: {_REASON}")


def mpirun(n, script, *args, timeout=120, env=None, check=True):
    """Run `script` (a name in tests/dist_scripts, or a path) on `n` processes; returns the
    CompletedProcess, stdout and stderr together. The timeout keeps a hang from hanging CI."""
    command = [sys.executable, str(SCRIPTS / script), *map(str, args)]
    if n:
        command = [MPIEXEC, "-n", str(n), *command]
    paths = [str(ROOT), str(SCRIPTS), str(SCRIPTS.parent)]  # the last for tests/fake_cupy.py
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join(paths),
                   **(env or {})}
    # NOTE: stdin from /dev/null: CI runs with no standard input, and mpiexec forwards it
    result = subprocess.run(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, timeout=timeout,
                            env=environment, cwd=ROOT)
    if check and result.returncode != 0:
        raise AssertionError(f"{' '.join(command)} exited {result.returncode}:\n{result.stdout}")
    return result
