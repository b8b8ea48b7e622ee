"""The reverse pass: accumulation, graph shapes, depth, hooks, retain_grad, retain_graph,
higher-order gradients, kit.grad, anomaly detection, and the public Node attributes."""

import re

import numpy as np
import pytest
from helpers import host, leaf

import kit


# --- accumulation ---------------------------------------------------------------------------
def test_reuse_of_one_tensor_accumulates():
    a = leaf([1.0, 2.0])
    (a + a).sum().backward()
    np.testing.assert_array_equal(host(a.grad), [2.0, 2.0])
    b = leaf([1.0, 2.0])
    (b * b).sum().backward()
    np.testing.assert_array_equal(host(b.grad), [2.0, 4.0])


def test_diamond_graph_sums_both_paths():
    x = leaf(3.0)
    y = x * 2
    left, right = y.exp(), y * y
    (left + right).backward()
    assert x.grad.item() == pytest.approx(2 * np.exp(6.0) + 2 * 2 * 6.0)


def test_shared_subgraph_runs_once_after_all_consumers():
    """A node consumed by many runs once, after every consumer sent its part."""
    x = leaf([1.0, 2.0])
    h = x.tanh()
    calls = []
    h.register_hook(lambda g: calls.append(host(g).copy()))
    (h * 1 + h * 2 + h.sum() * h).sum().backward()
    assert len(calls) == 1
    hv = np.tanh([1.0, 2.0])
    np.testing.assert_allclose(calls[0], 3 + hv.sum() + hv.sum())


def test_gradients_accumulate_across_backward_calls():
    x = leaf([1.0, 2.0])
    (x * 3).sum().backward()
    (x * x).sum().backward()
    np.testing.assert_array_equal(host(x.grad), [3.0 + 2.0, 3.0 + 4.0])
    x.grad = None
    (x * 3).sum().backward()
    np.testing.assert_array_equal(host(x.grad), [3.0, 3.0])


@pytest.mark.parametrize("inputs", [None, "both"])
@pytest.mark.parametrize("make", [
    lambda x, y: (x + y).sum(),
    lambda x, y: (x - (-y)).sum(),
    lambda x, y: kit.stack([x, y]).sum(),
], ids=["add", "sub_neg", "stack"])
def test_two_leaves_never_share_a_grad_array(make, inputs):
    x, y = leaf([1.0, 2.0]), leaf([3.0, 4.0])
    make(x, y).backward(inputs=[x, y] if inputs else None)
    x.grad.zero_()
    np.testing.assert_array_equal(host(y.grad), [1.0, 1.0])
    assert not np.shares_memory(x.grad.data, y.grad.data)


def test_user_gradient_is_never_stored_as_a_grad():
    g = kit.tensor(np.array([1.0, 1.0]))
    x, y = leaf([1.0, 2.0]), leaf([3.0, 4.0])
    (x + y).backward(g)
    x.grad.zero_()
    y.grad.zero_()
    np.testing.assert_array_equal(host(g), [1.0, 1.0])
    for inputs in (None, "z"):
        z = leaf([5.0, 6.0])
        z.backward(g, inputs=[z] if inputs else None)
        z.grad.zero_()
        np.testing.assert_array_equal(host(g), [1.0, 1.0])


def test_a_chain_100000_deep_runs_without_recursion():
    x = leaf(1.0)
    y = x
    for _ in range(100_000):
        y = y * 1.0
    y.backward()
    assert x.grad.item() == 1.0
    z = x
    for _ in range(100_000):
        z = z + 0.0
    del z  # freeing a deep unreleased graph must not recurse either


def test_backward_of_a_one_element_tensor_and_of_a_leaf():
    x = leaf([[2.0]])
    (x * 3).backward()
    assert x.grad.item() == 3.0
    y = leaf(4.0)
    y.backward()
    assert y.grad.item() == 1.0


def test_backward_with_inputs_accumulates_only_into_them():
    x, w = leaf([1.0, 2.0]), leaf([3.0, 4.0])
    (x * w).sum().backward(inputs=[x])
    np.testing.assert_array_equal(host(x.grad), [3.0, 4.0])
    assert w.grad is None


def test_constants_and_detached_tensors_get_no_gradient():
    x = leaf([1.0, 2.0])
    c = kit.tensor([5.0, 6.0])
    d = x.detach()
    assert not d.requires_grad and np.shares_memory(d.data, x.data)
    (x * c + d).sum().backward()
    np.testing.assert_array_equal(host(x.grad), [5.0, 6.0])
    assert c.grad is None and d.grad is None


# --- hooks and retain_grad ------------------------------------------------------------------
def test_hook_on_a_leaf_replaces_its_gradient_and_can_be_removed():
    x = leaf([1.0, 2.0])
    handle = x.register_hook(lambda g: g * 10)
    (x * 2).sum().backward()
    np.testing.assert_array_equal(host(x.grad), [20.0, 20.0])
    handle.remove()
    x.grad = None
    (x * 2).sum().backward()
    np.testing.assert_array_equal(host(x.grad), [2.0, 2.0])


def test_hook_on_a_non_leaf_changes_what_flows_upstream():
    x = leaf([1.0, 2.0])
    y = x * 2
    seen = []
    y.register_hook(lambda g: seen.append(host(g).copy()))  # returns None: gradient unchanged
    handle = y.register_hook(lambda g: g * 3)
    (y * y).sum().backward(retain_graph=True)
    np.testing.assert_array_equal(seen[0], [4.0, 8.0])
    np.testing.assert_array_equal(host(x.grad), [24.0, 48.0])
    handle.remove()
    x.grad = None
    (y * y).sum().backward()
    np.testing.assert_array_equal(host(x.grad), [8.0, 16.0])
    assert len(seen) == 2


def test_retain_grad_keeps_the_hooked_gradient_of_a_non_leaf():
    x = leaf([1.0, 2.0])
    y = x * 2
    y.retain_grad()
    y.register_hook(lambda g: g * 3)  # registered after retain_grad; retain still sees it last
    (y * y).sum().backward()
    assert y.retains_grad
    np.testing.assert_array_equal(host(y.grad), [12.0, 24.0])


def test_retain_grad_accumulates_over_calls():
    x = leaf([1.0, 2.0])
    y = x * 2
    y.retain_grad()
    (y * 1).sum().backward(retain_graph=True)
    (y * 1).sum().backward()
    np.testing.assert_array_equal(host(y.grad), [2.0, 2.0])


def test_grad_of_a_non_leaf_warns_and_is_none():
    y = leaf([1.0]) * 2
    y.sum().backward()
    with pytest.warns(UserWarning, match=r"not a leaf Tensor.*\.retain_grad\(\)"):
        assert y.grad is None


def test_hook_errors():
    x = leaf([1.0, 2.0])
    x.register_hook(lambda g: 1.0)
    with pytest.raises(TypeError, match="returned float; a hook must return a Tensor or None"):
        (x * 2).sum().backward()
    y = leaf([1.0, 2.0])
    y.register_hook(lambda g: g.sum())
    with pytest.raises(RuntimeError, match=r"changed its shape from \[2\] to \[\]"):
        (y * 2).sum().backward()
    with pytest.raises(RuntimeError, match="cannot register a hook on a tensor that doesn't "
                                           "require gradient"):
        kit.tensor([1.0]).register_hook(lambda g: g)
    with pytest.raises(RuntimeError, match="can't retain_grad on Tensor that has "
                                           "requires_grad=False"):
        kit.tensor([1.0]).retain_grad()


# --- retain_graph ---------------------------------------------------------------------------
def test_second_backward_through_saved_tensors_errors():
    x = leaf([1.0, 2.0])
    y = (x * x).sum()
    y.backward()
    with pytest.raises(RuntimeError, match=r"Trying to backward through the graph a second "
                                           r"time.*MulBackward0.*retain_graph=True"):
        y.backward()


def test_second_backward_with_nothing_saved_silently_works():
    x = leaf([1.0, 2.0])
    y = (x + 1).sum()
    y.backward()
    y.backward()
    np.testing.assert_array_equal(host(x.grad), [2.0, 2.0])


def test_retain_graph_allows_a_second_backward():
    x = leaf([1.0, 2.0])
    y = (x * x).sum()
    y.backward(retain_graph=True)
    assert not y.grad_fn.next_functions[0][0].released()
    y.backward()
    np.testing.assert_array_equal(host(x.grad), [4.0, 8.0])
    assert y.grad_fn.next_functions[0][0].released()


# --- higher order ---------------------------------------------------------------------------
def test_third_derivative_through_backward_create_graph():
    x = leaf(2.0)
    y = x ** 4
    y.backward(create_graph=True)
    g1 = x.grad
    assert g1.requires_grad and g1.item() == pytest.approx(32.0)
    x.grad = None
    g1.backward(create_graph=True)
    g2 = x.grad
    assert g2.item() == pytest.approx(48.0)
    x.grad = None
    g2.backward()
    assert x.grad.item() == pytest.approx(48.0)  # d3/dx3 x**4 = 24 x


def test_higher_order_through_composites_and_matmul():
    w = leaf(np.arange(6.0).reshape(2, 3) / 10)
    x = leaf(np.ones((4, 2)))
    loss = kit.softmax(x @ w).sum(1).mean() + (x @ w).tanh().sum()
    (gw,) = kit.grad(loss, w, create_graph=True)
    penalty = (gw * gw).sum()
    (hw,) = kit.grad(penalty, w)
    assert hw.shape == (2, 3) and np.isfinite(host(hw)).all() and not hw.requires_grad
    assert kit.gradgradcheck(lambda a: (kit.softmax(x.detach() @ a).sum(1)
                                        + (x.detach() @ a).tanh().sum(1)), (w,))


# --- kit.grad -------------------------------------------------------------------------------
def test_grad_returns_without_touching_grad_attributes():
    x, w = leaf([1.0, 2.0]), leaf([3.0, 4.0])
    gx, gw = kit.grad((x * w).sum(), [x, w])
    np.testing.assert_array_equal(host(gx), [3.0, 4.0])
    np.testing.assert_array_equal(host(gw), [1.0, 2.0])
    assert x.grad is None and w.grad is None


def test_grad_with_grad_outputs_and_non_leaf_inputs():
    x = leaf([1.0, 2.0])
    h = x * 3
    y = h * h
    gh, gx = kit.grad(y, [h, x], grad_outputs=kit.tensor(np.array([1.0, 0.5])),
                      retain_graph=True)
    np.testing.assert_array_equal(host(gh), [6.0, 6.0])
    np.testing.assert_array_equal(host(gx), [18.0, 18.0])
    (g,) = kit.grad([y.sum(), h.sum()], x)  # several outputs: their gradients add
    np.testing.assert_array_equal(host(g), [18.0 + 3.0, 36.0 + 3.0])


def test_grad_runs_only_the_part_of_the_graph_it_needs():
    """As in PyTorch: kit.grad w.r.t. an intermediate neither runs nor frees what lies below it,
    so a later backward through that part still works."""
    x = leaf([1.0, 2.0])
    h = x * x  # saves x: a second run would need retain_graph
    (gh,) = kit.grad((h * 3).sum(), h)
    np.testing.assert_array_equal(host(gh), [3.0, 3.0])
    assert not h.grad_fn.released() and x.grad is None
    (gy,) = kit.grad(h, h, kit.tensor(np.array([1.0, 5.0])))
    np.testing.assert_array_equal(host(gy), [1.0, 5.0])
    h.sum().backward()
    np.testing.assert_array_equal(host(x.grad), [2.0, 4.0])


def test_grad_allow_unused_and_materialize():
    x, unused = leaf([1.0]), leaf([2.0])
    with pytest.raises(RuntimeError, match=r"input 1, shape \[1\]\) appears to not have been "
                                           r"used in the graph. Set allow_unused=True"):
        kit.grad((x * 2).sum(), [x, unused])
    gx, gu = kit.grad((x * 2).sum(), [x, unused], allow_unused=True)
    assert gu is None and gx.item() == 2.0
    _, gu = kit.grad((x * 2).sum(), [x, unused], materialize_grads=True)
    np.testing.assert_array_equal(host(gu), [0.0])


def test_grad_errors():
    x = leaf([1.0, 2.0])
    with pytest.raises(RuntimeError, match=r"grad can be implicitly created only for scalar "
                                           r"outputs, but output 0 has shape \[2\]"):
        kit.grad(x * 2, x)
    with pytest.raises(RuntimeError, match=r"Mismatch in shape: grad_output\[0\] has a shape of "
                                           r"\[3\] and output\[0\] has a shape of \[2\]"):
        kit.grad(x * 2, x, kit.tensor(np.ones(3)))
    with pytest.raises(RuntimeError, match=r"One of the differentiated Tensors \(input 0\) does "
                                           r"not require grad"):
        kit.grad((x * 2).sum(), kit.tensor([1.0]))
    with pytest.raises(RuntimeError, match="got 2 grad_outputs for 1 outputs"):
        kit.grad(x * 2, x, [None, None])


# --- anomaly detection ----------------------------------------------------------------------
def test_detect_anomaly_names_the_op_whose_backward_made_nan():
    x = leaf([0.0, 1.0])
    with kit.detect_anomaly():
        y = x.sqrt() * 0  # d sqrt / dx at 0 is inf; times the 0 flowing back gives nan
        with pytest.raises(RuntimeError, match=r"Function 'SqrtBackward0' returned nan values in "
                                               r"its 0th output") as error:
            y.sum().backward()
    assert not kit.is_anomaly_enabled()
    # the forward line that made the node, as a note under the message (tests/test_anomaly.py)
    assert "y = x.sqrt() * 0" in "".join(getattr(error.value, "__notes__", error.value.args))


def test_without_anomaly_detection_nan_propagates_silently():
    x = leaf([0.0, 1.0])
    (x.sqrt() * 0).sum().backward()
    assert np.isnan(host(x.grad)[0]) and host(x.grad)[1] == 0.0


# --- the public Node attributes -------------------------------------------------------------
def test_node_public_attributes():
    x = leaf([1.0, 2.0])
    y = x * 3
    z = (y.exp() + x).sum()
    add = z.grad_fn.next_functions[0][0]
    assert z.grad_fn.name() == "SumBackward0" and add.op == "add" and add.kind == "builtin"
    exp_node, acc = add.next_functions[0][0], add.next_functions[1][0]
    assert exp_node.name() == "ExpBackward0" and acc.name() == "AccumulateGrad"
    assert acc.variable is x and acc.outputs() == (x,)
    assert exp_node.output_meta == (((2,), kit.float64),)
    assert len(exp_node.saved_values()) == 1 and not exp_node.released()
    assert re.fullmatch(r"<MulBackward0 object at 0x[0-9a-f]+>", repr(y.grad_fn))
    assert type(y.grad_fn).__name__ == "MulBackward0"
    assert "grad_fn=<MulBackward0>" in repr(y)
    z.backward()
    assert exp_node.released() and exp_node.saved_values() == ()


def test_nodes_reach_their_outputs_only_when_asked():
    """Output references cost a weak reference per op: only under keep_output_refs()."""
    import gc

    from kit.grad_mode import keep_output_refs

    x = kit.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    assert y.grad_fn.outputs() == (None,)
    with keep_output_refs():
        z = x * 3
        w = x * 4
    assert z.grad_fn.outputs()[0] is z
    node = w.grad_fn
    del w
    gc.collect()
    assert node.outputs() == (None,)  # the weak reference does not keep it alive
    assert (x * 5).grad_fn.outputs() == (None,)


def test_version_counters_are_shared_only_when_needed():
    """A fresh tensor shares one read-only counter; in-place changes and views get their own."""
    a, b = kit.tensor([1.0]), kit.tensor([2.0])
    assert a._vc is b._vc and a._version == 0
    a += 1
    assert a._version == 1 and b._version == 0
    c = b.detach()
    b.add_(1)
    assert c._version == 1  # a detached view sees the change, as in PyTorch
    with pytest.raises(TypeError):
        kit.tensor([0.0])._vc[0] += 1  # the shared counter cannot be bumped by mistake


def test_a_leaf_keeps_one_accumulator_without_a_reference_cycle():
    """The edge to a leaf's AccumulateGrad is made once; the node refers to the leaf weakly."""
    import gc
    import weakref

    w = kit.tensor([1.0, 2.0], requires_grad=True)
    first = (w * 2).grad_fn.next_functions[0][0]
    second = (w * 3).grad_fn.next_functions[0][0]
    assert first is second and first.variable is w
    w.data = kit.zeros(3)  # a new shape gets a new accumulator with the right metadata
    (w * 2).sum().backward()
    assert w.grad.shape == (3,)
    probe = weakref.ref(w)
    gc.disable()
    try:
        del w, first, second
        assert probe() is None  # freed by reference counting alone: no cycle
    finally:
        gc.enable()


def test_a_recursion_error_in_a_recursive_walk_leaves_grad_mode_on():
    """Lesson 01 walks a deep graph recursively with node_vjp until RecursionError: grad mode
    must be on afterwards (a mode entered inside node_vjp could be left half-undone)."""
    import sys

    from kit.engine import AccumulateGrad, node_vjp

    x = kit.tensor(1.0, requires_grad=True)
    y = x
    for _ in range(sys.getrecursionlimit() + 100):
        y = y * 1.0

    def walk(node, g):
        if type(node) is AccumulateGrad:
            return
        for edge, g_in in zip(node.next_functions, node_vjp(node, [g]), strict=True):
            if edge[0] is not None:
                walk(edge[0], g_in)

    with pytest.raises(RecursionError):
        walk(y.grad_fn, np.ones((), dtype=np.float32))
    assert kit.is_grad_enabled()
