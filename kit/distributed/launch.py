"""Starting a job from Python (a lesson, a test, a benchmark): find `mpiexec`, and run a command
on N processes with a timeout and no standard input, every rank importing this same kit.

A rank killed by a signal (SIGKILL, a segfault) is not named by the others under MPICH's
launcher (hydra), and cannot be: hydra's proxy SIGKILLs every other rank on the machine the
moment it sees one die (on the dead rank's PMI socket closing, and again whenever it reaps a
child that a signal ended, even under -disable-auto-cleanup, which only sends a SIGUSR1 a few
milliseconds first), so no survivor runs long enough to report, whatever it polls. Its report
("BAD TERMINATION ... PID ... EXIT CODE: 9") names the first process, in rank order, whose exit
was not normal: the killed rank when the proxy saw its socket close first, else the lowest rank
it killed itself. The job always ends (no hang); the rank's own output is the clue.

>>> from kit.distributed import launch
>>> launch.unavailable_reason() is None or "Fix" in launch.unavailable_reason()
True
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from kit.distributed import runtime

KIT_ROOT = str(Path(__file__).resolve().parents[2])  # the folder holding the kit package


def mpiexec():
    """The `mpiexec` that belongs to this Python (the mpich wheel installs it next to the
    interpreter), else the one on PATH; None when there is none."""
    beside = Path(sys.executable).parent / "mpiexec"
    return str(beside) if beside.exists() else shutil.which("mpiexec")


def unavailable_reason():
    """Why no job can be started here (mpi4py or mpiexec missing), or None."""
    if runtime.unavailable_reason():
        return runtime.unavailable_reason()
    if mpiexec() is None:
        return "no mpiexec found. Fix: pip install -e \".[dist]\" (the mpich wheel brings it)"
    return None


def run(n, argv, timeout=120, env=None, cwd=None):
    """Run `argv` (e.g. [sys.executable, "train.py", ...]) on `n` processes under mpiexec, or
    directly when n is 0; returns the CompletedProcess, stdout and stderr together as text.

    stdin is /dev/null (mpiexec forwards its standard input to rank 0, and a notebook kernel or
    CI has none to give); `timeout` seconds bound the whole job (subprocess.TimeoutExpired);
    PYTHONPATH puts this kit first, so every rank imports the kit that started it.
    """
    reason = unavailable_reason()
    if n and reason:
        raise runtime.DistributedError(f"kit.distributed.launch.run: {reason}")
    command = [str(part) for part in argv]
    if n:
        command = [mpiexec(), "-n", str(n), *command]
    environment = {**os.environ, **(env or {})}
    paths = environment.get("PYTHONPATH", "").split(os.pathsep)
    environment["PYTHONPATH"] = os.pathsep.join([KIT_ROOT, *filter(None, paths)])
    return subprocess.run(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=timeout,
                          env=environment, cwd=cwd)
