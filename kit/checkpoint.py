"""Activation checkpointing: keep a region's inputs, recompute what its backward needs.

PyTorch's `torch.utils.checkpoint.checkpoint` and `checkpoint_sequential` on kit's engine (spelt
`kit.torch.utils.checkpoint`). Memory is traded for compute: inside `checkpoint(fn, *args)` every
tensor an op saves for backward is replaced by a small placeholder (saved-tensor hooks,
kit/saved_tensors.py), so the region's activations are freed as soon as the forward moves on;
when backward first needs one of them, `fn` runs again on the kept inputs and the values it saves
are handed over. Checkpointing n equal layers in sqrt(n) segments keeps about 2 sqrt(n) layers'
activations instead of n, for one extra forward.

Two variants, as in PyTorch:
- `use_reentrant=False` (recommended): the forward is recorded as usual, with the placeholders;
  the recomputation runs once per backward pass, stops as soon as the last needed value is
  recomputed, replays the forward's random draws (`preserve_rng_state=True`), checks that it saved
  the same number of tensors with the same shapes, dtypes and devices (`determinism_check`), and
  works with `kit.grad` and double backward (the recomputed values take the autograd identity of
  the originals).
- `use_reentrant=True` (PyTorch's default, with a warning, when `use_reentrant` is not given): a
  Function whose forward runs `fn` under no_grad and whose backward recomputes it and runs a
  separate backward through it. Only `.backward()` works through it (not `kit.grad`), an input
  that requires grad is needed, and its gradients are first order only: where PyTorch silently
  returns gradients without history under create_graph=True, kit's refuse a second derivative
  with a message.

>>> import kit
>>> from kit.checkpoint import checkpoint
>>> w = kit.tensor([0.5, -1.0], requires_grad=True)
>>> y = checkpoint(lambda h: (h * w).tanh().exp(), kit.tensor([1.0, 2.0]), use_reentrant=False)
>>> y.sum().backward(); w.grad
tensor([1.2484, 0.0539])
"""

from __future__ import annotations

import warnings
import weakref

from kit._creation import rng_state, set_rng_state
from kit._tensor import Tensor, version_counter
from kit.autograd import backward
from kit.function import Function, refuse_second_derivative
from kit.grad_mode import STATE, enable_grad, running_backward
from kit.saved_tensors import SavedTensor, pack, saved_tensors_hooks

__all__ = ["CheckpointError", "checkpoint", "checkpoint_sequential"]

_EXPLICIT = (
    "the use_reentrant parameter should be passed explicitly. Starting in PyTorch 2.9, calling "
    "checkpoint without use_reentrant will raise an exception. use_reentrant=False is "
    "recommended, but if you need to preserve the current default behavior, you can pass "
    "use_reentrant=True. Refer to docs for more details on the differences between the two "
    "variants."
)
_TIP = ("Fix: make the checkpointed function compute the same ops on the same shapes every time "
        "it runs (no branch on a global, a counter or the data's values), or pass "
        "determinism_check='none' if you know the difference is harmless.")


class CheckpointError(RuntimeError):
    """The recomputation did not replay the forward it stands in for."""


def checkpoint(function, *args, use_reentrant=None, context_fn=None, determinism_check="default",
               debug=False, early_stop=True, **kwargs):
    """Run `function(*args, **kwargs)` keeping only its inputs for backward, and run it again
    when backward needs what it saved (PyTorch's torch.utils.checkpoint.checkpoint).

    `preserve_rng_state=True` (a keyword) replays the forward's random draws (dropout) in the
    recomputation. `context_fn` and `debug` (selective checkpointing, operator logs) are not
    supported by kit and refused.
    """
    if use_reentrant is None:
        warnings.warn(f"torch.utils.checkpoint: {_EXPLICIT}", UserWarning, stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs and use_reentrant:
        raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
    if use_reentrant:
        if context_fn is not None or debug:
            raise ValueError(
                "Passing `context_fn` or `debug` is only supported when use_reentrant=False.")
        return _Reentrant.apply(function, preserve, *args)
    if context_fn is not None or debug:
        raise NotImplementedError(
            "kit's checkpoint does not support context_fn (selective checkpointing) or debug "
            "(operator logs). Fix: leave them out; the recomputation is checked for a different "
            "number, shape, dtype or device of saved tensors all the same")
    if determinism_check not in ("default", "none"):
        raise ValueError(f"determinism_check should be one of ['default', 'none'], but got "
                         f"{determinism_check}")
    if not STATE.enabled:
        return function(*args, **kwargs)
    frame = _Frame(function, args, kwargs, preserve, early_stop, determinism_check == "default")
    with _ForwardHooks(frame):
        return function(*args, **kwargs)


def checkpoint_sequential(functions, segments, input, use_reentrant=None, **kwargs):  # noqa: A002
    """Run `functions` (a Sequential or a list of callables) one after another on `input`,
    checkpointing each of `segments` equal runs of them but the last (PyTorch's
    torch.utils.checkpoint.checkpoint_sequential)."""
    if use_reentrant is None:
        warnings.warn(f"torch.utils.checkpoint.checkpoint_sequential: {_EXPLICIT}", UserWarning,
                      stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
    functions = list(functions)
    if not (isinstance(segments, int) and 1 <= segments <= len(functions)):
        raise ValueError(
            f"checkpoint_sequential: segments must be an int from 1 to the number of functions "
            f"({len(functions)}), got {segments!r}")

    def run(start, end):
        def forward(h):
            for f in functions[start:end + 1]:
                h = f(h)
            return h

        return forward

    size = len(functions) // segments
    end = -1
    for start in range(0, size * (segments - 1), size):
        end = start + size - 1
        input = checkpoint(run(start, end), input, use_reentrant=use_reentrant,  # noqa: A001
                           preserve_rng_state=preserve)
    return run(end + 1, len(functions) - 1)(input)


# --- use_reentrant=False ----------------------------------------------------------------------
class _Holder:
    """What the forward keeps in place of a saved tensor."""

    __slots__ = ("__weakref__",)


class _Pass:
    """Stands for a backward pass when a saved value is unpacked outside one."""

    __slots__ = ("__weakref__",)


class _StopRecomputation(Exception):  # noqa: N818 - a signal, not an error
    pass


class _Frame:
    """One checkpointed call: its inputs, the placeholders its forward saved (in order, with
    their shapes, dtypes and devices) and, per backward pass, the recomputed values."""

    def __init__(self, function, args, kwargs, preserve, early_stop, check):
        self.function, self.kwargs = function, kwargs
        self.inputs = [_save_input(a) if isinstance(a, Tensor) else a for a in args]
        self.rng = rng_state() if preserve else None
        self.early_stop, self.check = early_stop, check
        self.holders = []  # weak references: a node freed after backward frees its holder
        self.metadata = []
        self.recomputed = weakref.WeakKeyDictionary()  # backward pass -> {holder: tensor}

    def unpack(self, holder):
        task = running_backward() or _Pass()
        values = self.recomputed.get(task)
        if values is None:
            values = self.recomputed[task] = self._recompute()
        try:
            return values.pop(holder)
        except KeyError:
            raise CheckpointError(
                "torch.utils.checkpoint: Unpack is being triggered for a tensor that was already "
                "unpacked once. If you are calling ctx.saved_tensors in backward, make sure to "
                "do so only once (keep the tuple it returns)."
            ) from None

    def _recompute(self):
        values = {}
        count = [0]

        def keep(t):
            index = count[0]
            count[0] += 1
            if index >= len(self.holders):
                raise CheckpointError(
                    f"torch.utils.checkpoint: trying to save more tensors during recomputation "
                    f"than during the original forward pass ({len(self.holders)}). {_TIP}")
            # NOTE: detached, so that the recomputed node (which keeps what this returns) and
            # its output Tensor do not refer to each other: no reference cycle.
            t = t.detach() if t.requires_grad else t
            holder = self.holders[index]()
            if holder is not None:
                values[holder] = t
            if self.early_stop and count[0] == len(self.holders):
                raise _StopRecomputation
            return t

        args = [_load_input(a) for a in self.inputs]
        outer = rng_state() if self.rng is not None else None
        try:
            if self.rng is not None:
                set_rng_state(self.rng)
            with saved_tensors_hooks(keep, _identity), enable_grad():
                self.function(*args, **self.kwargs)
        except _StopRecomputation:
            pass
        finally:
            if outer is not None:
                set_rng_state(outer)
        self._check(values, count[0])
        return values

    def _check(self, values, count):
        if count != len(self.holders):
            raise CheckpointError(
                f"torch.utils.checkpoint: A different number of tensors was saved during the "
                f"original forward and recomputation.\nNumber of tensors saved during forward: "
                f"{len(self.holders)}\nNumber of tensors saved during recomputation: {count}.\n"
                f"{_TIP}")
        if not self.check:
            return
        different = []
        for index, (ref, saved) in enumerate(zip(self.holders, self.metadata, strict=True)):
            holder = ref()
            if holder is not None and _metadata(values[holder]) != saved:
                different.append(f"tensor at position {index}:\nsaved metadata: {saved}\n"
                                 f"recomputed metadata: {_metadata(values[holder])}\n")
        if different:
            raise CheckpointError(
                "torch.utils.checkpoint: Recomputed values for the following tensors have "
                "different metadata than during the forward pass.\n" + "".join(different)
                + _TIP)


class _ForwardHooks(saved_tensors_hooks):
    """During a checkpointed forward: a placeholder for each saved tensor."""

    __slots__ = ()

    def __init__(self, frame):
        def keep_placeholder(t):
            holder = _Holder()
            frame.holders.append(weakref.ref(holder))
            if frame.check:
                frame.metadata.append(_metadata(t))
            return holder

        super().__init__(keep_placeholder, frame.unpack)


def _metadata(t):
    return {"shape": tuple(t.shape), "dtype": t.dtype, "device": t.device}


def _identity(t):
    return t


def _save_input(t):
    """A checkpoint's input, kept as a saved tensor: through the saved-tensor hooks of an
    enclosing block (an enclosing checkpoint), or with its version, for the in-place check."""
    hooks = STATE.saved_hooks
    if hooks is not None:
        return pack(hooks, t)
    vc = version_counter(t)
    return t, vc, vc[0]


def _load_input(saved):
    if type(saved) is SavedTensor:
        return saved.unpack(None, True)
    if not isinstance(saved, tuple):
        return saved
    t, vc, version = saved
    if vc[0] != version:
        raise RuntimeError(
            f"one of the variables needed for gradient computation has been modified by an "
            f"inplace operation: an input of a checkpointed function, of shape {list(t.shape)} "
            f"and dtype {t.dtype}, is at version {vc[0]}; expected version {version} instead. "
            f"Fix: do not modify a checkpoint's input in place before backward (use an "
            f"out-of-place op, or .clone() it first)")
    return t


# --- use_reentrant=True -----------------------------------------------------------------------
class _Reentrant(Function):
    """forward runs the function under no_grad; backward runs it again and a backward through it."""

    @staticmethod
    def forward(ctx, run_function, preserve_rng_state, *args):
        if not any(isinstance(a, Tensor) and a.requires_grad for a in args):
            warnings.warn("None of the inputs have requires_grad=True. Gradients will be None",
                          UserWarning, stacklevel=4)
        ctx.run_function = run_function
        ctx.rng = rng_state() if preserve_rng_state else None
        ctx.args = [None if isinstance(a, Tensor) else a for a in args]
        ctx.tensor_indices = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        ctx.save_for_backward(*(a for a in args if isinstance(a, Tensor)))
        return run_function(*args)

    @staticmethod
    def backward(ctx, *grads):
        task = running_backward()
        if task is None or task.grad_call:
            raise RuntimeError(
                "When use_reentrant=True, torch.utils.checkpoint is incompatible with .grad() or "
                "passing an `inputs` parameter to .backward(). To resolve this error, you can "
                "either set use_reentrant=False, or call .backward() without passing the "
                "`inputs` argument.")
        saved = ctx.saved_tensors
        inputs = list(ctx.args)
        for i, t in zip(ctx.tensor_indices, saved, strict=True):
            inputs[i] = t.detach().requires_grad_(t.requires_grad)
        outer = rng_state() if ctx.rng is not None else None
        try:
            if ctx.rng is not None:
                set_rng_state(ctx.rng)
            with enable_grad():
                outputs = ctx.run_function(*inputs)
        finally:
            if outer is not None:
                set_rng_state(outer)
        outputs = (outputs,) if isinstance(outputs, Tensor) else outputs
        pairs = [(o, g) for o, g in zip(outputs, grads, strict=False)
                 if isinstance(o, Tensor) and o.requires_grad]
        if not pairs:
            raise RuntimeError(
                "none of output has requires_grad=True, this checkpoint() is not necessary")
        backward([o for o, _ in pairs], [g for _, g in pairs])
        result = [t.grad if isinstance(t, Tensor) else None for t in inputs]
        if STATE.enabled:  # a create_graph backward: these gradients have no history
            sources = [t for t in (*grads, *saved) if isinstance(t, Tensor) and t.requires_grad]
            if sources:
                result = [None if g is None else refuse_second_derivative(g, sources, _FIRST_ORDER)
                          for g in result]
        return (None, None, *result)


_FIRST_ORDER = (
    "checkpoint with use_reentrant=True gives first-order gradients only: its backward runs a "
    "separate backward() through the recomputed function, which records nothing (PyTorch "
    "returns these gradients without history, so a higher derivative is silently missing). "
    "Fix: checkpoint(..., use_reentrant=False) supports create_graph and double backward"
)
