"""A stand-in for `cupy.cuda.nccl` for tests/fake_cupy.py's fake GPU: NCCL's calls, done by MPI
on the arrays behind the pointers kit passes, so kit's NCCL code path (the unique id broadcast
over MPI, the communicator, dtypes, pointers, counts, the event it waits on) runs without GPUs.

Like NCCL, a communicator needs every rank to join with the same unique id (here a mismatch is
an error instead of a hang) and the job's size and its own rank. `CALLS` lists what was asked.
"""

import ctypes
import types

import numpy as np

NAMES = ["NCCL_INT8", "NCCL_UINT8", "NCCL_INT32", "NCCL_UINT32", "NCCL_INT64", "NCCL_UINT64",
         "NCCL_FLOAT16", "NCCL_FLOAT32", "NCCL_FLOAT64"]  # NCCL's numbering of its dtypes
DTYPES = [np.int8, np.uint8, np.int32, np.uint32, np.int64, np.uint64, np.float16, np.float32,
          np.float64]
CALLS = []


def _array(pointer, count, datatype):
    """The `count` elements of NCCL type `datatype` at address `pointer`, as a NumPy array."""
    dtype = np.dtype(DTYPES[datatype])
    raw = (ctypes.c_byte * (count * dtype.itemsize)).from_address(pointer)
    return np.ctypeslib.as_array(raw).view(dtype)


class NcclCommunicator:
    def __init__(self, ndev, comm_id, rank):
        from mpi4py import MPI

        world = MPI.COMM_WORLD
        if not (isinstance(comm_id, tuple) and len(comm_id) == 128):
            raise TypeError("NcclCommunicator: commId must be the 128-tuple of get_unique_id()")
        if len(set(world.allgather(comm_id))) != 1:
            raise RuntimeError("fake NCCL: the ranks joined with different unique ids (real "
                               "NCCL would hang): the id must be broadcast from one rank")
        if (ndev, rank) != (world.Get_size(), world.Get_rank()):
            raise RuntimeError(f"fake NCCL: ndev={ndev}, rank={rank} in a job of "
                               f"{world.Get_size()} where this is rank {world.Get_rank()}")
        self._comm, self._rank, self._size = world.Dup(), rank, ndev
        CALLS.append(("init", ndev, rank))

    def rank_id(self):
        return self._rank

    def size(self):
        return self._size

    def allReduce(self, sendbuf, recvbuf, count, datatype, op, stream):  # noqa: N802 - CuPy's
        from mpi4py import MPI

        assert op == 0, "kit reduces with NCCL_SUM"
        CALLS.append(("allReduce", count, NAMES[datatype]))
        recv = _array(recvbuf, count, datatype)
        send = MPI.IN_PLACE if sendbuf == recvbuf else _array(sendbuf, count, datatype)
        self._comm.Allreduce(send, recv)

    def bcast(self, buff, count, datatype, root, stream):
        CALLS.append(("bcast", count, NAMES[datatype], root))
        self._comm.Bcast(_array(buff, count, datatype), root=root)


def module():
    """A fresh `cupy.cuda.nccl` stand-in."""
    nccl = types.ModuleType("cupy.cuda.nccl")
    nccl.available = True
    for number, name in enumerate(NAMES):
        setattr(nccl, name, number)
    nccl.NCCL_SUM = 0
    nccl.NcclCommunicator = NcclCommunicator
    rng = np.random.default_rng()
    nccl.get_unique_id = lambda: tuple(int(b) for b in rng.integers(-128, 128, 128))
    CALLS.clear()
    return nccl
