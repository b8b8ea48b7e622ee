"""The `ctx` of a custom Function: what forward leaves for backward (and for jvp).

Public as `kit.FunctionCtx`; the Function machinery itself is in kit/function.py.
"""

from __future__ import annotations

import warnings

from kit._tensor import Tensor
from kit.engine import FREED, SavedOutput, check_versions


class FunctionCtx:
    """The `ctx` of a Function: what forward leaves for backward."""

    _known = {"needs_input_grad", "materialize_grads"}
    # Class defaults: most Functions never call save_for_forward, so apply pays nothing for it.
    _saved_forward = ()
    _forward_versions = ()
    # True while kit.func calls the Function's jvp: saved_tensors is then what
    # save_for_forward kept, as in PyTorch.
    _in_jvp = False

    def __init__(self):
        object.__setattr__(self, "needs_input_grad", ())
        object.__setattr__(self, "materialize_grads", True)
        object.__setattr__(self, "_saved", ())
        object.__setattr__(self, "_versions", ())
        object.__setattr__(self, "_dirty", ())
        object.__setattr__(self, "_non_differentiable", ())
        object.__setattr__(self, "_node", None)

    def __setattr__(self, name, value):
        if isinstance(value, Tensor) and not name.startswith("_") and name not in self._known:
            warnings.warn(
                f"ctx.{name} = <Tensor>: a tensor stored as a ctx attribute is not tracked: an "
                f"in-place change to it before backward goes unnoticed (the gradient silently "
                f"uses the new values) and it is not freed after backward. Use "
                f"ctx.save_for_backward({name}) in forward and ctx.saved_tensors in backward.",
                UserWarning,
                stacklevel=2,
            )
        object.__setattr__(self, name, value)

    def save_for_backward(self, *tensors):
        """Keep tensors (inputs, outputs or intermediates; None allowed) for backward."""
        for i, t in enumerate(tensors):
            if t is not None and not isinstance(t, Tensor):
                fix = "store non-tensors as ctx attributes (ctx.k = 3)"
                if isinstance(t, tuple) and any(isinstance(v, Tensor) for v in t):
                    fix = (
                        "unpack the tuple: setup_context(ctx, inputs, output) gets all forward "
                        "inputs as one tuple, so write `x, y = inputs` and then "
                        "ctx.save_for_backward(x, y) (or ctx.save_for_backward(*inputs))"
                    )
                raise TypeError(
                    f"save_for_backward can only save tensors, but argument {i} is of type "
                    f"{type(t).__name__}. Fix: {fix}"
                )
        object.__setattr__(self, "_saved", tuple(tensors))
        object.__setattr__(
            self, "_versions", tuple(-1 if t is None else t._vc[0] for t in tensors)
        )

    def save_for_forward(self, *tensors):
        """Keep tensors (None allowed) for the `jvp` staticmethod, which reads them as
        `ctx.saved_tensors` (as in PyTorch; jvp sees () if nothing was saved this way).

        kit.func.jvp / jacfwd call a Function's jvp where it defines one
        (kit/func/_function_jvp.py)."""
        for i, t in enumerate(tensors):
            if t is not None and not isinstance(t, Tensor):
                raise TypeError(
                    f"save_for_forward expects all arguments to be tensors; but got {i}-th "
                    f"argument of type {type(t).__name__}"
                )
        object.__setattr__(self, "_saved_forward", tuple(tensors))

    @property
    def saved_tensors(self):
        if self._in_jvp:
            return self._forward_tensors()
        node = self._node
        if node is None:  # not recorded (or still inside forward): what was saved, as it is
            return self._saved
        if node.saved is FREED:
            raise RuntimeError(
                "Trying to backward through the graph a second time (or directly access saved "
                "tensors after they have already been freed). Saved intermediate values of the "
                "graph are freed when you call .backward() or autograd.grad(). Specify "
                "retain_graph=True if you need to backward through the graph a second time or if "
                "you need to access saved tensors after calling backward."
            )
        return tuple(node.unpack_saved(True))

    def _saved_sources(self):
        """saved_tensors as @once_differentiable looks at them (for their autograd identity),
        without running unpack hooks again: an unpack hook runs once per access in backward,
        as in PyTorch, and a checkpoint's value can be handed over only once."""
        node = self._node
        if node is None:
            return self._saved
        return tuple(node.unpack_saved(True, hooks=False))

    def _has_saved(self):
        node = self._node
        return bool(self._saved) if node is None else node.saved not in ((), FREED)

    def _forward_tensors(self):
        """saved_tensors inside jvp. PyTorch calls jvp during forward; kit calls it later, so a
        tensor changed in place since save_for_forward is refused rather than silently used."""
        node = self._node
        if node is None:
            return self._saved_forward
        saved, versions = self._saved_forward, self._forward_versions
        check_versions(node, saved, versions, "forward-mode gradient computation",
                       " with ctx.save_for_forward")
        return tuple(
            Tensor._from_node(node.out_data[v.index], node, v.index) if type(v) is SavedOutput
            else v for v in saved)

    def mark_dirty(self, *tensors):
        """Declare inputs that forward modified in place (and returns)."""
        object.__setattr__(self, "_dirty", tensors)

    def mark_non_differentiable(self, *tensors):
        """Declare outputs that have no gradient (indices, masks)."""
        object.__setattr__(self, "_non_differentiable", tensors)

    def set_materialize_grads(self, value: bool):
        """With False, gradients of unused outputs reach backward as None instead of zeros."""
        object.__setattr__(self, "materialize_grads", bool(value))
