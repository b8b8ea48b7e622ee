"""Module hooks, as torch.nn.Module's: forward pre-hooks, forward hooks, and the full backward
hooks that see the gradients with respect to a module's inputs and outputs.

A call of a module with backward hooks puts an identity Function on its tensor inputs and one on
its tensor outputs. The outputs' one runs first in backward: it gets `grad_output` (and runs
the backward pre-hooks, which may replace it). The inputs' one runs once every use of the
inputs inside the module has sent its gradient: it gets `grad_input` and runs the backward hooks
(which may replace it). When no input requires grad, the hooks run from the outputs' identity,
with `grad_input` all None (PyTorch warns then; kit does not). Modules without backward hooks
pay one `if` per call.
"""

from __future__ import annotations

from collections import OrderedDict

from kit._modes import STATE
from kit._tensor import RemovableHandle, Tensor
from kit.function import Function


class ModuleHooks:
    """The hook half of `Module`: registration and the call that runs the hooks."""

    def _init_hooks(self):
        for table in ("_forward_pre_hooks", "_forward_hooks", "_backward_pre_hooks",
                      "_backward_hooks"):
            object.__setattr__(self, table, OrderedDict())

    def register_forward_pre_hook(self, hook):
        """`hook(module, args)` runs before forward; it may return replacement args."""
        return _register(self._forward_pre_hooks, hook)

    def register_forward_hook(self, hook):
        """`hook(module, args, output)` runs after forward; it may return a replacement output."""
        return _register(self._forward_hooks, hook)

    def register_full_backward_pre_hook(self, hook):
        """`hook(module, grad_output)` runs when the gradients of the module's outputs are
        known, before those of its inputs; it may return a replacement grad_output (a tuple)."""
        return _register(self._backward_pre_hooks, hook)

    def register_full_backward_hook(self, hook):
        """`hook(module, grad_input, grad_output)` runs when the gradients of the module's
        inputs are computed; it may return a replacement grad_input (a tuple).

        grad_input has one entry per positional argument: None for a non-Tensor argument or
        one that does not require grad (PyTorch gives zeros for the latter when another input
        requires grad). Gradients of parameters are not in it: use Tensor.register_hook.

        >>> import kit
        >>> from kit import nn
        >>> layer = nn.Linear(2, 1)
        >>> seen = []
        >>> h = layer.register_full_backward_hook(lambda m, gi, go: seen.append((gi, go)))
        >>> layer(kit.ones(1, 2, requires_grad=True)).sum().backward()
        >>> [tuple(g.shape) for g in seen[0][0]], [tuple(g.shape) for g in seen[0][1]]
        ([(1, 2)], [(1, 1)])
        """
        return _register(self._backward_hooks, hook)

    def __call__(self, *args, **kwargs):
        if STATE.tracing is not None:  # kit.compile: the graph holds for this training flag only
            STATE.tracing.module(self)
        if self._forward_pre_hooks:
            for hook in list(self._forward_pre_hooks.values()):
                result = hook(self, args)
                if result is not None:
                    args = result if isinstance(result, tuple) else (result,)
        call = None
        if self._backward_hooks or self._backward_pre_hooks:
            call = _BackwardCall(self, args)
            args = call.inputs()
        out = self.forward(*args, **kwargs)
        if self._forward_hooks:
            for hook in list(self._forward_hooks.values()):
                result = hook(self, args, out)
                if result is not None:
                    out = result
        return out if call is None else call.outputs(out)


def _register(table, hook):
    handle = RemovableHandle(table)
    table[handle.id] = hook
    return handle


class _BackwardCall:
    """One call of a module with backward hooks: its inputs and outputs, seen by backward."""

    def __init__(self, module, args):
        self.module = module
        self.args = args
        self.grad_output = None
        self.positions, self.n_outputs = [], 0  # the outputs' (set by `outputs`)
        # positions of the inputs whose gradient backward computes
        self.tracked = [i for i, a in enumerate(args) if isinstance(a, Tensor) and a.requires_grad]

    def inputs(self):
        if not self.tracked:
            return self.args
        wrapped = BackwardHookFunction.apply(self, "inputs", *(self.args[i] for i in self.tracked))
        args = list(self.args)
        for i, t in zip(self.tracked, wrapped, strict=True):
            args[i] = t
        return tuple(args)

    def outputs(self, out):
        items = out if isinstance(out, (tuple, list)) else (out,)
        self.positions = [i for i, o in enumerate(items)
                          if isinstance(o, Tensor) and o.requires_grad]
        if not self.positions:
            return out
        self.n_outputs = len(items)
        wrapped = BackwardHookFunction.apply(self, "outputs", *(items[i] for i in self.positions))
        items = list(items)
        for i, t in zip(self.positions, wrapped, strict=True):
            items[i] = t
        return type(out)(items) if isinstance(out, (tuple, list)) else items[0]

    def backward_outputs(self, grads):
        """The gradients of the outputs arrived: pre-hooks, then (with no input to wait for)
        the full hooks."""
        grad_output = [None] * self.n_outputs
        for i, g in zip(self.positions, grads, strict=True):
            grad_output[i] = g
        grad_output = tuple(grad_output)
        for hook in list(self.module._backward_pre_hooks.values()):
            result = hook(self.module, grad_output)
            if result is not None:
                grad_output = _checked(self.module, result, len(grad_output), "grad_output")
        self.grad_output = grad_output
        if not self.tracked:
            self._run_hooks((None,) * len(self.args))
        return tuple(grad_output[i] for i in self.positions)

    def backward_inputs(self, grads):
        grad_input = [None] * len(self.args)
        for i, g in zip(self.tracked, grads, strict=True):
            grad_input[i] = g
        grad_input = self._run_hooks(tuple(grad_input))
        return tuple(grad_input[i] for i in self.tracked)

    def _run_hooks(self, grad_input):
        for hook in list(self.module._backward_hooks.values()):
            result = hook(self.module, grad_input, self.grad_output)
            if result is not None:
                grad_input = _checked(self.module, result, len(grad_input), "grad_input")
        return grad_input


def _checked(module, result, expected, what):
    """A hook's replacement gradients, checked (PyTorch's errors, with the fix)."""
    if not isinstance(result, (tuple, list)):
        raise TypeError(
            f"a backward hook of {type(module).__name__} returned {type(result).__name__}: it "
            f"must return None (to keep {what}) or a tuple of {expected} Tensors or Nones. A "
            f"lambda returns the value of its expression: use a def that returns nothing"
        )
    if len(result) != expected:
        raise RuntimeError(
            f"Backward hook returned an invalid number of {what}, got {len(result)}, but "
            f"expected {expected}. Fix: return one entry per {what} (None to keep it empty)"
        )
    for g in result:
        if g is not None and not isinstance(g, Tensor):
            raise TypeError(
                f"expected Variable, but hook returned '{type(g).__name__}' (a backward hook of "
                f"{type(module).__name__}). Fix: return Tensors or None in {what}"
            )
    return tuple(result)


class BackwardHookFunction(Function):
    """Passes tensors through unchanged; in backward, hands their gradients to a module's
    hooks (`side` is "inputs" or "outputs")."""

    @staticmethod
    def forward(ctx, call, side, *tensors):
        ctx.call, ctx.side = call, side
        ctx.set_materialize_grads(False)  # an unused output's gradient stays None
        return tensors

    @staticmethod
    def backward(ctx, *grads):
        if ctx.side == "outputs":
            return (None, None, *ctx.call.backward_outputs(grads))
        return (None, None, *ctx.call.backward_inputs(grads))
