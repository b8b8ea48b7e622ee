"""`mx.autograd`: recording scopes, backward and grad, with MXNet's grad_req rules.

Graphs are recorded only inside `record()`. `backward` computes the gradient of the heads for every
variable (an array that called attach_grad) found in their graph and writes it into the variable's
grad buffer: overwritten for grad_req='write', added for 'add'. The buffer is updated in place, so a
reference to `x.grad` taken earlier sees the new values, as in MXNet.
"""

from __future__ import annotations

from kit import autograd as kit_autograd
from kit import backend
from kit._modes import STATE, set_switch
from kit.engine import AccumulateGrad, run_backward
from kit.mx._autograd_function import Function
from kit.mx.base import MXNetError, call, mxnet_errors, scope
from kit.mx.ndarray import GRAD_REQS, NDArray, _GradSlot, variable_slot

__all__ = [
    "Function", "backward", "grad", "is_recording", "is_training", "mark_variables", "pause",
    "predict_mode", "record", "set_recording", "set_training", "train_mode",
]

_NOT_IN_GRAPH = (
    "Cannot differentiate node because it is not in a computational graph. You need to set "
    "is_recording to true or use autograd.record() to save computational graphs for backward. "
    "If you want to differentiate the same graph twice, you need to pass retain_graph=True to "
    "backward."
)


def record(train_mode=True):  # noqa: A002 - MXNet's names
    """Record the operations of the `with` block for backward (training mode by default).

    >>> import kit.mx as mx
    >>> with mx.autograd.record():
    ...     mx.autograd.is_recording()
    True
    """
    return _RECORD[bool(train_mode)]


# NOTE: one block each, made once (a scope may be entered again while it is active, and on
# other threads: it holds no state): a training loop enters record() once per step
_RECORD = (scope(recording=True, training=False), scope(recording=True, training=True))


def pause(train_mode=False):  # noqa: A002
    """Stop recording inside a record() block (predict mode by default)."""
    return scope(recording=False, training=train_mode)


def train_mode():
    """Training mode for the block, recording unchanged."""
    return scope(training=True)


def predict_mode():
    """Predict mode for the block, recording unchanged."""
    return scope(training=False)


def is_recording():
    return STATE.recording


def is_training():
    return STATE.training


def set_recording(is_recording):  # noqa: A002
    """Set this thread's recording flag outside any block; returns the previous value."""
    previous = STATE.recording
    set_switch("recording", bool(is_recording))
    return previous


def set_training(train_mode):  # noqa: A002
    """Set this thread's training flag outside any block; returns the previous value."""
    previous = STATE.training
    set_switch("training", bool(train_mode))
    return previous


def mark_variables(variables, gradients, grad_reqs="write"):
    """Make arrays variables whose gradients go into the given buffers (attach_grad's core)."""
    if isinstance(variables, NDArray):
        variables, gradients = [variables], [gradients]
    reqs = [grad_reqs] * len(variables) if isinstance(grad_reqs, str) else list(grad_reqs)
    if not (len(variables) == len(gradients) == len(reqs)):
        raise ValueError(
            f"mark_variables: got {len(variables)} variables, {len(gradients)} gradients and "
            f"{len(reqs)} grad_reqs; give one gradient buffer and one grad_req per variable"
        )
    for v, g, req in zip(variables, gradients, reqs, strict=True):
        if req not in GRAD_REQS:
            raise ValueError(f"mark_variables: grad_req must be one of {GRAD_REQS}, got {req!r}")
        if not isinstance(v, NDArray) or not isinstance(g, NDArray) or g.shape != v.shape:
            raise ValueError(
                "mark_variables: each variable and its gradient must be NDArrays of the same "
                "shape"
            )
        v.attach_grad(req)
        v._slot = _GradSlot(req, g)


def _heads(heads, head_grads, who):
    heads = [heads] if isinstance(heads, NDArray) else list(heads)
    if head_grads is None:
        head_grads = [None] * len(heads)
    elif isinstance(head_grads, NDArray):
        head_grads = [head_grads]
    if len(head_grads) != len(heads):
        raise ValueError(f"{who}: heads and head_grads must be lists of the same length")
    outputs, grads = [], []
    for h, g in zip(heads, head_grads, strict=True):
        if not isinstance(h, NDArray):
            raise TypeError(f"{who}: heads must be NDArrays, got {type(h).__name__}")
        if _node_of(h._t) is None:
            raise MXNetError(_NOT_IN_GRAPH)
        outputs.append(h._t)
        if g is None:  # NOTE: MXNet's implicit head gradient is all ones, for any shape
            g = backend.get_array_module(h._t._data).ones_like(h._t._data)
        grads.append(g._t if isinstance(g, NDArray) else g)
    return heads, outputs, grads


def _node_of(t):
    """t's grad_fn (None for a leaf).

    NOTE: read without Tensor.grad_fn, which gives every node of the graph its PyTorch-named
    class (kit.engine.typed): a training step's graph then keeps the one plain node type its
    reverse pass is fastest with, and is not walked once more per backward.
    """
    return t._grad_fn if t.requires_grad else None


def _graph_variables(outputs):
    """The live leaves reached from `outputs`; raises MXNet's error if part of the graph was
    freed."""
    stack = [_node_of(t) for t in outputs]
    seen = set(stack)
    leaves = []
    while stack:
        node = stack.pop()
        if type(node) is AccumulateGrad:  # (a leaf's node is never freed: it has nothing saved)
            leaf = node.variable
            if leaf is not None:
                leaves.append(leaf)
            continue
        if node.released():
            raise MXNetError(_NOT_IN_GRAPH)
        for edge in node.next_functions:
            if edge and edge[0] not in seen:
                seen.add(edge[0])
                stack.append(edge[0])
    return leaves


def _consume(heads):
    """The graph behind `heads` is freed: a second backward from them is MXNet's error."""
    for h in heads:
        h._t = h._t.detach()


def backward(heads, head_grads=None, retain_graph=False, train_mode=True):  # noqa: A002
    """Compute the gradients of `heads` and store them in the variables' grad buffers.

    >>> import kit.mx as mx
    >>> x = mx.nd.array([1, 2]); x.attach_grad()
    >>> with mx.autograd.record():
    ...     y = 3 * x
    >>> mx.autograd.backward(y); x.grad.asnumpy()
    array([3., 3.], dtype=float32)
    """
    if STATE.tracing is not None:  # kit.compile: the buffers below are not replayed: eagerly
        STATE.tracing.observe(None, "backward")
    heads, outputs, grads = _heads(heads, head_grads, "backward")
    # NOTE: the engine's own reverse pass accumulates into the leaves' kit-level .grad, which an
    # MXNet variable does not use: cleared first and restored after, each variable's fresh
    # gradient is read from there into its grad buffer. (The engine copies a gradient that is a
    # view or is shared, so a 'write' buffer can take the array itself: no copy per step.)
    leaves = _graph_variables(outputs)
    kept = []
    for leaf in leaves:
        kept.append(leaf._grad)
        leaf._grad = None
    try:
        if STATE.training == bool(train_mode):
            _reverse(outputs, grads, head_grads is None, retain_graph)
        else:
            with scope(training=train_mode):
                _reverse(outputs, grads, head_grads is None, retain_graph)
        for leaf in leaves:
            slot = variable_slot(leaf)
            if slot is not None:
                _store(slot, leaf._grad)
    finally:
        for leaf, grad in zip(leaves, kept, strict=True):
            leaf._grad = grad
    if not retain_graph:
        _consume(heads)


def _reverse(outputs, grads, implicit, retain_graph):
    """The engine's reverse pass from `outputs` (Tensors) with `grads` (arrays)."""
    roots = [t._edge for t in outputs]
    if implicit and STATE.tracing is None and None not in roots:
        # NOTE: the engine itself: what kit.autograd.backward would check of the head gradients
        # is true of the ones _heads made (each head's shape, dtype and device)
        call(run_backward, roots, grads, retain_graph)
    else:
        call(kit_autograd.backward, outputs, grads, retain_graph)


def _store(slot, g):
    """MXNet's grad_req: 'write' replaces the buffer's values (zeros where no gradient came),
    'add' adds to them; either way the gradient is fresh for the next Trainer step."""
    slot.fresh = True
    if slot.req == "write":
        if g is None:
            slot.grad._t._data[...] = 0
        else:
            # NOTE: the buffer NDArray takes the fresh gradient's storage instead of a copy of
            # it (a memory pass per step in a training loop); `x.grad` stays the same NDArray,
            # so references to it see the new values, as in MXNet.
            slot.grad._t = g
    elif g is not None:
        slot.grad._t._data += g._data


def grad(heads, variables, head_grads=None, retain_graph=None, create_graph=False,
         train_mode=True):  # noqa: A002
    """Gradients of `heads` w.r.t. `variables`, returned (not stored in .grad); with
    create_graph=True they are recorded, for higher-order gradients.

    >>> import kit.mx as mx
    >>> x = mx.nd.array([3.0]); x.attach_grad()
    >>> with mx.autograd.record():
    ...     y = x * x * x
    ...     dx = mx.autograd.grad(y, x, create_graph=True)
    >>> dx.backward(); x.grad.asnumpy()
    array([18.], dtype=float32)
    """
    single = isinstance(variables, NDArray)
    variables = [variables] if single else list(variables)
    if not variables:
        raise ValueError("grad: variables cannot be an empty list.")
    for i, v in enumerate(variables):
        if not isinstance(v, NDArray) or not v._t.requires_grad or v._t.grad_fn is not None:
            raise MXNetError(
                f"grad: variable {i} is not a variable. Fix: call x.attach_grad() before "
                f"recording the computation, and pass that same array"
            )
    heads, outputs, grads = _heads(heads, head_grads, "grad")
    _graph_variables(outputs)
    retain_graph = create_graph if retain_graph is None else retain_graph
    recording = True if create_graph else STATE.recording
    with scope(recording=recording, training=train_mode), mxnet_errors():
        found = kit_autograd.grad(outputs, [v._t for v in variables], grads,
                                  retain_graph=retain_graph, create_graph=create_graph,
                                  materialize_grads=True)
    if not retain_graph:
        _consume(heads)
    result = [NDArray(g) for g in found]
    return result[0] if single else result

