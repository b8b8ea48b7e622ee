"""Gradient reduction during backward, with tensor fusion (Horovod's) and in-order buckets
(PyTorch DDP's).

The parameters are laid, last first (the order backward reaches them), into fusion buffers of at
most `fusion_threshold_bytes` each, one dtype per buffer. A gradient hook on each parameter copies
its gradient into its buffer as soon as backward computes it; a full buffer starts a non-blocking
MPI Iallreduce at once, so communication overlaps the rest of backward. Buffers start in index
order on every rank (MPI requires every rank to issue collectives in one order), and
`synchronize` starts the rest, waits for all and writes the reduced gradients into `.grad`.

Each buffer ends with one flag per parameter (1 where this rank had a gradient): a parameter
that no rank computed a gradient for keeps `.grad` None, one that some ranks did gets the
average over all ranks (the others count as zero), as one big batch would give. The buffers of
GPU parameters live on the GPU and are reduced by NCCL when CuPy has it (kit.distributed.nccl);
otherwise on the host, by MPI.

>>> import kit, kit.distributed as dist
>>> dist.init()
>>> w = kit.tensor([1.0, 2.0], requires_grad=True)
>>> reducer = dist.GradientReducer([("w", w)])
>>> (w * w).sum().backward(); reducer.synchronize(); w.grad
tensor([2., 4.])
"""

from __future__ import annotations

import numpy as np

from kit import backend
from kit.distributed import nccl, runtime
from kit.distributed.collectives import Average, Sum, as_tensor_like, device_array, write_back


class _Slot:
    """One parameter's place in a fusion buffer."""

    def __init__(self, name, param, offset, flag):
        self.name, self.param = name, param
        self.offset, self.flag = offset, flag
        self.numel = param.numel()
        self.passes = 0
        self.filled = False


class _Bucket:
    """One fusion buffer: a contiguous send buffer and the receive buffer it reduces into."""

    def __init__(self, index, members, dtype, xp):
        self.index = index
        self.on_device = xp is not np  # reduced by NCCL
        total = 0
        self.slots = []
        for name, param in members:
            self.slots.append(_Slot(name, param, total, None))
            total += param.numel()
        for position, slot in enumerate(self.slots):
            slot.flag = total + position
        self.send = xp.zeros(total + len(self.slots), dtype=dtype)
        self.recv = xp.empty_like(self.send)
        self.flags = [slot.flag for slot in self.slots]
        self.ready = 0
        self.request = None

    def describe(self):
        names = [slot.name for slot in self.slots]
        shown = ", ".join(names[:4]) + (", ..." if len(names) > 4 else "")
        return f"gradient allreduce of fusion buffer {self.index} ({shown})"


class GradientReducer:
    """Averages (or sums) the gradients of `named_params` over every rank, started from
    gradient hooks during backward; `synchronize()` finishes it."""

    def __init__(self, named_params, op=Average, backward_passes_per_step=1,
                 fusion_threshold_bytes=None):
        runtime._require("GradientReducer")
        if op is not Average and op is not Sum:
            raise ValueError(f"GradientReducer: op must be Average or Sum, got {op!r}")
        if backward_passes_per_step < 1:
            raise ValueError(
                f"backward_passes_per_step must be at least 1, got {backward_passes_per_step}"
            )
        self.op = op
        self.backward_passes_per_step = backward_passes_per_step
        threshold = (runtime.settings.fusion_threshold_bytes if fusion_threshold_bytes is None
                     else fusion_threshold_bytes)
        self.buckets = _plan(list(named_params), threshold)
        self.next_launch = 0
        self.handles = []
        for bucket in self.buckets:
            for slot in bucket.slots:
                self.handles.append(slot.param.register_hook(self._hook(bucket, slot)))

    def _hook(self, bucket, slot):
        def on_gradient(g):
            slot.passes += 1
            if slot.passes > self.backward_passes_per_step:
                raise RuntimeError(
                    f"the gradient of {slot.name!r} was computed {slot.passes} times before "
                    f"optimizer.step() (backward_passes_per_step="
                    f"{self.backward_passes_per_step}). Fix: call step() after each backward, "
                    f"or pass backward_passes_per_step={slot.passes} to accumulate locally"
                )
            if slot.passes < self.backward_passes_per_step:
                return None
            # NOTE: the hook runs before backward adds g into .grad, so the gradient to reduce
            # is what .grad will hold: any earlier accumulation plus g.
            grad = device_array(g, "gradient allreduce").reshape(-1)
            have = slot.param.grad
            view = bucket.send[slot.offset:slot.offset + slot.numel]
            if have is None:
                view[...] = grad
            else:
                backend.get_array_module(view).add(
                    device_array(have, "gradient allreduce").reshape(-1), grad, out=view)
            bucket.send[slot.flag] = 1
            slot.filled = True
            bucket.ready += 1
            self._launch_ready()
            return None

        return on_gradient

    def _launch_ready(self):
        buckets = self.buckets
        while self.next_launch < len(buckets):
            bucket = buckets[self.next_launch]
            if bucket.ready < len(bucket.slots):
                break
            self._launch(bucket)
        in_flight = [b.request for b in buckets[:self.next_launch]
                     if b.request is not None and not b.on_device]
        if in_flight:
            runtime.MPI.Request.Testall(in_flight)  # drives MPI's progress while backward runs

    def _launch(self, bucket):
        if bucket.on_device:  # an event recorded behind NCCL's call on the CUDA stream
            bucket.request = nccl.start_allreduce(bucket.send, bucket.recv, bucket.describe())
        else:
            bucket.request = runtime._state.comm.Iallreduce(bucket.send, bucket.recv)
        self.next_launch += 1

    def synchronize(self):
        """Start the buffers not yet started (gradients missing on this rank count as zero),
        wait for every one, and write the results into `.grad`."""
        for bucket in self.buckets[self.next_launch:]:
            for slot in bucket.slots:
                if not slot.filled:
                    bucket.send[slot.offset:slot.offset + slot.numel] = 0
                    bucket.send[slot.flag] = 0
            self._launch(bucket)
        size = runtime._state.size
        for bucket in self.buckets:
            if bucket.on_device:
                nccl.wait(bucket.request, bucket.describe())
            else:
                runtime.wait([bucket.request], bucket.describe())
            xp = backend.get_array_module(bucket.recv)
            if self.op is Average and size > 1:
                xp.divide(bucket.recv, size, out=bucket.recv)
            flags = backend.to_device(bucket.recv[bucket.flags], "cpu")  # one copy from a GPU
            for slot, flag in zip(bucket.slots, flags, strict=True):
                if flag > 0:
                    _store(slot, bucket.recv[slot.offset:slot.offset + slot.numel])
                slot.passes, slot.filled = 0, False
            bucket.send[bucket.flags] = 0
            bucket.ready, bucket.request = 0, None
        self.next_launch = 0

    def remove(self):
        """Take the gradient hooks off the parameters."""
        for handle in self.handles:
            handle.remove()
        self.handles = []


def _store(slot, values):
    param = slot.param
    if param.grad is None:
        param.grad = as_tensor_like(values.reshape(param.shape).copy(), param)
    else:
        write_back(param.grad, values)


def fusion_buckets(named_params, fusion_threshold_bytes):
    """How a GradientReducer lays the parameters into fusion buffers, in the order it starts
    their allreduce: a list of buffers, each a list of parameter names (no MPI needed).

    >>> import kit
    >>> from kit import nn
    >>> fusion_buckets(nn.Linear(100, 10).named_parameters(), 1024)
    [['bias'], ['weight']]
    """
    return [[name for name, _ in members]
            for members, _ in _group(list(named_params), fusion_threshold_bytes)]


def _plan(named_params, threshold):
    return [_Bucket(index, members, dtype, xp)
            for index, (members, (dtype, xp)) in enumerate(_group(named_params, threshold))]


def _group(named_params, threshold):
    """(members, (dtype, xp)) of each fusion buffer, last parameter first: a new buffer starts
    when the dtype or the buffer's array module changes (NumPy for MPI, CuPy for NCCL) or the
    next tensor would take the buffer past `threshold` bytes."""
    groups, members, kind, used = [], [], None, 0
    for name, param in reversed(named_params):
        if not param.requires_grad:
            continue
        xp = backend.get_array_module(param._data) if nccl.usable(param._data) else np
        param_kind = (np.dtype(param.dtype), xp)
        nbytes = param.numel() * param_kind[0].itemsize
        if members and (param_kind != kind or used + nbytes > threshold):
            groups.append((members, kind))
            members, used = [], 0
        members.append((name, param))
        kind, used = param_kind, used + nbytes
    if members:
        groups.append((members, kind))
    return groups
