"""Collectives on kit Tensors: allreduce, allgather, broadcast, and the broadcasts of a model's
parameters and an optimizer's state that start data-parallel training from one set of weights.

Each is one MPI collective on a contiguous NumPy buffer, started non-blocking and finished by
`runtime.wait` (a timeout, and failure notices from other ranks). Results are new tensors on the
input's device; the trailing-underscore forms write into the tensor given. GPU tensors (CuPy
arrays) are reduced and broadcast by NCCL on the device when CuPy has it (kit.distributed.nccl),
else staged through host memory; allgather, whose pieces may differ in size, always stages.

>>> import kit, kit.distributed as dist
>>> dist.init()
>>> dist.allreduce(kit.tensor([1.0, 3.0]), op=dist.Sum)  # a job of one process: unchanged
tensor([1., 3.])
"""

from __future__ import annotations

import numpy as np

from kit import backend
from kit._creation import from_numpy, tensor
from kit._tensor import Tensor, bump_version
from kit.distributed import nccl, runtime
from kit.grad_mode import no_grad


class ReduceOp:
    """How allreduce combines the ranks' tensors (hvd.Average, hvd.Sum)."""

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return self.name


Average = ReduceOp("Average")
Sum = ReduceOp("Sum")


def host_array(value, what):
    """The contiguous NumPy array behind a kit Tensor (no copy when it already is one on the
    CPU; a GPU tensor is copied to host memory, which MPI reads)."""
    if not isinstance(value, Tensor):
        raise TypeError(f"{what}: expected a kit Tensor, got {type(value).__name__}")
    with no_grad():
        if value.device != "cpu":
            # NOTE: staged through host memory; NCCL (cupy.cuda.nccl) would keep it on the GPU.
            value = value.detach().to("cpu")
        return np.ascontiguousarray(value.detach().numpy())


def device_array(value, what):
    """The contiguous array a collective works on for a kit Tensor: its own CuPy array when NCCL
    takes it (see kit.distributed.nccl), else its host array (`host_array`)."""
    if isinstance(value, Tensor) and value.device != "cpu":
        with no_grad():
            array = value.detach()._data
        if nccl.usable(array):
            return backend.get_array_module(array).ascontiguousarray(array)
    return host_array(value, what)


def as_tensor_like(array, like):
    """`array` as a new tensor on the device of `like` (a device array is that already)."""
    if backend.get_array_module(array) is not np:
        return Tensor(array)
    result = from_numpy(array)
    return result if like.device == "cpu" else result.to(like.device)


def write_back(target, array):
    """Copy `array` into the tensor `target` in place (the autograd-safe write)."""
    with no_grad():
        target.copy_(as_tensor_like(array.reshape(target.shape), target))
    return target


def _check_op(op, what):
    if op is not Average and op is not Sum:
        raise ValueError(f"{what}: op must be kit.distributed.Average or Sum, got {op!r}")


def reduce_array(array, op, what, out=None):
    """Allreduce an array over every rank into `out` (in place when None): a NumPy array by MPI,
    a CuPy array by NCCL; Average divides by size()."""
    _check_op(op, what)
    runtime._require("allreduce")
    if op is Average and array.dtype.kind not in "fc":
        raise TypeError(
            f"{what}: Average of an integer tensor ({array.dtype}) is not exact. Fix: pass "
            f"op=kit.distributed.Sum, or a floating-point tensor"
        )
    if out is None:
        out, array = array, runtime.MPI.IN_PLACE
    if runtime._state.size == 1:
        if array is not runtime.MPI.IN_PLACE:
            out[...] = array
        return out
    xp = backend.get_array_module(out)
    if xp is np:
        runtime.wait([runtime._state.comm.Iallreduce(array, out)], what)
    else:
        nccl.allreduce(out if array is runtime.MPI.IN_PLACE else array, out, what)
    if op is Average:
        xp.divide(out, runtime._state.size, out=out)
    return out


def allreduce(tensor, op=Average, name=None):
    """A new tensor: `tensor` combined over every rank (the mean with Average, else the sum).

    >>> import kit, kit.distributed as dist
    >>> dist.init(); dist.allreduce(kit.tensor([2.0, 4.0]))
    tensor([2., 4.])
    """
    what = f"allreduce of {name or 'a tensor'}"
    array = device_array(tensor, what)
    out = backend.get_array_module(array).empty_like(array)
    return as_tensor_like(reduce_array(array, op, what, out=out), tensor)


def allreduce_(tensor, op=Average, name=None):
    """Allreduce in place: `tensor` holds the result (and is returned). A contiguous tensor on
    the CPU, or on a GPU with NCCL, is reduced in its own memory, as raw MPI would, no copy."""
    what = f"allreduce_ of {name or 'a tensor'}"
    array = device_array(tensor, what)  # a TypeError for a non-tensor
    with no_grad():
        storage = tensor.detach()._data
    own_memory = tensor.device == "cpu" or nccl.usable(storage)
    if not (own_memory and storage.flags.c_contiguous
            and getattr(storage.flags, "writeable", True)):  # CuPy's flags lack it
        out = backend.get_array_module(array).empty_like(array)
        return write_back(tensor, reduce_array(array, op, what, out=out))
    reduce_array(storage, op, what)
    # NOTE: MPI wrote the storage behind the engine's back: record it as an in-place change,
    # as Function's mark_dirty does, so that a graph that saved this tensor refuses to use it.
    bump_version(tensor)
    return tensor


def grouped_allreduce_(tensors, op=Average, name=None):
    """Allreduce several tensors in place, fused: one buffer (and one MPI call) per dtype."""
    what = f"grouped_allreduce_ of {name or f'{len(tensors)} tensors'}"
    fused(tensors, what, lambda flat, dtype: reduce_array(flat, op, what))
    return tensors


def fused(tensors, what, collective):
    """Run `collective(flat, dtype)` in place on one contiguous buffer per dtype and array
    module (in one order on every rank), then copy the results back into the tensors."""
    groups = {}
    for t in tensors:
        array = device_array(t, what)
        xp = backend.get_array_module(array)
        groups.setdefault((np.dtype(t.dtype), xp is not np), []).append((t, array))
    for (dtype, _), group in sorted(groups.items(), key=lambda item: (item[0][0].str,
                                                                      item[0][1])):
        xp = backend.get_array_module(group[0][1])
        flat = xp.concatenate([array.reshape(-1) for _, array in group]).astype(dtype)
        collective(flat, dtype)
        start = 0
        for t, _ in group:
            write_back(t, flat[start:start + t.numel()])
            start += t.numel()


def allgather(tensor, name=None):
    """Every rank's tensor, concatenated along dimension 0 (the first dimensions may differ).

    >>> import kit, kit.distributed as dist
    >>> dist.init(); dist.allgather(kit.tensor([[1.0, 2.0]])).shape
    (1, 2)
    """
    what = f"allgather of {name or 'a tensor'}"
    array = host_array(tensor, what)
    if array.ndim == 0:
        array = array.reshape(1)
    runtime._require("allgather")
    metas = runtime.allgather_object((array.shape, array.dtype.str), what)
    for other, (shape, dtype) in enumerate(metas):
        if shape[1:] != array.shape[1:] or dtype != array.dtype.str:
            raise ValueError(
                f"{what}: rank {other} has shape {shape} and dtype {dtype}, rank "
                f"{runtime._state.rank} has {array.shape} and {array.dtype.str}; only dimension "
                f"0 may differ. Fix: gather tensors of one dtype and trailing shape"
            )
    counts = np.array([int(np.prod(shape)) for shape, _ in metas], dtype=np.int64)
    out = np.empty((sum(shape[0] for shape, _ in metas), *array.shape[1:]), array.dtype)
    runtime.wait([runtime._state.comm.Iallgatherv(array, [out, counts])], what)
    return as_tensor_like(out, tensor)


def broadcast(tensor, root_rank, name=None):
    """A new tensor holding `root_rank`'s value of `tensor`, on every rank."""
    what = f"broadcast of {name or 'a tensor'}"
    array = device_array(tensor, what).copy()
    return as_tensor_like(_broadcast_array(array, root_rank, what), tensor)


def broadcast_(tensor, root_rank, name=None):
    """Broadcast in place: every rank's `tensor` takes `root_rank`'s value."""
    what = f"broadcast_ of {name or 'a tensor'}"
    array = device_array(tensor, what).copy()
    return write_back(tensor, _broadcast_array(array, root_rank, what))


def _broadcast_array(array, root_rank, what):
    runtime._require("broadcast")
    _check_root(root_rank, what)
    if runtime._state.size > 1:
        if backend.get_array_module(array) is np:
            runtime.wait([runtime._state.comm.Ibcast(array, root=root_rank)], what)
        else:
            nccl.broadcast(array, root_rank, what)
    return array


def _check_root(root_rank, what):
    if not 0 <= root_rank < runtime._state.size:
        raise ValueError(
            f"{what}: root_rank={root_rank} is not a rank of this job of {runtime._state.size} "
            f"processes (0 .. {runtime._state.size - 1})"
        )


def named_tensors(params, what):
    """[(name, kit Tensor)] from a state dict, named parameters, or MXNet-style parameters (an
    NDArray, or a gluon Parameter whose .data() is one); a dict is taken in sorted name order,
    as Horovod does, so that every rank lists it alike."""
    if isinstance(params, dict):
        items = sorted(params.items(), key=lambda item: str(item[0]))
    else:
        items = list(params)
        if items and not all(isinstance(item, tuple) and len(item) == 2 for item in items):
            raise TypeError(
                f"{what}: params must be a state dict or (name, tensor) pairs such as "
                f"model.named_parameters(); got a sequence of {type(items[0]).__name__}"
            )
    return [(str(name), _as_tensor(value, name, what)) for name, value in items]


def _as_tensor(value, name, what):
    if isinstance(value, Tensor):
        return value
    if isinstance(getattr(value, "tensor", None), Tensor):  # an mx NDArray
        return value.tensor
    data = getattr(value, "data", None)
    if callable(data):  # a gluon Parameter
        return _as_tensor(data(), name, what)
    raise TypeError(f"{what}: {name!r} is a {type(value).__name__}, not a tensor")


def broadcast_parameters(params, root_rank=0):
    """Give every rank `root_rank`'s parameters, in place (hvd.broadcast_parameters).

    `params` is `model.state_dict()` or `model.named_parameters()`. Before any data moves, the
    ranks compare names, shapes and dtypes: a mismatch raises ValueError on every rank, naming
    the parameter. Tensors of one dtype travel fused, in one broadcast.
    """
    what = "broadcast_parameters"
    runtime._require(what)
    _check_root(root_rank, what)
    entries = named_tensors(params, what)
    if runtime._state.size == 1:
        return
    meta = [(name, tuple(t.shape), str(t.dtype)) for name, t in entries]
    _check_same(runtime.allgather_object(meta, what), root_rank)
    fused([t for _, t in entries], what, lambda flat, dtype: _broadcast_array(
        flat, root_rank, f"{what} ({dtype} parameters)"))


def _check_same(metas, root_rank):
    root = metas[root_rank]
    root_index = {name: (shape, dtype) for name, shape, dtype in root}
    for other, meta in enumerate(metas):
        names = [name for name, _, _ in meta]
        missing = [name for name in root_index if name not in names]
        extra = [name for name in names if name not in root_index]
        if missing or extra or len(meta) != len(root):
            raise ValueError(
                f"broadcast_parameters: rank {other} has {len(meta)} parameters and root rank "
                f"{root_rank} has {len(root)}; missing on rank {other}: {missing or 'none'}, "
                f"only on rank {other}: {extra or 'none'}. Fix: build the same model on every "
                f"rank before broadcasting"
            )
        for name, shape, dtype in meta:
            if (shape, dtype) != root_index[name]:
                root_shape, root_dtype = root_index[name]
                raise ValueError(
                    f"broadcast_parameters: parameter {name!r} has shape {shape} ({dtype}) on "
                    f"rank {other} but {root_shape} ({root_dtype}) on root rank {root_rank}. "
                    f"Fix: build the same model on every rank before broadcasting"
                )


def broadcast_object(obj, root_rank=0, name=None):
    """`root_rank`'s Python object (pickled) on every rank, e.g. an epoch to resume from."""
    what = f"broadcast_object of {name or 'an object'}"
    runtime._require("broadcast_object")
    _check_root(root_rank, what)
    if runtime._state.size == 1:
        return obj
    return runtime.broadcast_object(obj, root_rank, what)


def allgather_object(obj, name=None):
    """Every rank's Python object (pickled), as a list indexed by rank."""
    runtime._require("allgather_object")
    if runtime._state.size == 1:
        return [obj]
    return runtime.allgather_object(obj, f"allgather_object of {name or 'an object'}")


def broadcast_optimizer_state(optimizer, root_rank=0):
    """Give every rank `root_rank`'s optimizer state and hyperparameters
    (hvd.broadcast_optimizer_state), through state_dict / load_state_dict."""
    what = "broadcast_optimizer_state"
    runtime._require(what)
    _check_root(root_rank, what)
    if not (hasattr(optimizer, "state_dict") and hasattr(optimizer, "load_state_dict")):
        raise TypeError(
            f"{what}: expected a kit.torch.optim optimizer (with state_dict and "
            f"load_state_dict), got {type(optimizer).__name__}"
        )
    if runtime._state.size == 1:
        return
    state = optimizer.state_dict() if runtime._state.rank == root_rank else None
    state = runtime.broadcast_object(_to_arrays(state), root_rank, what)
    if runtime._state.rank != root_rank:
        optimizer.load_state_dict(_to_tensors(state))


class _Array:
    """A tensor inside a pickled state dict."""

    def __init__(self, array):
        self.array = array


def _to_arrays(value):
    if isinstance(value, Tensor):
        return _Array(host_array(value, "broadcast_optimizer_state").copy())
    if isinstance(value, dict):
        return {key: _to_arrays(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_to_arrays(item) for item in value)
    return value


def _to_tensors(value):
    if isinstance(value, _Array):
        return tensor(value.array)
    if isinstance(value, dict):
        return {key: _to_tensors(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_to_tensors(item) for item in value)
    return value
