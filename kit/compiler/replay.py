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

from kit import _views, backend
from kit._tensor import Tensor, version_counter
from kit.compiler import kernels
from kit.compiler.codegen import Writer, output_slots
from kit.compiler.fusion import groups as find_groups
from kit.compiler.fusion import reductions
from kit.compiler.graph import Ref, interpret
from kit.engine import FREED, NO_EDGE, Node, _accumulate, _fit, _freed_message, run_backward
from kit.grad_mode import STATE, enable_grad, no_grad


class Program:
    """A graph compiled into a forward and a backward function."""

    def __init__(self, graph, config, fuse):
        self.graph = graph
        self.grad = any(s.differentiable for s in graph.steps)
        self.groups = []
        for step in graph.steps:  # (a graph compiled again, unfused, forgets its groups)
            step.group = None
        if fuse:
            used_later = _reader_positions(graph)
            found = find_groups(graph, used_later)
            reductions(graph, found, used_later)
            for group in found:
                if kernels.build(group, config) is None:
                    for step in group.members:
                        step.group = None
                else:
                    group.index = len(self.groups)
                    for step in group.members:
                        step.group = group.index
                    group.name_kernels()
                    self.groups.append(group)
        graph.groups = self.groups
        self.input_slots = graph.inputs + [s for s, _ in graph.captured]
        writer = Writer(graph, self.groups, _leaf, _island_backward)
        self.forward, self.saved_slots = writer.forward()
        self.backward = writer.backward() if self.grad else None
        self.source = writer.sources
        # (the same two functions calling the fused kernels without the profiler's checks)
        self.direct_forward = writer.direct("forward")
        self.direct_backward = writer.direct("backward") if self.grad else None
        self.generic = any(s.kind != "guard" and s.expr is None and s.array is None and
                           s.group is None for s in graph.steps)
        self.random = [s.outs[0] for s in graph.steps if s.kind == "random"]
        # the outputs the CompiledNode differentiates, and the inputs and outputs whose values
        # its backward reads (checked for in-place changes, as saved tensors are)
        self.grad_outputs = list(enumerate(output_slots(graph))) if self.grad else []
        self.grad_outputs = [(slot, k) for k, slot in self.grad_outputs]
        read = set(self.saved_slots)
        self.checked_inputs = [k for k, s in enumerate(self.input_slots) if s in read]
        self.checked_outputs = [k for s, k in self.grad_outputs if s in read]
        # worked out once, for every call: which inputs the node has an edge to, its outputs'
        # metadata, and what each output of the function is (see _outputs)
        self.wants = [graph.slots[s].requires_grad for s in self.input_slots]
        self.wanted = [k for k, want in enumerate(self.wants) if want]
        self.meta = tuple((graph.slots[s].shape, graph.slots[s].dtype)
                          for s, _ in self.grad_outputs)
        self.plan = _outputs(graph, self.input_slots, dict(self.grad_outputs))
        self.checked_output_slots = [self.grad_outputs[k][0] for k in self.checked_outputs]
        # the calls made after the forward (a backward, an optimiser's step...), and the index
        # among the node's outputs of the loss a backward starts from
        self.effects = graph.effects
        self.root_k = next((dict(self.grad_outputs).get(s.args[0].slot) for s in self.effects
                            if s.kind == "backward"), None)

    def call(self, tensors):
        """Run on `tensors` (inputs then captured); the function's outputs, as it returns them."""
        arrays = [t._data for t in tensors]
        if STATE.profiler is not None:
            outs, saved = self._profiled(STATE.profiler, arrays)
        elif self.generic:
            with no_grad():
                outs, saved = self.direct_forward(*arrays)
        else:
            outs, saved = self.direct_forward(*arrays)
        node = None
        if self.grad and STATE.enabled and self.grad_outputs:
            node = self._node(tensors, saved)
        values = []
        made = {}  # slot -> Tensor: a value returned twice is one Tensor
        for position, (kind, slot, k) in enumerate(self.plan):
            if kind == "constant":
                values.append(k)
            elif kind == "input":
                values.append(tensors[k])
            elif kind == "same":
                values.append(made[slot])
            else:
                array = outs[position]
                t = Tensor(array) if node is None or k is None else \
                    Tensor._from_node(array, node, k)
                if array.base is not None:
                    _views.mark(t, tensors, node is not None)
                made[slot] = t
                values.append(t)
        if node is not None and self.checked_outputs:
            node.out_vc = tuple(version_counter(
                made[slot] if slot in made else tensors[self.input_slots.index(slot)])
                for slot in self.checked_output_slots)
        if self.effects:
            self._effects(tensors, values, saved, node)
            if self.graph.hidden:
                values = values[:len(values) - self.graph.hidden]
        return self.graph.rebuild(values)

    def _effects(self, tensors, values, saved, node):
        """The calls the traced function made after its forward, in order: an optimiser's or a
        scheduler's (made again, as Python), and loss.backward(): the graph's own reverse
        schedule on arrays, its gradients accumulated into the leaves' .grad as the engine
        does. Where the engine would do more (hooks on a leaf, a captured tensor that is not a
        leaf, a profiler, anomaly mode, an opaque call inside) the engine runs it, from this
        call's node."""
        for step in self.effects:
            if step.kind == "effect":
                step.fn()
                continue
            root = values[-1]._data  # (the loss: the hidden output, last)
            one = backend.get_array_module(root).ones(root.shape, root.dtype)
            engine = STATE.profiler is not None or STATE.extras or self.generic
            for k in self.wanted:
                t = tensors[k]
                if t._grad_fn is not None or t._hooks is not None or t._base is not None:
                    engine = True
            if engine:
                run_backward([(node, self.root_k)], [one])
                continue
            grads = [None] * len(self.grad_outputs)
            grads[self.root_k] = one
            quiet = backend.quiet()  # (as the engine's reverse pass)
            try:
                found = self.direct_backward(saved, *grads)
            finally:
                backend.loud(quiet)
            node.release()  # (retain_graph=False: a second backward is PyTorch's error)
            owned = set()
            for k in self.wanted:
                g = found[k]
                if g is None:
                    continue
                t = tensors[k]
                if t._grad is None and g.base is None and id(g) not in owned:
                    owned.add(id(g))  # (_accumulate's first case, written out)
                    t._grad = Tensor(g)
                else:
                    _accumulate(t, g, False, owned)

    def _profiled(self, recorder, arrays):
        """The forward as one profiler event, "CompiledFunction" as PyTorch names it; the fused
        kernels (kit/compiler/kernels.py) and the ops run on Tensors are events inside it."""
        event = recorder.begin("CompiledFunction", "compiled", "forward", inputs=arrays)
        try:
            if self.generic:
                with no_grad():
                    outs, saved = self.forward(*arrays)
            else:
                outs, saved = self.forward(*arrays)
        except BaseException:
            recorder.end(event)
            raise
        recorder.end(event, outs, arrays)
        return outs, saved

    def _node(self, tensors, saved):
        edges = []
        for want, t in zip(self.wants, tensors, strict=True):
            if want:
                if t._base is not None:
                    _views.refresh(t)
                edges.append(t._edge or t._leaf_edge())
            else:
                edges.append(NO_EDGE)
        return CompiledNode(self, tuple(edges), saved, tensors, self.meta)

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


def _outputs(graph, input_slots, grad_index):
    """Per output of the function, (what, slot, k): what a call returns there, a "constant"
    (k), an "input" (its position k among the call's tensors), the "same" Tensor as an earlier
    output of that slot, or a Tensor "made" of the forward's array (k: the index of the node's
    output it is, None if it is not differentiable)."""
    plan, seen = [], set()
    for r in graph.outputs:
        if not isinstance(r, Ref):
            plan.append(("constant", None, r))
        elif r.slot in input_slots:
            plan.append(("input", r.slot, input_slots.index(r.slot)))
        elif r.slot in seen:
            plan.append(("same", r.slot, None))
        else:
            seen.add(r.slot)
            plan.append(("made", r.slot, grad_index.get(r.slot)))
    return plan


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
        self.in_versions = [t._vc[0] for t in tensors]
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
        backward = self.program.backward if STATE.profiler is not None else \
            self.program.direct_backward
        return backward(self.saved, *grads)

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
    edges = [t._acc if t._rg else None for t in leaves]  # made by the recording call
    capture = {}
    for k, edge in enumerate(edges):
        if edge is not None:
            capture.setdefault(edge, k)
    if not roots or not capture:
        return [None] * len(leaves)
    node = roots[0][0]
    if len(roots) == 1 and len(node.output_meta) == 1 and all(
            not e or e in capture for e in node.next_functions):
        # NOTE: one node straight onto the leaves (a primitive, a Function): its own step,
        # without the engine's set-up
        found = [None] * len(leaves)
        for e, g in zip(node.next_functions, node.apply(given, False), strict=False):
            if e and g is not None:
                k = capture[e]
                found[k] = _fit(node, k, g, e[0].output_meta[0], False) if found[k] is None \
                    else found[k] + g
        return found
    found = run_backward(roots, given, retain_graph=True, capture=capture)
    return [None if e is None or found[capture[e]] is None else found[capture[e]]._data
            for e in edges]
