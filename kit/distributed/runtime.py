"""The MPI runtime under kit.distributed: start-up, ranks, settings, and waits that never hang.

Every collective in kit.distributed is started non-blocking (`Iallreduce`, `Ibcast`, ...) and
finished by `wait`, which polls the requests against a deadline (`settings.timeout`) and, while
it waits, listens on a private control communicator for a failure notice from another rank. A
rank whose program raises prints the error, notifies every other rank, and after
`settings.abort_grace` seconds calls `MPI_Abort`, so the whole job ends: the others, if they are
waiting in kit.distributed, raise `RankFailedError` naming the failed rank first. A rank that dies
without a word (SIGKILL, a crash below Python) cannot notify anyone: the others find it by its
process id while they wait (on this machine), unless the launcher kills them first, as MPICH's
does at once (see `kit.distributed.launch`).

>>> import kit.distributed as dist
>>> dist.init()
>>> dist.rank(), dist.size()  # a plain `python` run is a job of one process
(0, 1)
"""

from __future__ import annotations

import os
import pickle
import signal
import socket
import sys
import time

import numpy as np

_FAIL_TAG = 77
MPI = None  # mpi4py.MPI, imported by init(): importing it starts MPI, which a notebook need not

try:
    import mpi4py
except ImportError as error:  # the `dist` extra is optional
    mpi4py = None
    _REASON = (
        f"mpi4py is not installed ({error}). Fix: pip install -e \".[dist]\" (mpi4py and the "
        f"mpich wheel, which brings mpiexec)"
    )
else:
    _REASON = None


class DistributedError(RuntimeError):
    """A collective could not complete: a timeout, a mismatch between ranks, or MPI missing."""


class RankFailedError(DistributedError):
    """Another rank failed; raised on every rank that was waiting for it."""

    def __init__(self, failed_rank, message):
        super().__init__(
            f"rank {failed_rank} failed: {message}\n(rank {_state.rank} stops too: a collective "
            f"cannot complete without every rank)"
        )
        self.failed_rank = failed_rank


class Settings:
    """Tunables, read from the environment at import and changeable at run time.

    timeout: seconds a collective may wait for the other ranks (KIT_DIST_TIMEOUT, default 300).
    fusion_threshold_bytes: size of a gradient fusion buffer (HOROVOD_FUSION_THRESHOLD, default
    128 MiB, Horovod's since 0.21); 0 reduces every tensor on its own.
    abort_grace: seconds a failed rank waits, after notifying the others, before MPI_Abort.
    nccl: reduce CuPy arrays with NCCL when CuPy has it (KIT_DIST_NCCL, default 1); off, GPU
    data is staged through host memory and reduced by MPI.
    """

    def __init__(self):
        self.timeout = float(os.environ.get("KIT_DIST_TIMEOUT", 300.0))
        self.fusion_threshold_bytes = int(
            os.environ.get("HOROVOD_FUSION_THRESHOLD", 128 * 1024 * 1024)
        )
        self.abort_grace = float(os.environ.get("KIT_DIST_ABORT_GRACE", 1.0))
        self.nccl = os.environ.get("KIT_DIST_NCCL", "1") != "0"

    def __repr__(self):
        return (f"Settings(timeout={self.timeout}, fusion_threshold_bytes="
                f"{self.fusion_threshold_bytes}, abort_grace={self.abort_grace}, "
                f"nccl={self.nccl})")


settings = Settings()


class _State:
    def __init__(self):
        self.comm = None  # the collectives' communicator (a duplicate of COMM_WORLD)
        self.control = None  # failure notices travel here, never mixed with collectives
        self.rank = 0
        self.size = 1
        self.local_rank = 0
        self.local_size = 1
        self.peers = []  # (host, pid) of every rank, to tell a dead peer from a slow one
        self.spin_polls = 100  # polls before a wait starts yielding the core; 0 when oversubscribed


_state = _State()


def available():
    """True when mpi4py (and so an MPI library) can be imported."""
    return mpi4py is not None


def unavailable_reason():
    """Why kit.distributed cannot run here, or None."""
    return _REASON


def init(comm=None):
    """Start kit.distributed (idempotent): `comm` defaults to MPI.COMM_WORLD. In a job of more
    than one process it installs the failure handler (see the module docstring)."""
    global MPI
    if mpi4py is None:
        raise DistributedError(f"kit.distributed.init: {_REASON}")
    if _state.comm is not None:
        return
    from mpi4py import MPI
    world = MPI.COMM_WORLD if comm is None else comm
    _state.comm = world.Dup()
    _state.control = world.Dup()
    _state.rank, _state.size = _state.comm.Get_rank(), _state.comm.Get_size()
    local = _state.comm.Split_type(MPI.COMM_TYPE_SHARED)
    _state.local_rank, _state.local_size = local.Get_rank(), local.Get_size()
    local.Free()
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    # NOTE: with more ranks than cores on a machine, a spinning rank keeps the rank it waits for
    # off the core (measured with 4 ranks on 2 cores: yielding at once halves a 4 KB allreduce).
    _state.spin_polls = 0 if _state.local_size > (cores or 1) else 100
    if _state.size > 1:
        _install_failure_handler()
        _state.peers = allgather_object((socket.gethostname(), os.getpid()), "init")


def is_initialized():
    return _state.comm is not None


def comm():
    """The communicator kit.distributed uses (after init)."""
    _require("comm")
    return _state.comm


def rank():
    """This process's rank, 0 .. size() - 1."""
    _require("rank")
    return _state.rank


def size():
    """The number of processes in the job."""
    _require("size")
    return _state.size


def local_rank():
    """This process's rank among the processes on its machine."""
    _require("local_rank")
    return _state.local_rank


def local_size():
    """The number of processes of the job on this machine."""
    _require("local_size")
    return _state.local_size


def _require(what):
    if _state.comm is None:
        raise ValueError(
            f"kit.distributed.{what}() was called before init(). Fix: call "
            f"kit.distributed.init() (hvd.init()) first, in every process"
        )


def wait(requests, what):
    """Complete MPI `requests` (see `wait_until`)."""
    wait_until(lambda: MPI.Request.Testall(requests), what)


def wait_until(done, what):
    """Poll `done()` (MPI requests, a CUDA event) until it is true, at most `settings.timeout`
    seconds; raise RankFailedError when another rank reports a failure or dies meanwhile,
    DistributedError on timeout. `what` names the collective."""
    if done():
        return
    start = time.monotonic()
    deadline = start + settings.timeout
    next_check = next_liveness = start
    polls = 0
    while not done():
        polls += 1
        if polls < _state.spin_polls:
            continue  # spin a little first, as MPI_Wait does: a short collective ends here
        now = time.monotonic()
        if now >= next_check:
            check_failures()
            next_check = now + 0.02
            if now >= next_liveness:
                _check_peers_alive(what)
                next_liveness = now + 0.5
            if now > deadline:
                raise DistributedError(
                    f"{what} did not complete within {settings.timeout:g} s on rank "
                    f"{_state.rank} of {_state.size}: some rank has not joined it (it is stuck, "
                    f"dead, or calling collectives in another order). Fix: look at the other "
                    f"ranks' output; if a step is legitimately this slow, raise "
                    f"kit.distributed.settings.timeout (KIT_DIST_TIMEOUT)"
                )
        # NOTE: then yield the core at each poll, as MPICH's wait does after a while: with more
        # processes than cores, the rank we wait for may need this one's core to get there.
        os.sched_yield()


def check_failures():
    """Raise RankFailedError if another rank has reported that it failed."""
    status = MPI.Status()
    if _state.control.Iprobe(source=MPI.ANY_SOURCE, tag=_FAIL_TAG, status=status):
        message = _state.control.recv(source=status.Get_source(), tag=_FAIL_TAG)
        raise RankFailedError(status.Get_source(), message)


def _check_peers_alive(what):
    """Raise RankFailedError for a rank on this machine whose process is gone (killed, or
    crashed below Python): it can send no notice, and waiting for it would end in a timeout."""
    host = socket.gethostname()
    for other, (peer_host, pid) in enumerate(_state.peers):
        if peer_host == host and other != _state.rank and not _running(pid):
            raise RankFailedError(
                other, f"its process (pid {pid}) is no longer running: it was killed or crashed "
                       f"without a Python error, during {what}"
            )


def _running(pid):
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] not in "ZX"  # zombie or dead
    except FileNotFoundError:
        return False
    except OSError:  # no /proc (macOS): ask the kernel
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True


def _install_failure_handler():
    previous = sys.excepthook

    def excepthook(kind, error, tb):
        if isinstance(error, RankFailedError):
            _say(f"kit.distributed: rank {_state.rank}: {error}")
        else:
            _say(f"kit.distributed: rank {_state.rank} of {_state.size} failed; the others are "
                 f"told and the job is aborted:")
            previous(kind, error, tb)
            sys.stderr.flush()
            _notify(f"{kind.__name__}: {error}")
        time.sleep(settings.abort_grace)  # let the others print why they stop
        _end_local_peers()
        _state.comm.Abort(1)

    sys.excepthook = excepthook


def _end_local_peers():
    """SIGKILL the other ranks on this machine that are still running. MPI_Abort alone does not
    always end them: seen with MPICH's hydra on a busy machine, the aborting rank's exit reached
    the proxy before its abort request, the proxy took it for a plain exit with code 1, and a
    rank stalled outside kit.distributed (in user code) ran on until it finished by itself.
    A rank killed by a signal makes hydra end the whole job, remote ranks included."""
    host = socket.gethostname()
    for other, (peer_host, pid) in enumerate(_state.peers):
        if other != _state.rank and peer_host == host and _running(pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:  # gone meanwhile, or not ours to signal
                pass


def _say(text):
    # NOTE: one write: the ranks share mpiexec's pipe, and print's separate writes interleave.
    sys.stderr.write(text + "\n")
    sys.stderr.flush()


def _notify(message):
    requests = [
        _state.control.isend(message, dest=other, tag=_FAIL_TAG)
        for other in range(_state.size) if other != _state.rank
    ]
    deadline = time.monotonic() + settings.abort_grace
    while not MPI.Request.Testall(requests) and time.monotonic() < deadline:
        time.sleep(0.001)


# --- objects (pickled) over non-blocking collectives ------------------------------------------
def allgather_object(obj, what):
    """Every rank's `obj`, as a list indexed by rank (pickled; for metadata, not tensors)."""
    payload = np.frombuffer(pickle.dumps(obj), dtype=np.uint8)
    counts = np.empty(_state.size, dtype=np.int64)
    wait([_state.comm.Iallgather(np.array([payload.size], dtype=np.int64), counts)], what)
    gathered = np.empty(int(counts.sum()), dtype=np.uint8)
    wait([_state.comm.Iallgatherv(payload, [gathered, counts])], what)
    ends = np.cumsum(counts)
    return [pickle.loads(gathered[end - n:end].tobytes()) for n, end in zip(counts, ends,
                                                                             strict=True)]


def broadcast_object(obj, root_rank, what):
    """The root's `obj` on every rank (pickled)."""
    payload = np.frombuffer(pickle.dumps(obj), dtype=np.uint8)
    count = np.array([payload.size], dtype=np.int64)
    wait([_state.comm.Ibcast(count, root=root_rank)], what)
    buffer = payload.copy() if _state.rank == root_rank else np.empty(int(count[0]), np.uint8)
    wait([_state.comm.Ibcast(buffer, root=root_rank)], what)
    return pickle.loads(buffer.tobytes())
