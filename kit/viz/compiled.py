"""What kit.compile captured, as drawing data: the graph of a compiled function, fused groups boxed.

Read through the captured graph's plain-data description (`Graph.describe()`, kit/compiler), as
the rest of kit.viz reads public node attributes. Tensor nodes are the function's inputs
("leaf"), the tensors it captured from outside ("parameter": weights, closures) and its outputs;
op nodes are the steps (an opaque custom Function or CustomOp is a "custom" hexagon, a guard a
diamond); each fused group is a cluster labelled with its kernel's backend and the bytes it moves
per element.
"""

from __future__ import annotations


def compiled_graph_data(graph):
    """(nodes, edges, clusters) of a captured graph (a kit.compiler Graph), as `graph_data`
    gives them for an eager graph, plus the clusters: [{"id", "label", "nodes"}]."""
    info = graph.describe()
    nodes, edges, clusters = [], [], []
    producer = {}  # slot -> the node id that makes it

    def node(kind, label, **attributes):
        node_id = f"n{len(nodes)}"
        nodes.append({"id": node_id, "kind": kind, "label": label, "attributes": attributes})
        return node_id

    def edge(source, target, slot):
        edges.append({"id": f"e{len(edges)}", "kind": "data", "source": source, "target": target,
                      "label": "", "attributes": {"slot": slot}})

    slots = info["slots"]
    for role, members in (("leaf", info["inputs"]), ("parameter", info["captured"])):
        for slot in members:
            _, shape, dtype = slots[slot]
            producer[slot] = node("tensor", f"{'input' if role == 'leaf' else 'captured'}\n"
                                  f"{_shape(shape)} {dtype}", role=role, slot=slot)
    members = {}
    for step in info["steps"]:
        kind = {"island": "custom", "guard": "guard"}.get(step["kind"], "op")
        shape = _shape(step["shape"][0]) if step["shape"] else ""
        label = step["op"] if kind != "guard" else f"guard: {step['op']}"
        step_id = node(kind, f"{label}\n{shape}".rstrip(), op=step["op"], step=step["index"],
                       group=step["group"], line=step["line"], step_kind=step["kind"])
        for slot in dict.fromkeys(step["inputs"]):
            edge(producer[slot], step_id, slot)
        for slot in step["outputs"]:
            producer[slot] = step_id
        if step["group"] is not None:
            members.setdefault(step["group"], []).append(step_id)
    for k, slot in enumerate(info["outputs"]):
        if slot is None:
            continue
        _, shape, dtype = slots[slot]
        out_id = node("tensor", f"output {k}\n{_shape(shape)} {dtype}", role="intermediate",
                      output=True, slot=slot)
        edge(producer[slot], out_id, slot)
    for group in info["groups"]:
        moved = group["bytes_per_element"]
        clusters.append({
            "id": f"cluster_fused{group['index']}",
            "label": f"fused kernel {group['index']} ({group['backend']}): "
                     f"{moved['forward']} + {moved['backward']} B/element",
            "nodes": members.get(group["index"], []), "backend": group["backend"],
        })
    return nodes, edges, clusters


def _shape(shape):
    return "(" + ", ".join(str(n) for n in shape) + ")"
