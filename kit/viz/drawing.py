"""`draw_graph`: the graph data of kit.viz.graph laid out by Graphviz (through pygraphviz)."""

from __future__ import annotations

import html
import os
import sys
import tempfile
from collections import Counter
from pathlib import Path

from kit.viz._style import EXPLODING, NO_GRAD, VANISHING, legend
from kit.viz.compiled import compiled_graph_data
from kit.viz.graph import graph_data

_TENSOR_FILL = {"leaf": "#dbeafe", "parameter": "#fde68a", "intermediate": "#d1fae5"}
_KIND_STYLE = {
    "tensor": {"shape": "box", "style": "rounded,filled"},
    "op": {"shape": "ellipse", "style": "filled", "fillcolor": "#f3f4f6"},
    # A user's custom op must stand out from the built-ins: another shape, a bold purple border.
    "custom": {"shape": "hexagon", "style": "filled,bold", "fillcolor": "#ede9fe",
               "color": "#7c3aed", "penwidth": "2"},
    "chain": {"shape": "box3d", "style": "filled", "fillcolor": "#f3f4f6"},
    "saved": {"shape": "note", "style": "filled", "fillcolor": "#fff7ed", "fontsize": "9"},
    "more": {"shape": "plaintext", "style": ""},
    "guard": {"shape": "diamond", "style": "filled", "fillcolor": "#fee2e2", "color": "#dc2626"},
}


def draw_graph(*outputs, show_grad=True, color_by_grad=False, show_saved=False,
               collapse_chains=6, max_nodes=400, params=None, highlight=(),
               vanishing=VANISHING, exploding=EXPLODING, rankdir="TB", flow=None,
               compact=False):
    """Draw the computation graph that produced `outputs`.

    Op nodes show the op (a user's custom op is a purple hexagon naming its front end); tensor
    nodes show shape, dtype, device, the value when small and whether they are a leaf, a
    parameter (named in `params`, a dict name -> Tensor) or an intermediate output. With
    `show_grad`, nodes show the gradient that reaches them from the outputs (seeded with ones)
    while the graph is alive; after a backward that released it, the leaves' `.grad`.
    `color_by_grad` colours nodes and edges by gradient norm on a log scale, blue below
    `vanishing`, red above `exploding`, with a legend. `show_saved` adds what each op keeps for
    backward (dashed). Runs of at least `collapse_chains` nodes of one op in a line become one
    "op xN" node (False keeps them); past `max_nodes` nodes the rest is summarised in one node.
    `highlight` marks nodes (Tensors or graph nodes) with a red border. `flow` ({graph node:
    [gradient per output]}) shows those gradients instead (step_backward shows part of a pass).
    `compact` draws deep graphs small: each node shows only its name and gradient, and an op
    whose one input comes from an op it alone consumes sits beside it, so a layer of a deep
    network (matmul, then its activation) is one row (`.nodes` keep every detail).

    Given a compiled function (kit.compile) instead, it draws the graph its last call captured:
    inputs, captured tensors, steps, guards, outputs, with each fused group boxed and labelled
    with its kernel (`.clusters`).

    >>> import kit
    >>> x = kit.tensor(2.0, requires_grad=True)
    >>> d = draw_graph(x * x + x.sin())
    >>> sorted(n["label"].split()[0] for n in d.nodes if n["kind"] == "op")
    ['add', 'mul', 'sin']
    """
    if len(outputs) == 1 and _captured(outputs[0]) is not None:
        return GraphDrawing(*compiled_graph_data(_captured(outputs[0])), rankdir=rankdir)
    nodes, edges = graph_data(
        outputs, show_grad=show_grad, color_by_grad=color_by_grad, show_saved=show_saved,
        collapse_chains=collapse_chains, max_nodes=max_nodes, params=params,
        highlight=highlight, vanishing=vanishing, exploding=exploding, flow=flow,
    )
    rows = legend(vanishing, exploding) if color_by_grad else []
    return GraphDrawing(nodes, edges, legend_rows=rows, rankdir=rankdir, compact=compact)


def _captured(value):
    """The captured graph of a compiled function (or a captured graph itself), else None."""
    from kit.compiler import CompiledFunction, Graph

    if isinstance(value, Graph):
        return value
    if isinstance(value, CompiledFunction):
        if value.graph is None:
            raise ValueError(f"kit.viz.draw_graph: the compiled function {value.__name__} has "
                             f"not been called yet; call it once so that it traces")
        return value.graph
    return None


class GraphDrawing:
    """A drawn graph: shows itself as SVG in Jupyter; `.nodes`, `.edges` hold it as data, and
    `.clusters` the boxed groups (a compiled function's fused kernels)."""

    def __init__(self, nodes, edges, clusters=(), legend_rows=(), rankdir="TB", compact=False):
        self.nodes = nodes
        self.edges = edges
        self.clusters = list(clusters)
        self.legend = list(legend_rows)
        self.rankdir = rankdir
        self.compact = compact
        self._svg = None

    def __repr__(self):
        return f"<GraphDrawing: {len(self.nodes)} nodes, {len(self.edges)} edges>"

    def find(self, kind=None, **attributes):
        """The nodes of `kind` whose attributes have the given values.

        >>> import kit
        >>> w = kit.tensor([1.0, 2.0], requires_grad=True)
        >>> d = draw_graph((w * 3).sum(), params={"w": w})
        >>> [n["attributes"]["grad"] for n in d.find("tensor", role="parameter")]
        [[3.0, 3.0]]
        """
        return [
            n for n in self.nodes
            if (kind is None or n["kind"] == kind)
            and all(n["attributes"].get(k) == v for k, v in attributes.items())
        ]

    def agraph(self):
        """The graph as a pygraphviz AGraph (not laid out yet)."""
        import pygraphviz

        g = pygraphviz.AGraph(directed=True, strict=False, rankdir=self.rankdir)
        g.graph_attr.update(fontname="Helvetica", nodesep="0.25", ranksep="0.35")
        g.node_attr.update(fontname="Helvetica", fontsize="10", margin="0.08,0.04")
        g.edge_attr.update(arrowsize="0.7")
        for node in self.nodes:
            g.add_node(node["id"], **_node_style(node, self.compact))
        for edge in self.edges:
            g.add_edge(edge["source"], edge["target"], key=edge["id"], **_edge_style(edge))
        if self.compact:
            g.graph_attr.update(nodesep="0.2", ranksep="0.25", newrank="true")
            g.node_attr.update(fontsize="9", margin="0.05,0.02")
            self._rows(g)
        for cluster in self.clusters:
            g.add_subgraph(cluster["nodes"], name=cluster["id"], label=cluster["label"],
                           style="rounded,filled", color="#2563eb", fillcolor="#eff6ff",
                           fontname="Helvetica", fontsize="10")
        if self.legend:
            cells = "".join(
                f'<TR><TD BGCOLOR="{colour}" WIDTH="14"> </TD>'
                f'<TD ALIGN="LEFT">{html.escape(label)}</TD></TR>'
                for label, colour in self.legend
            )
            table = (f'<<TABLE BORDER="0" CELLSPACING="1" CELLPADDING="2">'
                     f'<TR><TD COLSPAN="2"><B>gradient norm</B></TD></TR>{cells}</TABLE>>')
            g.add_subgraph(name="cluster_legend", style="dashed", color="#9ca3af")
            g.get_subgraph("cluster_legend").add_node("legend", shape="plaintext", label=table,
                                                      fontsize="9")
        return g

    def _rows(self, g):
        """Lay each run of ops that feed only each other out as one row, the rows one below
        the other (`compact`)."""
        ops = {n["id"] for n in self.nodes if n["kind"] in ("op", "custom", "chain")}
        data = [(e["source"], e["target"], e["id"]) for e in self.edges if e["kind"] == "data"]
        inputs = Counter(target for _, target, _ in data)
        consumers = Counter(source for source, _, _ in data)
        beside = {source: target for source, target, _ in data
                  if source in ops and target in ops and inputs[target] == 1
                  and consumers[source] == 1}
        heads = [n["id"] for n in self.nodes if n["id"] in beside and n["id"] not in
                 beside.values()]
        rows = {}
        for i, head in enumerate(heads):
            row = [head]
            while row[-1] in beside:
                row.append(beside[row[-1]])
            g.add_subgraph(row, name=f"row{i}", rank="same")
            rows[head] = row
        for source, target, key in data:
            below = rows.get(target)
            if below is None or consumers[source] != 1:
                continue
            above = next((row for row in rows.values() if row[-1] == source), None)
            if above is not None:  # keep the rows' first ops in one column
                g.get_edge(source, target, key).attr["weight"] = "0"
                g.add_edge(above[0], below[0], style="invis", weight="20")

    @property
    def svg(self) -> str:
        """The drawing as SVG text (laid out by Graphviz's dot on first use)."""
        if self._svg is None:
            self._svg = _render(self.agraph(), "svg").decode("utf-8")
        return self._svg

    def _repr_svg_(self):
        return self.svg

    def save(self, path):
        """Write the drawing to `path`, an .svg or a .png file; returns the path."""
        path = Path(path)
        kind = path.suffix.lower().lstrip(".")
        if kind not in ("svg", "png"):
            raise ValueError(
                f"GraphDrawing.save: cannot write {path.name!r}; use a name ending in .svg or .png"
            )
        if kind == "svg":
            path.write_text(self.svg, encoding="utf-8")
        else:
            path.write_bytes(_render(self.agraph(), "png"))
        return path


def _render(agraph, fmt):
    # The Fontconfig inside pygraphviz's wheel may be older than the system's font configuration
    # and warn about it (with an absolute path) on first use, from C, straight to file descriptor
    # 2. Learners cannot act on it, so it is dropped; anything else Graphviz writes is passed on.
    with tempfile.TemporaryFile() as captured:
        sys.stderr.flush()
        saved_fd = os.dup(2)
        try:
            os.dup2(captured.fileno(), 2)
            rendered = agraph.draw(format=fmt, prog="dot")
        finally:
            os.dup2(saved_fd, 2)
            os.close(saved_fd)
        captured.seek(0)
        for line in captured.read().decode("utf-8", "replace").splitlines():
            if not line.startswith("Fontconfig warning"):
                print(line, file=sys.stderr)
    return rendered


def _label(text):
    # NOTE: Graphviz reads a label wrapped in <...> as HTML and expands backslash escapes.
    text = text.replace("\\", "\\\\")
    return " " + text if text.startswith("<") else text


def _compact(label):
    lines = label.split("\n")
    return "\n".join([lines[0]] + [line for line in lines[1:]
                                   if line.startswith(("grad ", "|grad| "))])


def _node_style(node, compact=False):
    kind, attributes = node["kind"], node["attributes"]
    style = dict(_KIND_STYLE[kind])
    if kind == "tensor":
        style["fillcolor"] = _TENSOR_FILL[attributes["role"]]
        if attributes.get("output"):
            style["peripheries"] = "2"
    if "colour" in attributes:
        style["fillcolor"] = attributes["colour"]
        if _dark(attributes["colour"]):
            style["fontcolor"] = "white"
    if attributes.get("highlight"):
        style.update(color="#dc2626", penwidth="3")
    style["label"] = _label(_compact(node["label"]) if compact else node["label"])
    return style


def _dark(colour):
    red, green, blue = (int(colour[i:i + 2], 16) / 255 for i in (1, 3, 5))
    return 0.299 * red + 0.587 * green + 0.114 * blue < 0.45


def _edge_style(edge):
    attributes = edge["attributes"]
    if edge["kind"] == "saved":
        return {"style": "dashed", "color": "#9ca3af", "arrowhead": "odot"}
    if "colour" in attributes:
        colour = attributes["colour"]
        return {"color": "#9ca3af" if colour == NO_GRAD else colour, "penwidth": "2.5"}
    return {}
