"""Replay: a captured graph as two flat Python functions, and the one node they make.

`Program` writes the graph as Python source, one line per step (`v5 = E5(XP, v3, 2.0)`): the
forward computes arrays and returns the outputs and what the backward needs; the backward is the
reverse schedule, worked out once: each gradient rule called on arrays, broadcasting undone where
the shapes say so, gradients summed in local variables. A fused group is one kernel call in each.
Neither makes a Tensor or a Node per op (only a call kit.compile cannot see into, an "island" or
an op without an array form, goes through Tensors).

The compiled call is one `CompiledNode` in the caller's graph, so it composes with eager code and
`backward()`. A backward with create_graph=True (a gradient of a gradient) runs the graph again,
op by op on Tensors from the saved inputs (`interpret`), and lets the engine differentiate that:
the same ops as eager code, so the same second derivatives.
"""

from __future__ import annotations

import numpy as np

from kit import _views, backend
from kit._tensor import Tensor, version_counter
from kit.compiler import kernels
from kit.compiler.fusion import groups as find_groups
from kit.compiler.graph import OUT, Ref, RuleNode, _walk, interpret
from kit.compiler.guards import same_value
from kit.engine import FREED, NO_EDGE, Node, _fit, _freed_message, run_backward
from kit.grad_mode import STATE, enable_grad, no_grad


class GuardFail(Exception):
    """A replay met a value or shape other than the trace's: use another graph."""


class Program:
    """A graph compiled into a forward and a backward function."""

    def __init__(self, graph, config):
        self.graph = graph
        self.grad = any(s.differentiable for s in graph.steps)
        self.groups = []
        if config.fuse:
            for group in find_groups(graph, _reader_positions(graph)):
                if kernels.build(group, config) is None:
                    for step in group.steps:
                        step.group = None
                else:
                    group.index = len(self.groups)
                    for step in group.steps:
                        step.group = group.index
                    self.groups.append(group)
        graph.groups = self.groups
        self.input_slots = graph.inputs + [s for s, _ in graph.captured]
        writer = _Writer(graph, self.groups)
        self.forward, self.saved_slots = writer.forward()
        self.backward = writer.backward() if self.grad else None
        self.source = writer.sources
        self.generic = any(s.kind != "guard" and s.expr is None and s.group is None
                           for s in graph.steps)
        self.random = [s.outs[0] for s in graph.steps if s.kind == "random"]
        # the outputs the CompiledNode differentiates, and the inputs and outputs whose values
        # its backward reads (checked for in-place changes, as saved tensors are)
        self.grad_outputs = list(enumerate(_output_slots(graph))) if self.grad else []
        self.grad_outputs = [(slot, k) for k, slot in self.grad_outputs]
        read = set(self.saved_slots)
        self.checked_inputs = [k for k, s in enumerate(self.input_slots) if s in read]
        self.checked_outputs = [k for s, k in self.grad_outputs if s in read]

    def call(self, tensors):
        """Run on `tensors` (inputs then captured); the function's outputs, as it returns them."""
        arrays = [t._data for t in tensors]
        if self.generic:
            with no_grad():
                outs, saved = self.forward(*arrays)
        else:
            outs, saved = self.forward(*arrays)
        graph = self.graph
        node = None
        if self.grad and STATE.enabled and self.grad_outputs:
            node = self._node(tensors, saved)
        made = {slot: t for slot, t in zip(self.input_slots, tensors, strict=True)}
        values = []
        for r, array in zip(graph.outputs, outs, strict=True):
            if not isinstance(r, Ref):
                values.append(r)
                continue
            t = made.get(r.slot)
            if t is None:
                index = dict(self.grad_outputs).get(r.slot) if node is not None else None
                t = Tensor(array) if index is None else Tensor._from_node(array, node, index)
                if array.base is not None:
                    _views.mark(t, tensors, node is not None)
                made[r.slot] = t
            values.append(t)
        if node is not None:
            slots = [s for s, _ in self.grad_outputs]
            node.out_vc = tuple(version_counter(made[slots[k]]) for k in self.checked_outputs)
        return graph.rebuild(values)

    def _node(self, tensors, saved):
        edges = []
        for slot, t in zip(self.input_slots, tensors, strict=True):
            if self.graph.slots[slot].requires_grad:
                if t._base is not None:
                    _views.refresh(t)
                edges.append(t._edge or t._leaf_edge())
            else:
                edges.append(NO_EDGE)
        meta = tuple((self.graph.slots[s].shape, self.graph.slots[s].dtype)
                     for s, _ in self.grad_outputs)
        return CompiledNode(self, tuple(edges), saved, tensors, meta)

    def differentiable_backward(self, node, grads):
        """create_graph=True: the graph run again on Tensors, differentiated by the engine."""
        from kit.autograd import grad

        drawn = dict(zip(self.saved_slots, node.saved, strict=True))
        with enable_grad():
            outs = interpret(self.graph, node.tensors, drawn)
        by_slot = {r.slot: o for r, o in zip(self.graph.outputs, outs, strict=True)
                   if isinstance(r, Ref)}
        pairs = [(by_slot[s], g) for (s, i), g in zip(self.grad_outputs, grads, strict=True)
                 if g is not None and by_slot[s].requires_grad]
        wanted = [t for t, e in zip(node.tensors, node.next_functions, strict=True) if e]
        if not pairs or not wanted:
            return [None] * len(node.next_functions)
        found = iter(grad([o for o, _ in pairs], wanted, [g for _, g in pairs],
                          create_graph=True, allow_unused=True))
        return [next(found) if e else None for e in node.next_functions]


def _reader_positions(graph):
    """used_later(slot, position): is `slot` read by a step after `position`, kept for the
    backward of such a step, guarded, or returned?"""
    last = {}
    for position, step in enumerate(graph.steps):
        for slot in step.refs():
            last[slot] = position
    for r in graph.outputs:
        if isinstance(r, Ref):
            last[r.slot] = len(graph.steps)
    return lambda slot, position: last.get(slot, -1) > position


class CompiledNode(Node):
    """The node of one compiled call in the caller's graph (PyTorch's CompiledFunctionBackward):
    its inputs are the function's tensor inputs and the tensors it captured."""

    __slots__ = ("program", "tensors", "in_versions")

    def __init__(self, program, edges, saved, tensors, meta):
        super().__init__("compiled_function", None, edges, saved, (), None, meta)
        self.program = program
        self.tensors = tensors
        self.in_versions = tuple(t._vc[0] for t in tensors)
        self.out_vc = ()

    def name(self):
        return "CompiledFunctionBackward"

    def apply(self, grads, differentiable):
        if self.saved is FREED:
            raise RuntimeError(_freed_message(self))
        checked = range(len(self.tensors)) if differentiable else self.program.checked_inputs
        for k in checked:
            t, version = self.tensors[k], self.in_versions[k]
            if t._vc[0] != version:
                _modified(self, f"an input of shape {list(t.shape)}", t._vc[0], version)
        for vc in self.out_vc:
            if vc[0] != 0:
                _modified(self, "one of its outputs", vc[0], 0)
        if differentiable:
            return self.program.differentiable_backward(self, grads)
        return self.program.backward(self.saved, *grads)

    def release(self):
        self.saved = FREED
        self.tensors = ()
        self.in_versions = ()


def _modified(node, what, now, expected):
    raise RuntimeError(
        f"one of the variables needed for gradient computation has been modified by an inplace "
        f"operation: {what}, saved by {node.name()}, is at version {now}; expected version "
        f"{expected} instead. Fix: do not modify it in place before backward (use an "
        f"out-of-place op, or .clone() it)")


class _Writer:
    """Writes the forward and backward source of a graph."""

    def __init__(self, graph, groups):
        self.graph = graph
        self.groups = groups
        self.names = {"np": np, "T": Tensor, "TG": _leaf, "SAME": same_value, "FAIL": GuardFail,
                      "GRAD": enable_grad, "FIT": _fit, "ISLAND": _island_backward}
        self.sources = {}

    def constant(self, value):
        name = f"K{len(self.names)}"
        self.names[name] = value
        return name

    def render(self, tree, tensor):
        """Source for an argument tree; Refs through `tensor(slot)`."""
        if isinstance(tree, Ref):
            return tensor(tree.slot)
        if isinstance(tree, (tuple, list)):
            items = ", ".join(self.render(v, tensor) for v in tree)
            return f"({items},)" if isinstance(tree, tuple) else f"[{items}]"
        if isinstance(tree, dict):
            return "{" + ", ".join(f"{k!r}: {self.render(v, tensor)}" for k, v in tree.items()) + "}"
        if tree is None or isinstance(tree, (bool, int, str)) or (
                isinstance(tree, float) and np.isfinite(tree)):
            return repr(tree)
        return self.constant(tree)

    def call_args(self, step, tensor):
        args = ", ".join(self.render(a, tensor) for a in step.args)
        kwargs = ", ".join(f"{k}={self.render(v, tensor)}" for k, v in step.kwargs.items())
        return ", ".join(p for p in (args, kwargs) if p)

    # --- forward ----------------------------------------------------------------------------
    def forward(self):
        graph = self.graph
        params = [f"v{s}" for s in graph.inputs + [s for s, _ in graph.captured]]
        lines = [f"def forward({', '.join(params)}):"]
        saved = []  # names the backward reads
        saved_set = set()

        def keep(name):
            if name not in saved_set:
                saved_set.add(name)
                saved.append(name)

        done_groups = set()
        for i, step in enumerate(graph.steps):
            fn = self.constant(step.fn)
            outs = [f"v{s}" for s in step.outs]
            if step.group is not None:
                if step.group in done_groups:
                    continue
                done_groups.add(step.group)
                group = self.groups[step.group]
                kernel = self.constant(group.fwd_kernel)
                ins = [f"v{r.slot}" if isinstance(r, Ref) else self.constant(r)
                       for r in group.inputs]
                kept = _kept(group)
                targets = [f"v{s}" for s in group.outputs] + [
                    name for name, slot in zip(kept, group.saved_from, strict=True) if slot is None]
                lines.append(f"    {''.join(t + ', ' for t in targets)}_ = "
                             f"*{kernel}({', '.join(ins)}), None")
                if group.backward:
                    for name in ins + kept:
                        if not name.startswith("K"):
                            keep(name)
                continue
            if step.kind == "guard":
                lines.append(f"    if not SAME({fn}(v{step.args[0].slot}), "
                             f"{self.constant(step.guard)}): raise FAIL({i})")
                continue
            if step.expr is not None:
                xp = self.constant(np if graph.slots[step.outs[0]].device == "cpu" else
                                   backend.require_gpu("a compiled GPU function"))
                lines.append(f"    {outs[0]} = {self.constant(step.expr)}({xp}, "
                             f"{self.call_args(step, lambda s: f'v{s}')})")
            elif step.kind == "island":
                flags = iter(step.need)
                leaves = []

                def leaf(slot, flags=flags, leaves=leaves):
                    leaves.append(f"{'TG' if next(flags) else 'T'}(v{slot})")
                    return f"_i[{len(leaves) - 1}]"

                call = self.call_args(step, leaf)
                lines.append(f"    _i = [{', '.join(leaves)}]")
                grad = step.differentiable and self.graph.slots[step.outs[0]].requires_grad
                lines.append(f"    with GRAD():\n        _o = {fn}({call})" if grad
                             else f"    _o = {fn}({call})")
                self._unpack(lines, outs)
                if step.differentiable:
                    lines.append(f"    n{i} = (_i, _o)")
                    keep(f"n{i}")
            else:  # op without an array form, create, random: through Tensors
                lines.append(f"    _o = {fn}({self.call_args(step, lambda s: f'T(v{s})')})")
                self._unpack(lines, outs)
                for s in step.outs:
                    lines.append(f"    if v{s}.shape != {graph.slots[s].shape!r}: raise FAIL({i})")
                if step.kind == "random":
                    keep(outs[0])
            if step.rule is not None:
                for r in step.saved:
                    if isinstance(r, Ref) or r is OUT:
                        keep(f"v{r.slot}" if isinstance(r, Ref) else outs[step.out_index])
        results = [f"v{r.slot}" if isinstance(r, Ref) else "None" for r in graph.outputs]
        lines.append(f"    return ({''.join(r + ', ' for r in results)}), "
                     f"({''.join(s + ', ' for s in saved)})")
        self.saved = saved
        slots = [int(s[1:]) if s.startswith("v") and s[1:].isdigit() else s for s in saved]
        return self._compile("forward", lines), slots

    @staticmethod
    def _unpack(lines, outs):
        if len(outs) == 1:
            lines.append(f"    {outs[0]} = _o._data")
        else:
            lines.extend(f"    {name} = _o[{k}]._data" for k, name in enumerate(outs))

    # --- backward ---------------------------------------------------------------------------
    def backward(self):
        graph = self.graph
        grads_in = [f"go{k}" for k in range(len(_output_slots(graph)))]
        lines = [f"def backward(saved, {', '.join(grads_in)}):",
                 f"    {''.join(s + ', ' for s in self.saved)}_ = *saved, None"]
        receivers = set()
        for step in graph.steps:
            receivers.update(s for s in step.grads_to if s is not None)
            if step.kind == "island":
                receivers.update(r.slot for r in _walk((step.args, step.kwargs))
                                 if isinstance(r, Ref))
        for group in self.groups:
            receivers.update(group.grad_inputs)
        receivers.update(_output_slots(graph))
        for s in sorted(receivers):
            lines.append(f"    g{s} = None")
        for k, s in enumerate(_output_slots(graph)):
            lines.append(f"    if go{k} is not None: g{s} = go{k} if g{s} is None else g{s} + go{k}")
        done_groups = set()
        for i in range(len(graph.steps) - 1, -1, -1):
            step = graph.steps[i]
            if step.group is not None:
                if step.group not in done_groups:
                    done_groups.add(step.group)
                    self._group_backward(lines, self.groups[step.group])
            elif step.rule is not None:
                self._rule_backward(lines, step, i)
            elif step.kind == "island" and step.differentiable:
                self._island_backward(lines, step, i)
        inputs = graph.inputs + [s for s, _ in graph.captured]
        lines.append(f"    return ({''.join(f'g{s}, ' if s in receivers else 'None, ' for s in inputs)})")
        return self._compile("backward", lines)

    def _accumulate(self, lines, slot, value, node, index, indent="        "):
        meta = self.constant((self.graph.slots[slot].shape, self.graph.slots[slot].dtype))
        shape, dtype = self.graph.slots[slot].shape, self.graph.slots[slot].dtype
        lines.append(f"{indent}_x = {value}")
        lines.append(f"{indent}if _x is not None:")
        lines.append(f"{indent}    if _x.shape != {shape!r} or _x.dtype != {self.constant(dtype)}: "
                     f"_x = FIT({node}, {index}, _x, {meta}, False)")
        lines.append(f"{indent}    g{slot} = _x if g{slot} is None else g{slot} + _x")

    def _rule_backward(self, lines, step, i):
        out = step.outs[step.out_index]
        node = self.constant(RuleNode(step))
        saved = ", ".join(f"v{r.slot}" if isinstance(r, Ref) else (
            f"v{out}" if r is OUT else self.render(r, None)) for r in step.saved)
        lines.append(f"    if g{out} is not None:")
        lines.append(f"        _r = {self.constant(step.rule)}({node}, g{out}"
                     f"{', ' + saved if saved else ''})")
        for index, target in enumerate(step.grads_to):
            if target is not None and step.need[index]:
                self._accumulate(lines, target, f"_r[{index}] if len(_r) > {index} else None",
                                 node, index)

    def _island_backward(self, lines, step, i):
        grads = ", ".join(f"g{s}" for s in step.outs)
        lines.append(f"    if {' or '.join(f'g{s} is not None' for s in step.outs)}:")
        lines.append(f"        _r = ISLAND(n{i}, ({grads},))")
        node = self.constant(RuleNode(step))
        refs = [r.slot for r in _walk((step.args, step.kwargs)) if isinstance(r, Ref)]
        for k, slot in enumerate(refs):
            if step.need[k]:
                self._accumulate(lines, slot, f"_r[{k}]", node, k)

    def _group_backward(self, lines, group):
        if not group.backward:
            return
        kernel = self.constant(group.bwd_kernel)
        ins = [f"v{r.slot}" if isinstance(r, Ref) else self.constant(r) for r in group.inputs]
        ins += _kept(group)
        zero = [self.constant(np.zeros((), self.graph.slots[s].dtype)) for s in group.grad_outputs]
        ins += [f"(g{s} if g{s} is not None else {z})" for s, z in zip(group.grad_outputs, zero,
                                                                       strict=True)]
        lines.append(f"    if {' or '.join(f'g{s} is not None' for s in group.grad_outputs)}:")
        lines.append(f"        _r = {kernel}({', '.join(ins)})")
        node = self.constant(RuleNode(group.steps[0]))
        for k, slot in enumerate(group.grad_inputs):
            self._accumulate(lines, slot, f"_r[{k}]", node, k)

    def _compile(self, which, lines):
        source = "\n".join(lines) + "\n"
        self.sources[which] = source
        code = compile(source, f"<kit.compile {which} of {self.graph.name}>", "exec")
        exec(code, self.names)
        return self.names[which]


def _kept(group):
    """The names of the values a group's backward reads from its forward."""
    return [f"s{group.index}_{j}" if slot is None else f"v{slot}"
            for j, slot in enumerate(group.saved_from)]


def _output_slots(graph):
    seen = []
    for r in graph.outputs:
        if isinstance(r, Ref) and graph.slots[r.slot].requires_grad and r.slot not in seen:
            seen.append(r.slot)
    return seen


def _leaf(array):
    """A fresh leaf that requires grad (an island's input)."""
    return Tensor(array, requires_grad=True)


def _island_backward(state, grads):
    """Gradients of an island's inputs: the engine, from its outputs to its input leaves."""
    leaves, outs = state
    outs = outs if isinstance(outs, (tuple, list)) else (outs,)
    roots = [(o._grad_fn, o._nr) for o, g in zip(outs, grads, strict=True)
             if g is not None and isinstance(o, Tensor) and o._grad_fn is not None]
    given = [g for o, g in zip(outs, grads, strict=True)
             if g is not None and isinstance(o, Tensor) and o._grad_fn is not None]
    capture = {}
    for k, t in enumerate(leaves):
        if t._rg:
            capture.setdefault(t._leaf_edge(), k)
    if not roots or not capture:
        return [None] * len(leaves)
    found = run_backward(roots, given, retain_graph=True, capture=capture)
    result = []
    for t in leaves:
        slot = capture.get(t._leaf_edge()) if t._rg else None
        g = found[slot] if slot is not None else None
        result.append(None if g is None else g._data)
    return result
