"""The computation graph behind some Tensors, as plain data (nodes and edges) for drawing.

`graph_data` walks the graph from the outputs breadth first, with an explicit queue (never
recursion), through the public node attributes only: `op`, `name()`, `next_functions`, `kind`,
`frontend`, `output_meta`, `outputs()`, `saved_values()`, `saved_items()`, `released()` and
`AccumulateGrad.variable`. A user's custom op is read exactly like a built-in one.

An op node shows the value it produced when the graph still reaches it: as a tensor a later op
saved for backward, or through `outputs()` for a graph recorded under `keep_output_refs()`.

Node kinds: "tensor" (a leaf, a parameter, or an output passed in), "op", "custom" (a user's
Function, with its front end), "chain" (a run of the same op collapsed into one node), "saved"
(a value kept for backward) and "more" (what `max_nodes` left out). Op nodes describe the tensor
they produce, so intermediate tensors are not drawn twice.
"""

from __future__ import annotations

import numpy as np

from kit._tensor import Tensor
from kit.engine import AccumulateGrad
from kit.saved_tensors import SavedTensor
from kit.viz._style import (
    EXPLODING,
    VANISHING,
    fmt_array,
    fmt_number,
    fmt_shape,
    grad_colour,
    host,
    norm,
)
from kit.viz._trace import check_outputs, graph_nodes, output_index, trace_backward

SMALL = 6  # a tensor with at most this many elements shows its values


def graph_data(outputs, *, show_grad=True, color_by_grad=False, show_saved=False,
               collapse_chains=6, max_nodes=400, params=None, highlight=(),
               vanishing=VANISHING, exploding=EXPLODING, flow=None):
    """(nodes, edges) of the graph that produced `outputs`: lists of plain dicts.

    Each node is {"id", "kind", "label", "attributes"}; each edge is {"id", "kind", "source",
    "target", "label", "attributes"}, pointing the way data flows (input to consumer).
    See `draw_graph` for the options.

    >>> import kit
    >>> x = kit.tensor(2.0, requires_grad=True)
    >>> nodes, edges = graph_data([x * x])
    >>> [(n["kind"], n["label"].split()[0]) for n in nodes], len(edges)
    ([('tensor', 'output'), ('op', 'mul'), ('tensor', 'leaf')], 3)
    """
    outputs = list(outputs)
    check_outputs(outputs, "draw_graph")
    if not outputs:
        raise TypeError("kit.viz.draw_graph: pass at least one Tensor, e.g. draw_graph(loss)")
    builder = _Builder(params, color_by_grad, vanishing, exploding, highlight, show_grad)
    roots = [out.grad_fn for out in outputs if out.grad_fn is not None]
    order, consumers = graph_nodes(roots)
    if show_grad:
        builder.flow = _flow(outputs, order) if flow is None else flow
    chains = _chains(order, consumers, set(roots), collapse_chains) if collapse_chains else {}
    builder.values = _values(order)
    builder.add_outputs(outputs)
    builder.add_graph(order, chains, max_nodes)
    if show_saved:
        builder.add_saved(order)
    return builder.nodes, builder.edges


def _flow(outputs, order):
    """The gradient arriving at each node's outputs, or None when the graph was released."""
    if any(node.released() for node in order):
        return None  # NOTE: only `.grad` of the leaves is left to show after a plain backward
    return {step.node: step.received for step in trace_backward(outputs)}


def _values(order):
    """{op node: the array it produced} for the values the graph still holds."""
    values = {}
    for node in order:
        if type(node) is AccumulateGrad:
            continue
        alive = node.outputs()
        if alive and alive[0] is not None:
            values[node] = alive[0]._data
        if node.released():
            continue
        for value in node.saved_values():
            producer = value.grad_fn if isinstance(value, Tensor) else None
            if producer is not None and len(producer.output_meta) == 1:
                values.setdefault(producer, value._data)
    return values


def _chains(order, consumers, roots, min_length):
    """{member: (head, members)} for every run of >= min_length nodes of one op in a line.

    A node links to its single input when that input is the same op, feeds nothing else and
    is not an output; the head is the end nearest the outputs.
    """
    if min_length < 2:
        raise ValueError(
            f"kit.viz.draw_graph: collapse_chains must be an int >= 2 (the shortest run to "
            f"collapse) or False, got {min_length!r}"
        )
    link = {}
    for node in order:
        if type(node) is AccumulateGrad:
            continue
        edges = [edge for edge in node.next_functions if edge]
        if len(edges) != 1:
            continue
        below = edges[0][0]
        if (type(below) is not AccumulateGrad and below.op == node.op
                and consumers[below] == 1 and below not in roots):
            link[node] = below
    linked = set(link.values())
    chains = {}
    for head in order:
        if head not in link or head in linked:
            continue
        members = [head]
        while members[-1] in link:
            members.append(link[members[-1]])
        if len(members) >= min_length:
            for member in members:
                chains[member] = (head, members)
    return chains


class _Builder:
    """Accumulates the node and edge dicts; one per `graph_data` call."""

    def __init__(self, params, color_by_grad, vanishing, exploding, highlight, show_grad):
        self.names = {id(t): name for name, t in (params or {}).items()}
        self.color_by_grad = color_by_grad
        self.vanishing, self.exploding = vanishing, exploding
        # by id: a Tensor's == is elementwise, so Tensors cannot go in a set
        self.highlight = {id(h.grad_fn) if isinstance(h, Tensor) and h.grad_fn is not None
                          else id(h) for h in highlight}
        self.show_grad = show_grad
        self.flow = {}  # None when the graph was released: fall back on the leaves' .grad
        self.nodes, self.edges = [], []
        self.ids = {}  # engine node (or chain head) -> drawn node id
        self.values = {}  # engine node -> the array it produced, where known (_values)

    # -- nodes ---------------------------------------------------------------------------
    def _node(self, kind, label_lines, attributes, grad=None, grad_norm=None):
        node_id = f"n{len(self.nodes)}"
        if grad_norm is not None:
            attributes["grad_norm"] = grad_norm
        if grad is not None:
            grad = host(grad)  # one copy from a GPU for the norm, the values and the label
            attributes["grad_norm"] = norm(grad)
            if grad.size <= SMALL:
                attributes["grad"] = grad.tolist()
                label_lines.append("grad " + fmt_array(grad))
            else:
                label_lines.append("|grad| " + fmt_number(attributes["grad_norm"]))
        if self.color_by_grad and kind != "saved":
            attributes["colour"] = grad_colour(attributes.get("grad_norm"), self.vanishing,
                                               self.exploding)
        self.nodes.append({"id": node_id, "kind": kind, "label": "\n".join(label_lines),
                           "attributes": attributes})
        return node_id

    def _received(self, node, index=None):
        grads = self.flow.get(node) if self.flow else None
        if not grads:
            return None
        if index is not None:
            return grads[index]
        present = [g for g in grads if g is not None]
        if len(present) <= 1:
            return present[0] if present else None
        # several outputs: one flat array, for the norm and the colour
        return np.concatenate([host(g).ravel().astype(np.float64) for g in present])

    def _tensor(self, t, role, output=False, grad=None, node=None):
        name = self.names.get(id(t)) or t.name or ("output" if output else role)
        attributes = {"role": role, "name": name, "shape": tuple(t.shape), "dtype": str(t.dtype),
                      "device": t.device, "requires_grad": t.requires_grad, "output": output}
        if id(t) in self.highlight or id(node) in self.highlight:
            attributes["highlight"] = True
        lines = [name, f"{fmt_shape(t.shape)} {t.dtype} {t.device}"]
        if t._data.size <= SMALL:
            attributes["value"] = host(t._data).tolist()
            lines.append("= " + fmt_array(t._data))
        return self._node("tensor", lines, attributes, grad)

    def add_outputs(self, outputs):
        self.output_ids = []
        for out in outputs:
            if out.grad_fn is None:
                role = "parameter" if id(out) in self.names else "leaf"
                shown = self.show_grad and out.grad is not None
                node_id = self._tensor(out, role, output=True,
                                       grad=out.grad._data if shown else None)
                self.ids[("leaf", id(out))] = node_id
            else:
                grad = self._received(out.grad_fn, output_index(out))
                node_id = self._tensor(out, "intermediate", output=True, grad=grad)
            self.output_ids.append((out, node_id))

    def _leaf(self, node):
        t = node.variable
        if t is None:  # nothing keeps the leaf any more (a temporary): drawn from its node
            return self._freed_leaf(node)
        known = self.ids.get(("leaf", id(t)))
        if known is not None:
            return known
        role = "parameter" if id(t) in self.names else "leaf"
        if self.flow is None:
            grad = t.grad._data if t.grad is not None else None
        else:
            grad = self._received(node, 0)
        node_id = self.ids[("leaf", id(t))] = self._tensor(t, role, grad=grad, node=node)
        return node_id

    def _freed_leaf(self, node):
        key = ("freed leaf", id(node))
        if key not in self.ids:
            (shape, dtype), = node.output_meta
            attributes = {"role": "leaf", "name": "leaf (freed)", "shape": tuple(shape),
                          "dtype": str(dtype), "freed": True}
            grad = self._received(node, 0) if self.flow is not None else None
            self.ids[key] = self._node(
                "tensor", ["leaf (freed)", f"{fmt_shape(shape)} {dtype}"], attributes, grad)
        return self.ids[key]

    def _op(self, node, members=None):
        kind = "chain" if members else "custom" if node.kind == "custom" else "op"
        attributes = {"op": node.op, "name": node.name()}
        lines = [f"{node.op} \u00d7{len(members)}" if members else node.op]
        if node.kind == "custom":
            attributes["frontend"] = node.frontend
            lines.append(f"[{node.frontend}]")
        meta = node.output_meta[0] if node.output_meta else None
        if meta is not None:
            attributes["shape"], attributes["dtype"] = tuple(meta[0]), str(meta[1])
            lines.append(f"{fmt_shape(meta[0])} {meta[1]}")
        value = self.values.get(node)
        if members is None and value is not None and value.size <= SMALL:
            attributes["value"] = host(value).tolist()
            lines.append("= " + fmt_array(value))
        if id(node) in self.highlight:
            attributes["highlight"] = True
        grad = self._received(node)
        if not members:
            return self._node(kind, lines, attributes, grad)
        # A chain is coloured by the gradient leaving its input end, which the layers below get.
        first = norm(self._received(members[-1]))
        attributes["count"] = len(members)
        attributes["grad_norm_out"] = norm(grad)
        if grad is not None and first is not None:
            lines.append(f"|grad| {fmt_number(attributes['grad_norm_out'])} \u2192 "
                         f"{fmt_number(first)}")
        return self._node(kind, lines, attributes, grad_norm=first)

    # -- the walk --------------------------------------------------------------------------
    def add_graph(self, order, chains, max_nodes):
        dropped = set()
        for node in order:
            head, members = chains.get(node, (node, None))
            if head in self.ids or head in dropped:
                continue
            if len(self.nodes) >= max_nodes:
                dropped.add(head)
                continue
            self.ids[head] = self._leaf(node) if type(node) is AccumulateGrad else self._op(
                node, members)
        more_id = None
        if dropped:
            more_id = self._node("more", [f"\u2026 {len(dropped)} more nodes not drawn"],
                                 {"count": len(dropped)})
        linked_more = set()
        for node in order:
            target = self.ids.get(chains.get(node, (node,))[0])
            if target is None:
                continue
            for index, edge in enumerate(node.next_functions):
                if not edge:
                    continue
                below, nr = edge
                source = self.ids.get(chains.get(below, (below,))[0])
                if source == target:
                    continue  # inside a collapsed chain
                if source is None:
                    if target not in linked_more:
                        linked_more.add(target)
                        self._edge("data", more_id, target, {})
                    continue
                grads = self.flow.get(below) if self.flow else None
                attributes = {"input": index, "output_nr": nr}
                self._edge("data", source, target, attributes, grads[nr] if grads else None)
        for out, node_id in self.output_ids:
            if out.grad_fn is not None:
                source = self.ids.get(chains.get(out.grad_fn, (out.grad_fn,))[0])
                if source is not None:
                    nr = output_index(out)
                    self._edge("data", source, node_id, {"input": 0, "output_nr": nr},
                               self._received(out.grad_fn, nr))

    def _edge(self, kind, source, target, attributes, grad=None):
        if grad is not None:
            attributes["grad_norm"] = norm(grad)
        if self.color_by_grad and kind == "data":
            attributes["colour"] = grad_colour(attributes.get("grad_norm"), self.vanishing,
                                               self.exploding)
        self.edges.append({"id": f"e{len(self.edges)}", "kind": kind, "source": source,
                           "target": target, "label": "", "attributes": attributes})

    def add_saved(self, order):
        """Dashed edges from what each drawn op keeps for backward."""
        for node in order:
            target = self.ids.get(node)
            if target is None or type(node) is AccumulateGrad:
                continue
            if node.released():
                self._find(target)["attributes"]["released"] = True
                self._find(target)["label"] += "\n(saved values released)"
                continue
            for name, value in node.saved_items():
                source = self._saved_source(value)
                if source is not None:
                    self._edge("saved", source, target, {"name": name})

    def _saved_source(self, value):
        if isinstance(value, SavedTensor):  # packed by saved-tensor hooks: not unpacked here
            return self._node(
                "saved", ["saved (packed)", f"{fmt_shape(value.shape)} {value.dtype}"],
                {"shape": tuple(value.shape), "dtype": str(value.dtype),
                 "packed": type(value.packed).__name__})
        if isinstance(value, Tensor):
            known = self.ids.get(("leaf", id(value)))
            if known is None and value.grad_fn is not None:
                known = self.ids.get(value.grad_fn)
            if known is not None:
                return known
            value = value._data
        if isinstance(value, (bool, int, float)):
            return self._node("saved", ["saved", fmt_number(value)], {"value": value})
        if not hasattr(value, "shape"):
            return None  # e.g. a tuple of axes: part of the op's params, not a tensor
        attributes = {"shape": tuple(value.shape), "dtype": str(value.dtype)}
        lines = ["saved", f"{fmt_shape(value.shape)} {value.dtype}"]
        if value.size <= SMALL:
            attributes["value"] = host(value).tolist()
            lines.append("= " + fmt_array(value))
        return self._node("saved", lines, attributes)

    def _find(self, node_id):
        return self.nodes[int(node_id[1:])]
