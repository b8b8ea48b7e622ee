"""Saved-tensor hooks: what backward keeps, packed when it is saved and unpacked when it is used.

PyTorch's `torch.autograd.graph.saved_tensors_hooks(pack_hook, unpack_hook)`. Inside the block,
every tensor an op saves for backward (a built-in op's input or output, a Function's
`save_for_backward`) is passed to `pack_hook` as the op ends, and the node keeps what `pack_hook`
returned instead of the tensor. When backward (or `ctx.saved_tensors`) needs it,
`unpack_hook(packed)` gives it back. Blocks nest and only the innermost pair applies; a node
unpacks with the pair that packed it. `save_on_cpu` is one such pair; activation checkpointing
(kit/checkpoint.py) is another.

As in PyTorch: `pack_hook` runs with grad mode off and gets the tensor itself (a saved output is
passed as the output Tensor); it may not change it in place; `unpack_hook` must return a Tensor,
and what it returns takes the autograd identity of the original (the output of the same node, or
the same leaf), so a double backward through it works. Hooks stay active inside hooks.

kit does better on misuse: an unpacked tensor of another shape, dtype or device is refused,
naming the op; one that shares the original's storage is still version-checked (PyTorch skips
the in-place check once hooks are set, and an identity pair then gives a wrong gradient
silently); a pack hook that saves a tensor under its own hooks is refused (PyTorch recurses until
RecursionError).

>>> import kit
>>> from kit.saved_tensors import saved_tensors_hooks
>>> x = kit.tensor([1.0, 2.0], requires_grad=True)
>>> shapes = []
>>> with saved_tensors_hooks(lambda t: shapes.append(tuple(t.shape)) or t, lambda t: t):
...     y = x.exp().sum()  # exp saves its output
>>> y.backward(); shapes, x.grad
([(2,)], tensor([2.7183, 7.3891]))
"""

from __future__ import annotations

import numpy as np

from kit import backend
from kit._modes import STATE, Mode, enter, leave
from kit.grad_mode import GradMode

__all__ = ["SavedTensor", "save_on_cpu", "saved_tensors_hooks"]


class saved_tensors_hooks(Mode):  # noqa: N801 - PyTorch's name
    """Pack every tensor saved for backward in this block with `pack_hook`; backward gets it
    back through `unpack_hook` (PyTorch's torch.autograd.graph.saved_tensors_hooks)."""

    __slots__ = ("pack_hook", "unpack_hook", "_packing")

    def __init__(self, pack_hook, unpack_hook):
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook
        self._packing = False

    def switches(self, state):
        return {"saved_hooks": self, "extras": True}


class save_on_cpu(saved_tensors_hooks):  # noqa: N801 - PyTorch's name
    """Keep what backward needs in CPU memory and copy it back to its device when it is used:
    GPU memory traded for copies. On the CPU nothing is copied.

    `pin_memory` and `device_type` are taken for PyTorch's signature; kit's copies are
    synchronous, so the results are the same either way.
    """

    __slots__ = ()

    def __init__(self, pin_memory=False, device_type="cuda"):
        super().__init__(_to_cpu, _to_device)


def _to_cpu(t):
    # NOTE: detached first: on the CPU `to` returns the tensor itself, and a node keeping its own
    # output Tensor would be a reference cycle (freed only by the garbage collector)
    return t.device, t.detach().to("cpu")


def _to_device(packed):
    device, t = packed
    return t.to(device)


class SavedTensor:
    """A tensor saved for backward under saved_tensors_hooks: what `pack_hook` returned
    (`packed`) and the original's `shape`, `dtype`, `device` and `requires_grad`.
    `Node.saved_values()` shows it as it is; backward and `ctx.saved_tensors` unpack it."""

    __slots__ = ("packed", "shape", "dtype", "device", "requires_grad", "_unpack_hook", "_vc",
                 "_version", "_edge", "_output", "_array")

    def __repr__(self):
        return (f"SavedTensor(shape={list(self.shape)}, dtype={self.dtype}, "
                f"packed={type(self.packed).__name__})")

    def unpack(self, node, differentiable):
        """The tensor back from `unpack_hook`: a Tensor with the original's autograd identity
        if `differentiable` (output `self._output` of `node`, or the original's edge), else its
        array. `node` is the node that saved it (None for a checkpoint's input)."""
        t = self._unpack_hook(self.packed)
        if not isinstance(t, Tensor):
            raise TypeError(
                f"Output of saved tensor unpack_hook expected to be a Tensor but got result of "
                f"type {type(t).__name__} (unpacking what {_who(node)} saved). Fix: unpack_hook "
                f"must return the tensor that pack_hook was given, or an equal one"
            )
        data = t._data
        if data.shape != self.shape or data.dtype != self.dtype or t.device != self.device:
            raise RuntimeError(
                f"unpack_hook returned a tensor of shape {list(data.shape)}, dtype {data.dtype} "
                f"on {t.device} for one that {_who(node)} saved with shape {list(self.shape)}, "
                f"dtype {self.dtype} on {self.device}. Fix: unpack_hook(pack_hook(t)) must give "
                f"back t's values, shape, dtype and device"
            )
        if t._vc is self._vc and self._vc[0] != self._version:
            raise RuntimeError(
                f"one of the variables needed for gradient computation has been modified by an "
                f"inplace operation: a saved tensor of shape {list(self.shape)} and dtype "
                f"{self.dtype}, saved by {_who(node)} and given back unchanged by unpack_hook, "
                f"is at version {self._vc[0]}; expected version {self._version} instead. Fix: "
                f"do not modify it in place, or have pack_hook keep a copy (t.clone())"
            )
        if self._array or not differentiable:
            return data
        value = self._as_original(data, node)
        if self._output is None:
            value._vc = version_counter(t)
        return value

    def stand_in(self, node):
        """A Tensor with the original's shape, dtype and autograd identity but no values of
        its own (a read-only broadcast zero), made without running unpack_hook."""
        zero = backend.to_device(np.zeros((), self.dtype), self.device)
        xp = backend.get_array_module(zero)
        return self._as_original(xp.broadcast_to(zero, self.shape), node)

    def _as_original(self, data, node):
        if self._output is not None:
            return Tensor._from_node(data, node, self._output)
        value = Tensor(data)
        if self._edge is not None:
            value._rg = True
            value._edge = self._edge
            if type(self._edge[0]) is not AccumulateGrad:
                value._grad_fn, value._nr = self._edge
        return value


def _who(node):
    return "a checkpointed function's input" if node is None else node.name()


def pack(hooks, t, output=None, array=False):
    """`t` as `hooks` save it: a SavedTensor holding `pack_hook(t)`. `output` is the index of
    `t` among the outputs of the node saving it (None for an input); `array` marks a raw array
    an op saved (a where's condition), given back as an array."""
    if hooks._packing:
        raise RuntimeError(
            "saved_tensors_hooks: the pack hook saved a tensor for backward under its own hooks "
            "(it ran an op that records, with grad mode on): packing would never end (PyTorch "
            "recurses until RecursionError). Fix: compute in pack_hook under kit.no_grad(), on "
            "t.detach()"
        )
    saved = SavedTensor()
    saved.shape, saved.dtype, saved.device = t._data.shape, t._data.dtype, t.device
    saved.requires_grad = t.requires_grad  # (a view's history brought up to date first)
    saved._unpack_hook = hooks.unpack_hook
    saved._vc = version_counter(t)
    saved._version = saved._vc[0]
    saved._output = output
    saved._array = array
    saved._edge = (t._edge or t._leaf_edge()) if saved.requires_grad and output is None else None
    hooks._packing = True
    mode = enter(GradMode(False))
    try:
        saved.packed = hooks.pack_hook(t)
    finally:
        leave(mode)
        hooks._packing = False
    if saved._vc[0] != saved._version:
        raise RuntimeError(
            "A saved tensor pack hook is modifying its input in place. Tensors provided as input "
            "to pack hook can not be modified by in-place operations as this can lead to "
            "unexpected side-effects. Fix: pack a copy (t.clone()) and change that"
        )
    return saved


def pack_node(node, outputs):
    """Pack what `node` saved with the innermost hooks (record() and Function.apply call it
    while hooks are set). `outputs` are the node's output Tensors, for saved outputs."""
    hooks = STATE.saved_hooks
    saved = []
    packed_output = False
    for v in node.saved:
        if type(v) is SavedOutput:
            v = pack(hooks, outputs[v.index], output=v.index)
            packed_output = True
        elif isinstance(v, Tensor):
            v = pack(hooks, v)
        elif isinstance(v, np.ndarray) or backend.device_of(v) == "gpu":
            v = pack(hooks, Tensor(v), array=True)
        saved.append(v)
    node.saved = tuple(saved)
    if packed_output and type(node.out_data) is not tuple:
        node.out_data = None  # a built-in op's output: the SavedTensor is what is kept now


# bound by kit._tensor once the Tensor class exists (the modules need each other)
Tensor = version_counter = AccumulateGrad = SavedOutput = None


def bind(tensor_cls, counter, accumulate, saved_output):
    global Tensor, version_counter, AccumulateGrad, SavedOutput
    Tensor, version_counter, AccumulateGrad = tensor_cls, counter, accumulate
    SavedOutput = saved_output
