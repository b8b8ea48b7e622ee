"""The user-facing entry points of the reverse pass: `backward` and `grad`."""

from __future__ import annotations

from kit import backend
from kit._tensor import Tensor
from kit.engine import _accumulate, run_backward
from kit.grad_mode import STATE


def _as_tuple(x):
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def _root_grads(outputs, grad_outputs, create_graph, who):
    """The starting gradient of each output: given, or ones for a one-element output."""
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    grad_outputs = _as_tuple(grad_outputs)
    if len(grad_outputs) != len(outputs):
        raise RuntimeError(
            f"{who}: got {len(grad_outputs)} grad_outputs for {len(outputs)} outputs; give one per "
            f"output (None for a scalar output)"
        )
    roots, grads = [], []
    for i, (out, g) in enumerate(zip(outputs, grad_outputs, strict=True)):
        if not isinstance(out, Tensor):
            raise TypeError(f"{who}: output {i} is a {type(out).__name__}, expected a Tensor")
        if not out.requires_grad:
            raise RuntimeError(
                f"element {i} of tensors does not require grad and does not have a grad_fn. "
                f"Fix: create the inputs with requires_grad=True (and do not compute them under "
                f"kit.no_grad()) before computing this output"
            )
        if g is None:
            if out._data.size != 1:
                raise RuntimeError(
                    f"grad can be implicitly created only for scalar outputs, but output {i} has "
                    f"shape {list(out.shape)}. Fix: reduce it first (y.sum().backward()) or pass "
                    f"the gradient of a scalar with respect to it: y.backward(gradient)"
                )
            xp = backend.get_array_module(out._data)
            g = xp.ones_like(out._data)
        else:
            g = g._data if isinstance(g, Tensor) and not create_graph else g
            if not isinstance(g, Tensor) and not hasattr(g, "shape"):
                g = backend.get_array_module(out._data).full(out.shape, g, dtype=out.dtype)
            if tuple(g.shape) != tuple(out.shape):
                raise RuntimeError(
                    f"Mismatch in shape: grad_output[{i}] has a shape of {list(g.shape)} and "
                    f"output[{i}] has a shape of {list(out.shape)}"
                )
            # NOTE: not getattr(g, "data", g): a CuPy array's ._data is its memory pointer
            if backend.device_of(g._data if isinstance(g, Tensor) else g) != backend.device_of(
                out._data
            ):
                raise RuntimeError(
                    f"{who}: grad_output[{i}] is on a different device than output[{i}]"
                )
        if create_graph and not isinstance(g, Tensor):
            g = Tensor(g)
        edge = out._edge or out._leaf_edge()
        roots.append(edge)
        grads.append(g)
    return roots, grads


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None):
    """Accumulate gradients of `tensors` into the `.grad` of the leaves of their graph.

    >>> import kit
    >>> x = kit.tensor([1.0, 2.0], requires_grad=True)
    >>> (x * x).sum().backward()
    >>> x.grad
    tensor([2., 4.])
    """
    outputs = _as_tuple(tensors)
    # inside kit.compile's trace: one scalar loss's backward is recorded (and run) by the trace,
    # to be replayed; any other runs eagerly, and so does the function
    if STATE.tracing is not None and STATE.tracing.backward(outputs, grad_tensors, retain_graph,
                                                            create_graph, inputs):
        return
    if retain_graph is None:
        retain_graph = create_graph
    roots, grads = _root_grads(outputs, grad_tensors, create_graph, "backward")
    if inputs is not None:
        inputs = _as_tuple(inputs)
        found = grad(outputs, inputs, grads if create_graph else [Tensor(g) for g in grads],
                     retain_graph=retain_graph, create_graph=create_graph, allow_unused=True)
        # The same array may reach several inputs (x + y), or be a view or the caller's own
        # gradient: accumulate as the engine does, so that no two .grad share memory.
        owned = set() if create_graph else {id(g if g.base is None else g.base) for g in grads}
        for t, g in zip(inputs, found, strict=True):
            if g is not None:
                _accumulate(t, g if create_graph else g._data, create_graph, owned)
        return
    run_backward(roots, grads, retain_graph=retain_graph, create_graph=create_graph)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         allow_unused=False, materialize_grads=False):
    """Gradients of `outputs` with respect to `inputs`, returned rather than accumulated.

    >>> import kit
    >>> x = kit.tensor(3.0, requires_grad=True)
    >>> (dx,) = kit.grad(x ** 2, x, create_graph=True)
    >>> dx, kit.grad(dx, x)[0]
    (tensor(6., grad_fn=<MulBackward0>), tensor(2.))
    """
    outputs = _as_tuple(outputs)
    inputs = _as_tuple(inputs)
    if STATE.tracing is not None:  # inside kit.compile's trace: the function runs eagerly
        STATE.tracing.observe(None, "backward")
    if retain_graph is None:
        retain_graph = create_graph
    capture = {}
    for i, t in enumerate(inputs):
        if not isinstance(t, Tensor):
            raise TypeError(f"grad: input {i} is a {type(t).__name__}, expected a Tensor")
        if not t.requires_grad:
            raise RuntimeError(
                f"One of the differentiated Tensors (input {i}) does not require grad. Fix: "
                f"create it with requires_grad=True"
            )
        capture.setdefault(t._edge or t._leaf_edge(), i)
    roots, grads = _root_grads(outputs, grad_outputs, create_graph, "grad")
    slots = run_backward(roots, grads, retain_graph, create_graph, capture)
    result = []
    for i, t in enumerate(inputs):
        g = slots[capture[t._edge or t._leaf_edge()]]
        if g is None:
            if materialize_grads:
                g = Tensor(backend.get_array_module(t._data).zeros_like(t._data))
            elif not allow_unused:
                raise RuntimeError(
                    f"One of the differentiated Tensors (input {i}, shape {list(t.shape)}) appears "
                    f"to not have been used in the graph. Set allow_unused=True if this is the "
                    f"desired behavior."
                )
        result.append(g)
    return tuple(result)
