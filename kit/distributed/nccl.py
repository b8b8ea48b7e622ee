"""GPU tensors through NCCL (`cupy.cuda.nccl`): allreduce and broadcast on device memory, with no
trip through the host.

A collective takes this path when the data is a CuPy array (`xp` comes from the data), CuPy
has NCCL, the dtype is one NCCL reduces, and `kit.distributed.settings.nccl` is on
(KIT_DIST_NCCL=0 turns it off); `unavailable_reason(tensor)` says why not. Otherwise GPU data
is staged through host memory and reduced by MPI, as CPU data is.

One NCCL communicator per job and CUDA device, made at the first GPU collective: rank 0 asks
NCCL for a unique id, MPI broadcasts it, and every rank joins with its rank, on its current
device (one device per rank: select it first, e.g. `cupy.cuda.Device(hvd.local_rank()).use()`).
Each call is queued on the current CUDA stream; an event recorded behind it is polled by
`runtime.wait_until`, so the collective timeout and the failure notices of other ranks apply.

>>> import numpy as np
>>> unavailable_reason(np.zeros(2))
'the data is not on a GPU (NumPy array)'
"""

from __future__ import annotations

import importlib

import numpy as np

from kit import backend
from kit.distributed import runtime

# NCCL's names for the dtypes it reduces (bool and complex it does not)
_NCCL_DTYPES = {"int8": "NCCL_INT8", "uint8": "NCCL_UINT8", "int32": "NCCL_INT32",
                "uint32": "NCCL_UINT32", "int64": "NCCL_INT64", "uint64": "NCCL_UINT64",
                "float16": "NCCL_FLOAT16", "float32": "NCCL_FLOAT32",
                "float64": "NCCL_FLOAT64"}
_communicators = {}  # CUDA device id -> NcclCommunicator


def _module(xp):
    """`cupy.cuda.nccl` of the array module `xp`, or the reason it cannot be used."""
    try:
        nccl = importlib.import_module(f"{xp.__name__}.cuda.nccl")
    except ImportError as error:
        return None, f"CuPy has no NCCL ({error})"
    if not getattr(nccl, "available", False):
        return None, "CuPy has no NCCL (cupy.cuda.nccl.available is False: libnccl not found)"
    return nccl, None


def unavailable_reason(data):
    """None when `data` (a kit Tensor or an array) goes through NCCL, else why it does not."""
    array = getattr(data, "_data", data)
    xp = backend.get_array_module(array)
    if xp is np:
        return "the data is not on a GPU (NumPy array)"
    if not runtime.settings.nccl:
        return "NCCL is turned off (kit.distributed.settings.nccl, KIT_DIST_NCCL=0)"
    if np.dtype(array.dtype).name not in _NCCL_DTYPES:
        return f"NCCL does not reduce {np.dtype(array.dtype).name}"
    return _module(xp)[1]


def usable(array):
    """True when `array` goes through NCCL (see `unavailable_reason`)."""
    return unavailable_reason(array) is None


def _communicator(xp, nccl):
    device = xp.cuda.runtime.getDevice()
    comm = _communicators.get(device)
    if comm is None:
        state = runtime._state
        unique_id = nccl.get_unique_id() if state.rank == 0 else None
        unique_id = runtime.broadcast_object(unique_id, 0, "NCCL set-up (its unique id)")
        comm = _communicators[device] = nccl.NcclCommunicator(state.size, unique_id,
                                                              state.rank)
    return comm


def _launch(array, call, what):
    """Queue `call(comm, nccl, dtype, stream)` on the current stream; wait for it."""
    xp = backend.get_array_module(array)
    nccl, reason = _module(xp)
    if nccl is None:
        raise runtime.DistributedError(f"{what}: {reason}")
    comm = _communicator(xp, nccl)
    stream = xp.cuda.get_current_stream()
    call(comm, nccl, getattr(nccl, _NCCL_DTYPES[np.dtype(array.dtype).name]), stream.ptr)
    done = xp.cuda.Event()
    done.record(stream)
    return done


def start_allreduce(send, recv, what):
    """Queue the sum of `send` over every rank into `recv` (CuPy arrays, contiguous, alike);
    returns an event whose `.done` says it has finished."""
    return _launch(send, lambda comm, nccl, dtype, stream: comm.allReduce(
        send.data.ptr, recv.data.ptr, send.size, dtype, nccl.NCCL_SUM, stream), what)


def wait(event, what):
    """Wait for a started NCCL call (its event), as for MPI: timeout and failure notices."""
    runtime.wait_until(lambda: event.done, what)


def allreduce(send, recv, what):
    """The sum of `send` over every rank, in `recv`, waited for."""
    wait(start_allreduce(send, recv, what), what)


def broadcast(array, root_rank, what):
    """`root_rank`'s `array` (a contiguous CuPy array) on every rank, in place, waited for."""
    wait(_launch(array, lambda comm, nccl, dtype, stream: comm.bcast(
        array.data.ptr, array.size, dtype, root_rank, stream), what), what)
