"""kit.viz graph drawing: the graph as data, gradients on it, custom ops, deep chains, SVG/PNG."""

import doctest
import importlib
import os

import numpy as np
import pytest

import kit
from kit.viz import draw_graph, grad_colour, trace_backward


def _ops(drawing):
    return sorted(n["attributes"]["op"] for n in drawing.nodes if n["kind"] in ("op", "custom"))


def _edges_between(drawing, source_kind, target_label_start):
    by_id = {n["id"]: n for n in drawing.nodes}
    return [e for e in drawing.edges
            if by_id[e["source"]]["kind"] == source_kind
            and by_id[e["target"]]["label"].startswith(target_label_start)]


class Scale(kit.Function):
    """A PyTorch-style custom op: y = 3 x."""

    @staticmethod
    def forward(ctx, x):
        return x * 3.0

    @staticmethod
    def backward(ctx, g):
        return g * 3.0


class MxSquare(kit.Function):
    """A custom op labelled as coming from the MXNet-style front end."""

    frontend = "MXNet-style"

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 2.0 * x


class SplitHalves(kit.Function):
    """Two outputs: the first and the second half of a vector."""

    @staticmethod
    def forward(ctx, x):
        n = x.shape[0] // 2
        return x[:n] * 1.0, x[n:] * 1.0

    @staticmethod
    def backward(ctx, ga, gb):
        return kit.cat([ga, gb])


def test_builtin_graph_structure_values_and_gradients():
    x = kit.tensor(2.0, requires_grad=True)
    w = kit.tensor([1.0, 2.0, 3.0], requires_grad=True)
    loss = (x * w + w.sin()).sum()
    d = draw_graph(loss, params={"w": w})
    assert _ops(d) == ["add", "mul", "sin", "sum"]
    (out,) = d.find("tensor", output=True)
    assert out["attributes"]["role"] == "intermediate"
    assert out["attributes"]["value"] == pytest.approx(loss.item())
    (param,) = d.find("tensor", role="parameter")
    assert param["label"].startswith("w\n(3,) float32 cpu")
    assert param["attributes"]["value"] == [1.0, 2.0, 3.0]
    expected = 2.0 + np.cos([1.0, 2.0, 3.0])
    np.testing.assert_allclose(param["attributes"]["grad"], expected, rtol=1e-6)
    (leaf,) = d.find("tensor", role="leaf")
    assert leaf["attributes"]["grad"] == pytest.approx(6.0)
    # w feeds mul and sin: two edges leave it; 4 ops + 2 leaves + the output need 7 data edges
    assert len(_edges_between(d, "tensor", "mul")) == 2
    assert len([e for e in d.edges if e["kind"] == "data"]) == 7
    assert x.grad is None and w.grad is None  # drawing never touches .grad


def test_flow_matches_the_engine_backward():
    kit.manual_seed(0)
    W1, W2 = kit.randn(4, 5, requires_grad=True), kit.randn(5, 3, requires_grad=True)
    X = kit.randn(6, 4)
    loss = ((X @ W1).tanh() @ W2).sigmoid().mean()
    d = draw_graph(loss, params={"W1": W1, "W2": W2})
    loss.backward()
    for name, t in (("W1", W1), ("W2", W2)):
        (node,) = d.find("tensor", name=name)
        assert node["attributes"]["grad_norm"] == pytest.approx(
            float(np.linalg.norm(t.grad.numpy())), rel=1e-5)
        assert "grad" not in node["attributes"]  # 20 and 15 elements: too many to show
        assert "|grad| " in node["label"]


def test_reuse_a_plus_a_sends_two_gradients_to_one_leaf():
    a = kit.tensor(3.0, requires_grad=True)
    d = draw_graph(a + a, params={"a": a})
    assert len(_edges_between(d, "tensor", "add")) == 2
    assert d.find("tensor", name="a")[0]["attributes"]["grad"] == 2.0
    steps = trace_backward(a + a)
    assert [s.node.name() for s in steps] == ["AddBackward0", "AccumulateGrad"]
    assert float(steps[-1].received[0]) == 2.0


def test_custom_ops_of_both_front_ends_are_marked_and_drawn_differently():
    x = kit.tensor([1.0, -2.0], requires_grad=True)
    y = MxSquare.apply(Scale.apply(x)).sum()
    d = draw_graph(y)
    custom = {n["attributes"]["op"]: n for n in d.find("custom")}
    assert set(custom) == {"Scale", "MxSquare"}
    assert custom["Scale"]["attributes"]["frontend"] == "PyTorch-style"
    assert custom["MxSquare"]["attributes"]["frontend"] == "MXNet-style"
    assert "[MXNet-style]" in custom["MxSquare"]["label"]
    np.testing.assert_allclose(d.find("tensor", role="leaf")[0]["attributes"]["grad"],
                               [18.0, -36.0])
    svg = d.svg
    assert "MxSquare" in svg and "[PyTorch&#45;style]" in svg
    assert svg.count("#7c3aed") >= 2  # the custom ops' purple border, one per custom op
    assert _ops(d) == ["MxSquare", "Scale", "sum"]


def test_multi_output_custom_op():
    x = kit.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    a, b = SplitHalves.apply(x)
    d = draw_graph(a.sum() * 2, b.sum())
    assert len(d.find("tensor", output=True)) == 2
    np.testing.assert_allclose(d.find("tensor", role="leaf")[0]["attributes"]["grad"],
                               [2.0, 2.0, 1.0, 1.0])
    assert {e["attributes"].get("output_nr") for e in d.edges} >= {0, 1}


def test_after_a_plain_backward_only_leaf_grads_are_left():
    x = kit.tensor([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    y.backward()
    d = draw_graph(y, show_saved=True)
    assert d.find("tensor", role="leaf")[0]["attributes"]["grad"] == [2.0, 4.0]
    (mul,) = [n for n in d.find("op") if n["attributes"]["op"] == "mul"]
    assert "grad_norm" not in mul["attributes"]
    assert mul["attributes"]["released"] is True


def test_show_saved_links_saved_tensors():
    x = kit.tensor([1.0, 2.0], requires_grad=True)
    y = (x.exp() * x).sum()
    d = draw_graph(y, show_saved=True)
    saved = [e for e in d.edges if e["kind"] == "saved"]
    # exp saves its output, mul saves both of its inputs
    assert len(saved) == 3
    assert any(n["kind"] == "saved" for n in d.nodes)


def test_small_values_shown_large_ones_summarised():
    big = kit.ones(10, requires_grad=True)
    d = draw_graph((big * 2).sum())
    (leaf,) = d.find("tensor", role="leaf")
    assert "value" not in leaf["attributes"] and "=" not in leaf["label"]
    assert leaf["attributes"]["grad_norm"] == pytest.approx(2 * np.sqrt(10))


def test_colour_by_gradient_magnitude_and_legend():
    deep = kit.tensor(1.0, requires_grad=True)
    small = kit.tensor(1.0, requires_grad=True)
    y = deep * 1e-8 + small * 1e6
    d = draw_graph(y, color_by_grad=True, params={"deep": deep, "small": small})
    assert d.find("tensor", name="deep")[0]["attributes"]["colour"] == grad_colour(1e-8)
    assert d.find("tensor", name="small")[0]["attributes"]["colour"] == grad_colour(1e6)
    assert grad_colour(1e-8).startswith("#2") and grad_colour(1e6).startswith("#b")
    assert all("colour" in e["attributes"] for e in d.edges)
    assert [label for label, _ in d.legend][0].startswith("vanishing")
    assert "gradient norm" in d.svg
    assert draw_graph(y).legend == []


def test_compact_lays_a_deep_network_out_one_layer_per_row():
    kit.manual_seed(0)
    h = kit.randn(4, 8)
    weights = {f"W{i}": (kit.randn(8, 8) * 0.3).requires_grad_() for i in range(10)}
    for w in weights.values():
        h = kit.sigmoid(h @ w)
    full = draw_graph(h.sum(), color_by_grad=True, params=weights)
    d = draw_graph(h.sum(), color_by_grad=True, params=weights, compact=True)
    assert d.nodes == full.nodes  # the data keeps every detail; only the drawing is smaller
    g = d.agraph()
    g.layout(prog="dot")
    where = {n["id"]: tuple(float(v) for v in g.get_node(n["id"]).attr["pos"].split(","))
             for n in d.nodes}
    by_op = {}
    for n in d.find("op"):
        by_op.setdefault(n["attributes"]["op"], []).append(where[n["id"]])
    matmuls, sigmoids = sorted(by_op["matmul"], key=lambda p: -p[1]), by_op["sigmoid"]
    assert len({x for x, _ in matmuls}) == 1  # the layers' first ops in one column
    assert sorted(y for _, y in matmuls) == sorted(y for _, y in sigmoids)  # each layer a row
    width, height = (float(v) for v in g.graph_attr["bb"].split(",")[2:])
    assert width < 600 and height < 1000  # points: fits a 1,200-px notebook, one screen tall
    label = g.get_node(d.find("tensor", name="W3")[0]["id"]).attr["label"]
    assert label.splitlines()[0] == "W3" and label.splitlines()[1].startswith("|grad|")
    assert len(label.splitlines()) == 2


def test_deep_chain_of_100000_collapses_and_draws():
    x = kit.tensor(1.0, requires_grad=True)
    h = x
    for _ in range(100_000):
        h = h * 1.0
    d = draw_graph(h)
    (chain,) = d.find("chain")
    assert chain["attributes"]["count"] == 100_000
    assert chain["label"].startswith("mul \u00d7100000")
    assert len(d.nodes) == 3 and len(d.edges) == 2
    assert d.find("tensor", role="leaf")[0]["attributes"]["grad"] == 1.0
    assert "100000" in d.svg


def test_chain_collapse_can_be_turned_off_and_max_nodes_truncates():
    x = kit.tensor(1.0, requires_grad=True)
    h = x
    for _ in range(30):
        h = h.sin()
    assert len(draw_graph(h, collapse_chains=False, max_nodes=1000).find("op")) == 30
    d = draw_graph(h, collapse_chains=False, max_nodes=10)
    (more,) = d.find("more")
    assert len(d.nodes) == 11 and more["attributes"]["count"] == 30 + 2 - 10
    assert any(e["source"] == more["id"] for e in d.edges)
    with pytest.raises(ValueError, match="collapse_chains"):
        draw_graph(h, collapse_chains=1)


def test_highlight_marks_the_node():
    a = kit.tensor(3.0, requires_grad=True)
    b = a * a
    d = draw_graph(b + a, highlight=[b])
    (marked,) = [n for n in d.nodes if n["attributes"].get("highlight")]
    assert marked["attributes"]["op"] == "mul"
    assert "#dc2626" in d.svg


def test_svg_repr_and_save(tmp_path):
    x = kit.tensor([1.0, 2.0], requires_grad=True)
    d = draw_graph((x * 2).sum())
    assert d._repr_svg_().lstrip().startswith("<?xml") and "<svg" in d.svg
    assert repr(d) == "<GraphDrawing: 4 nodes, 3 edges>"
    assert d.save(tmp_path / "g.svg").read_text().count("<g id=\"node") == 4
    assert (d.save(tmp_path / "g.png")).read_bytes()[:4] == b"\x89PNG"
    with pytest.raises(ValueError, match=r"\.svg or \.png"):
        d.save(tmp_path / "g.pdf")


def test_bad_input_errors():
    with pytest.raises(TypeError, match="draw_graph: output 0 is a float"):
        draw_graph(3.0)
    with pytest.raises(TypeError, match="at least one Tensor"):
        draw_graph()


def test_leaf_and_constant_outputs_and_show_grad_off():
    x = kit.tensor([1.0], requires_grad=True)
    d = draw_graph(x)
    assert len(d.nodes) == 1 and d.nodes[0]["attributes"]["output"] is True
    (x * 2).sum().backward()
    assert draw_graph(x).nodes[0]["attributes"]["grad"] == [2.0]
    assert "grad" not in draw_graph(x, show_grad=False).nodes[0]["attributes"]
    y = (x * 3).sum()
    assert all("grad_norm" not in n["attributes"] for n in draw_graph(y, show_grad=False).nodes)
    c = kit.tensor([1.0]) * 2
    assert draw_graph(c).nodes[0]["attributes"]["requires_grad"] is False


def test_device_is_shown(xp_device):
    x = kit.tensor([1.0, 2.0], device=xp_device, requires_grad=True)
    d = draw_graph((x * x).sum())
    (leaf,) = d.find("tensor", role="leaf")
    assert leaf["attributes"]["device"] == xp_device and f"float32 {xp_device}" in leaf["label"]
    assert leaf["attributes"]["grad"] == [2.0, 4.0]


def test_a_real_mxnet_style_custom_op_is_drawn_with_its_front_end():
    mx = pytest.importorskip("kit.mx")

    class Triple(mx.operator.CustomOp):
        def forward(self, is_train, req, in_data, out_data, aux):
            self.assign(out_data[0], req[0], in_data[0] * 3)

        def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
            self.assign(in_grad[0], req[0], out_grad[0] * 3)

    @mx.operator.register("viz_triple")
    class TripleProp(mx.operator.CustomOpProp):
        def __init__(self):
            super().__init__(need_top_grad=True)

        def list_arguments(self):
            return ["data"]

        def list_outputs(self):
            return ["output"]

        def infer_shape(self, in_shape):
            return [in_shape[0]], [in_shape[0]], []

        def create_operator(self, ctx, shapes, dtypes):
            return Triple()

    data = mx.nd.array([1.0, 2.0])
    data.attach_grad()
    with mx.autograd.record():
        y = mx.nd.Custom(data, op_type="viz_triple")
    out = Scale.apply(y.tensor).sum()
    d = draw_graph(out)
    fronts = {n["attributes"]["op"]: n["attributes"]["frontend"] for n in d.find("custom")}
    assert fronts["Scale"] == "PyTorch-style"
    assert [f for op, f in fronts.items() if op != "Scale"] == ["MXNet-style"]
    assert d.find("tensor", role="leaf")[0]["attributes"]["grad"] == [9.0, 9.0]


@pytest.mark.parametrize("module", ["_style", "_trace", "_view", "drawing", "flow",
                                    "gradcheck_view", "graph", "widgets"])
def test_docstring_examples_of_kit_viz_run(module):
    result = doctest.testmod(importlib.import_module(f"kit.viz.{module}"))
    assert result.attempted > 0 and result.failed == 0


def test_render_drops_only_fontconfig_warnings(capfd):
    from kit.viz.drawing import _render

    class NoisyGraph:
        # Writes to file descriptor 2 as Graphviz's C code does, past Python's sys.stderr.
        def draw(self, format, prog):
            os.write(2, b'Fontconfig warning: "/etc/fonts/x.conf", line 6: unknown element\n')
            os.write(2, b"Warning: node a, port b unrecognized\n")
            return b"<svg/>"

    assert _render(NoisyGraph(), "svg") == b"<svg/>"
    err = capfd.readouterr().err
    assert "Fontconfig" not in err and "port b unrecognized" in err


def test_a_leaf_nothing_keeps_any_more_is_drawn_from_its_node():
    """`kit.tensor(2.0, requires_grad=True) * 3`: mul keeps only the number, so the temporary leaf
    is freed (as its .grad could never be read); the drawing still shows where it was."""
    y = kit.tensor([2.0, 1.0], requires_grad=True) * 3
    d = draw_graph(y.sum())
    (freed,) = [n for n in d.nodes if n["attributes"].get("freed")]
    assert freed["label"].startswith("leaf (freed)") and freed["attributes"]["shape"] == (2,)
    assert len(d.nodes) == 4 and len(d.edges) == 3  # leaf -> mul -> sum -> output
