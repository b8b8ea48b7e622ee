"""The reverse pass replayed one node at a time, so it can be drawn and stepped through.

It follows the engine's schedule (count each node's consumers, run a node once all of them have
sent their gradient) and uses the engine's own single step, `kit.engine.node_vjp`, so what it shows
is what `backward` computes. Unlike `backward` it keeps the graph, runs no hooks and leaves every
`.grad` alone.
"""

from __future__ import annotations

from dataclasses import dataclass

from kit import backend
from kit._tensor import Tensor
from kit.engine import AccumulateGrad, add_gradient, node_vjp


@dataclass
class Step:
    """One node's turn in the reverse pass: the gradients it receives and those it passes on."""

    node: object
    received: list   # one array (or None) per output of the node
    passed: list     # one array (or None) per entry of node.next_functions


def output_index(t):
    """Which output of `t.grad_fn` the Tensor `t` is (0 unless the node has several)."""
    node = t.grad_fn
    for index, out in enumerate(node.outputs()):
        if out is t:
            return index
    # NOTE: outputs() may no longer hold the Tensor (it is a weak reference); fall back on meta.
    matches = [i for i, meta in enumerate(node.output_meta)
               if meta is not None and tuple(meta[0]) == tuple(t.shape) and meta[1] == t.dtype]
    return matches[0] if matches else 0


def graph_nodes(roots):
    """Every node reachable from `roots`, in breadth-first order, and how many edges reach each."""
    order = list(dict.fromkeys(roots))
    consumers = dict.fromkeys(order, 0)
    position = 0
    while position < len(order):
        node = order[position]
        position += 1
        for edge in node.next_functions:
            if edge is None:
                continue
            nxt = edge[0]
            if nxt in consumers:
                consumers[nxt] += 1
            else:
                consumers[nxt] = 1
                order.append(nxt)
    return order, consumers


def check_outputs(outputs, who):
    for i, out in enumerate(outputs):
        if not isinstance(out, Tensor):
            raise TypeError(
                f"kit.viz.{who}: output {i} is a {type(out).__name__}; pass the kit Tensors "
                f"whose graph you want, e.g. {who}(loss)"
            )


def trace_backward(outputs):
    """Replay backward from `outputs` (seeded with ones, as `out.sum().backward()`).

    Returns the list of `Step`s in the order the engine runs them. Raises the engine's own error
    if the graph was already released by a backward without `retain_graph=True`.

    >>> import kit
    >>> from kit.viz._trace import trace_backward
    >>> a = kit.tensor(3.0, requires_grad=True)
    >>> [s.node.name() for s in trace_backward([a * a + a])]
    ['AddBackward0', 'MulBackward0', 'AccumulateGrad']
    """
    outputs = outputs if isinstance(outputs, (list, tuple)) else [outputs]
    check_outputs(outputs, "trace_backward")
    buffers = {}
    for out in outputs:
        if out.grad_fn is None:
            continue
        xp = backend.get_array_module(out._data)
        add_gradient(buffers, out.grad_fn, output_index(out), xp.ones_like(out._data))
    _, deps = graph_nodes(list(buffers))
    ready = [node for node in buffers if deps[node] == 0]
    steps = []
    while ready:
        node = ready.pop()
        received = buffers.pop(node, None) or [None] * len(node.output_meta)
        if type(node) is AccumulateGrad:
            steps.append(Step(node, received, []))
            continue
        flowing = any(g is not None for g in received)
        passed = node_vjp(node, received) if flowing else [None] * len(node.next_functions)
        steps.append(Step(node, received, passed))
        for edge, g in zip(node.next_functions, passed, strict=True):
            if edge is None:
                continue
            nxt, nr = edge
            if g is not None:
                add_gradient(buffers, nxt, nr, g)
            deps[nxt] -= 1
            if deps[nxt] == 0:
                ready.append(nxt)
    return steps
