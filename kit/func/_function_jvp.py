"""Custom Functions under kit.func.jvp / jacfwd: their `jvp` staticmethod is what is used.

kit's jvp is reverse-over-reverse (kit/func/_forward.py): it records the pullback u -> J^T u of
f as a graph and differentiates that graph with respect to u. For a Function the recorded step is
`gi = backward(ctx, g)`, and the only derivative of it that is ever taken is the one with respect
to the incoming gradients g (u reaches the step only through them). Transposed and applied to a
tangent v, that derivative is J v: exactly what the Function's `jvp(ctx, *tangents)` computes.

So while `_linearize` records the pullback (`recording_pullback()`), a FunctionNode whose
Function defines jvp does not run its backward: it records one `JvpNode` whose vjp calls the
Function's jvp. The backward may then use NumPy, be @once_differentiable or be missing, as in
PyTorch's forward mode. A Function without jvp keeps kit's fallback (its backward differentiated
again); when that backward is not differentiable, PyTorch's "You must implement the jvp
function" error is raised here instead of a wrong (zero) tangent coming out later.
"""

from __future__ import annotations

from kit import backend
from kit._modes import Mode
from kit._tensor import Tensor
from kit.engine import NO_EDGE, Node
from kit.function import Function


class recording_pullback(Mode):  # noqa: N801 - used like a function: `with recording_pullback():`
    """The entry of a jvp recording its pullback: FunctionNodes record their backward for
    differentiation w.r.t. g only."""

    __slots__ = ()

    def switches(self, state):
        return {"jvp_backward": _backward}


def has_jvp(cls):
    return cls.jvp is not Function.jvp


def _backward(node, grads):
    """FunctionNode.apply (create_graph) while the pullback of a jvp is being recorded."""
    if not has_jvp(node.function):
        return _differentiable_backward(node, grads)
    edges = tuple(
        (g._edge or g._leaf_edge()) if isinstance(g, Tensor) and g.requires_grad else NO_EDGE
        for g in grads
    )
    if not any(edges):
        return [None] * node.n_inputs  # u does not reach this step: nothing to differentiate
    # NOTE: the values are zeros, not backward(ctx, g). _linearize pulls back u = 0 and keeps
    # only the derivative with respect to u (the pullback's value is discarded), and a
    # pullback is linear in u, so the true values are zeros too; backward is never called.
    xp = backend.get_array_module(_data(next(g for g in grads if g is not None)))
    jvp_node = JvpNode(node, edges)
    return [
        None if not edge else
        Tensor._from_node(xp.zeros(*node.input_meta[i]), jvp_node, i)
        for i, edge in enumerate(node.next_functions)
    ]


class JvpNode(Node):
    """A Function's backward recorded inside jvp: its vjp is the Function's jvp."""

    __slots__ = ("function_node",)
    kind = "custom"

    def __init__(self, function_node, edges):
        super().__init__(function_node.op, None, edges, (), (), None, function_node.input_meta)
        self.function_node = function_node

    @property
    def frontend(self):
        return self.function_node.frontend

    def name(self) -> str:
        return f"{self.function_node.function.__name__}JvpBackward"

    def apply(self, grads, differentiable):
        """Cotangents of the backward's results are tangents of the Function's inputs."""
        node = self.function_node
        cls, ctx = node.function, node.ctx
        xp = backend.get_array_module(_data(next(g for g in grads if g is not None)))
        tangents = []
        for i, meta in enumerate(node.input_meta):
            if meta is None or meta[1].kind not in "fc":
                tangents.append(None)  # non-tensor or integer input: None, as in PyTorch
                continue
            t = grads[i] if i < len(grads) else None
            if t is None:  # a float input without a tangent gets zeros, as in PyTorch
                t = xp.zeros(*meta)
            tangents.append(t if isinstance(t, Tensor) else Tensor(t))
        object.__setattr__(ctx, "_in_jvp", True)
        try:
            result = cls.jvp(ctx, *tangents)
        finally:
            object.__setattr__(ctx, "_in_jvp", False)
        return _output_tangents(node, result, differentiable)


def _data(g):
    from kit.func._batched import physical

    return physical(g)._data if isinstance(g, Tensor) else g


def _output_tangents(node, result, differentiable):
    """jvp's result checked against the outputs (PyTorch's errors, with the fix)."""
    cls = node.function.__name__
    results = result if isinstance(result, tuple) else (result,)
    n = len(node.output_meta)
    if len(results) != n:
        raise RuntimeError(
            f"{cls}.jvp: Function's jvp returned an invalid number of forward gradients "
            f"(expected {n} but got {len(results)}). Fix: return one tangent per output of "
            f"forward, in order (None for an output that is not a differentiable Tensor)"
        )
    non_diff = _non_differentiable(node)
    out = []
    for k, t in enumerate(results):
        if t is None:
            out.append(None)
            continue
        if not isinstance(t, Tensor):
            raise RuntimeError(
                f"{cls}.jvp: expected Variable or None (got {type(t).__name__}) for grad output "
                f"{k}. Fix: return a kit Tensor (or None) for each output"
            )
        if k in non_diff:
            raise RuntimeError(
                f"{cls}.jvp: Function's jvp returned a gradient at position {k}, but the "
                f"corresponding forward output is not a differentiable Tensor. You should "
                f"return None at that position instead."
            )
        shape = tuple(node.output_meta[k][0])
        if tuple(t.shape) != shape:
            raise RuntimeError(
                f"{cls}.jvp: Trying to set a forward gradient that has a different size than "
                f"that of the original Tensor, this is not supported. Output {k} is of size "
                f"{list(shape)} while the given forward gradient is of size {list(t.shape)}. "
                f"Fix: each tangent has the shape of its output"
            )
        out.append(t if differentiable else t._data)
    return out


def _non_differentiable(node):
    """Indices of the outputs that are not differentiable Tensors (non-tensors, or marked)."""
    return {k for k, meta in enumerate(node.output_meta)
            if meta is None or k in node.non_differentiable}


# --- Functions without jvp: their backward is differentiated again ---------------------------
def _differentiable_backward(node, grads):
    result = node.run_backward(grads, True)
    if not any(isinstance(g, Tensor) and g.requires_grad for g in grads):
        return result
    needed = [g for g, edge in zip(result, node.next_functions, strict=True)
              if g is not None and edge]
    if any(g.grad_fn is not None and g.grad_fn.op == "once_differentiable" for g in needed):
        why = ("it is marked @once_differentiable (or, in an MXNet-style op, computed with "
               "NumPy), so kit refuses to differentiate it again")
    elif needed and not any(g.requires_grad for g in needed):
        # NOTE: one constant result among others can be a true zero (an unused output's
        # gradient); all of them constant while grad_output is not means NumPy (or a detach).
        why = "its gradients do not depend on grad_output in the graph (computed with NumPy?)"
    else:
        return result
    cls = node.function.__name__
    raise NotImplementedError(
        f"You must implement the jvp function for custom autograd.Function to use it with "
        f"forward mode AD. {cls} has no jvp staticmethod, so kit.func.jvp / jacfwd "
        f"differentiate its backward a second time (reverse-over-reverse), but {why}. Fix: "
        f"define jvp(ctx, *tangents) returning one tangent per output (keep what it needs "
        f"with ctx.save_for_forward), or write backward with kit operations."
    )
