"""The captured graph: slots (values), steps (calls), breaks, and what tools read from it.

A trace (kit/compiler/trace.py) turns one run of a function into a `Graph`. Every value the
function touches is a numbered slot: an input, a tensor it captured from outside (a parameter, a
closure), or the output of a step. A step is one call, written with `Ref(slot)` where a tensor
was passed, so that it can be replayed on other data:

- "op": a primitive of the registry (or a kit op with the same hook); with its gradient rule,
  what the rule needs (`saved`) and where each gradient goes (`grads_to`), when it was recorded;
- "create" / "random": a tensor made inside the function (`kit.zeros`, `kit.rand`): made anew on
  every call, so that random ops draw fresh numbers;
- "island": a call kit.compile cannot see into (a custom Function, an MXNet CustomOp): replayed
  through the engine, as one opaque node;
- "guard": Python read a value (`if t > 0:`, `t.item()`): the graph is split there, and a replay
  checks that the value is the one the trace saw.

Besides the steps, `effects`: what the function did after (or around) its forward that a replay
makes again, in order, once the forward has run: "backward" (`loss.backward()` of one scalar
loss, whose slot is an extra, hidden output) and "effect" (an optimiser's step or zero_grad, a
scheduler's step, called again as Python).

`Graph.describe()` is the plain-data view that tests, lessons and kit.viz read.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from kit._tensor import Tensor
from kit.compiler.guards import REASONS
from kit.engine import NO_EDGE, backward_name


class Ref:
    """A tensor argument of a step: the value in slot `slot`."""

    __slots__ = ("slot",)

    def __init__(self, slot):
        self.slot = slot

    def __repr__(self):
        return f"v{self.slot}"


OUT = "output"  # in Step.saved: the step's own output (a rule saving "output")


class Kept:
    """In Step.saved: value `index` of what the op's array form kept (a value the op made
    itself, as cross_entropy's probabilities), made again on every call."""

    __slots__ = ("index",)

    def __init__(self, index):
        self.index = index

    def __repr__(self):
        return f"Kept({self.index})"


@dataclass
class Slot:
    """One value: where it comes from ("input", "captured", "value") and its metadata."""

    index: int
    kind: str
    shape: tuple
    dtype: np.dtype
    device: str
    requires_grad: bool


@dataclass
class Step:
    """One call in the graph (see the module docstring for the kinds)."""

    kind: str
    name: str
    fn: object
    args: tuple
    kwargs: dict
    outs: tuple  # slots written
    where: tuple  # (file, line, function, source text) of the user's line
    expr: object = None  # the registry's elementwise form, when it reproduces this call
    array: object = None  # the registry's array form (an op that is not elementwise), likewise
    rule: object = None  # gradient rule (op steps recorded for backward)
    params: object = None  # the rule's node.params, with a Ref where it holds a value's array
    need: tuple = ()  # per rule output: does that input want a gradient
    saved: tuple = ()  # per saved value: Ref, OUT, Kept or a constant
    grads_to: tuple = ()  # per rule output: the slot its gradient goes to, or None
    out_index: int = 0  # which output the rule differentiates
    guard: object = None  # a guard's expected value
    group: int | None = None  # the fused group it belongs to
    sequence: bool = False  # the call returns a tuple or list (of the outputs)

    @property
    def differentiable(self):
        return self.rule is not None or (self.kind == "island" and any(self.need))

    def refs(self):
        """The slots this step reads (arguments; for a rule, also what it saved and the values
        its params hold)."""
        found = [r.slot for r in _walk((self.args, self.kwargs)) if isinstance(r, Ref)]
        found += [r.slot for r in self.saved if isinstance(r, Ref)]
        found += [r.slot for r in _walk(self.params) if isinstance(r, Ref)]
        return found

    def node_params(self):
        """True when the rule's params hold values of the call (a Ref): each call's backward
        then gives the rule a node of its own (RuleNode.with_params)."""
        return any(isinstance(r, Ref) for r in _walk(self.params))


@dataclass
class Break:
    """Where and why the trace could not stay one graph."""

    what: str  # a key of kit.compiler.guards.REASONS: "bool", "item", "print", "inplace"...
    where: tuple
    split: bool  # True: split with a guard; False: the function runs eagerly

    @property
    def reason(self):
        return REASONS[self.what][0]

    def message(self, fullgraph=False):
        """The explanation, as torch.compile words a graph break: what, where, what to do."""
        file, line, function, text = self.where
        found = (f"graph break ({self.what}): {self.reason}\n  at {file}:{line} in {function}\n"
                 f"    {text}\n")
        if not fullgraph:
            found += ("  kit.compile splits the graph here and guards on the value (another value "
                      "traces again)\n" if self.split else
                      "  kit.compile runs this function eagerly (it cannot be replayed from a "
                      "graph)\n")
        return found + f"  Fix: {REASONS[self.what][1]}"


@dataclass
class Graph:
    """What one trace captured."""

    name: str
    slots: list = field(default_factory=list)
    steps: list = field(default_factory=list)
    inputs: list = field(default_factory=list)  # slots of the explicit tensor inputs
    captured: list = field(default_factory=list)  # (slot, Tensor) read from outside
    outputs: list = field(default_factory=list)  # per output leaf: Ref or a constant
    rebuild: object = None  # output leaves -> the function's return structure
    breaks: list = field(default_factory=list)
    groups: list = field(default_factory=list)  # fused groups (kit/compiler/fusion.py)
    # calls a replay makes after the forward, in order: "backward" (loss.backward(), from the
    # slot in args) and "effect" (an optimiser's step or zero_grad, a scheduler's step)
    effects: list = field(default_factory=list)
    hidden: int = 0  # outputs at the end that the function does not return (a backward's loss)
    modules: dict = field(default_factory=dict)  # id -> (module, its training flag), as called

    @property
    def eager(self):
        """True when a break means this function must run eagerly."""
        return any(not b.split for b in self.breaks)

    def prune(self):
        """Drop steps nothing needs (dead code): what the outputs, guards and steps with side
        effects (random draws, opaque calls) do not read."""
        live = {r.slot for r in self.outputs if isinstance(r, Ref)}
        kept = []
        for step in reversed(self.steps):
            if step.kind in ("guard", "random", "island") or live.intersection(step.outs):
                kept.append(step)
                live.update(step.refs())
        self.steps = kept[::-1]

    def describe(self):
        """The graph as plain data: steps (op, kind, inputs, outputs, shapes, fused group,
        source line, whether it is elementwise, i.e. may fuse), breaks, fused groups and
        counts."""
        slots = self.slots
        steps = [{
            "index": i, "op": s.name, "kind": s.kind,
            "inputs": [r.slot for r in _walk((s.args, s.kwargs)) if isinstance(r, Ref)],
            "outputs": list(s.outs), "shape": [slots[o].shape for o in s.outs],
            "group": s.group, "line": s.where[1], "differentiable": s.differentiable,
            "elementwise": s.expr is not None,
        } for i, s in enumerate(self.steps)]
        groups = [g.describe() for g in self.groups]
        return {
            "name": self.name, "steps": steps, "groups": groups,
            "inputs": list(self.inputs), "captured": [s for s, _ in self.captured],
            "outputs": [r.slot if isinstance(r, Ref) else None
                        for r in self.outputs[:len(self.outputs) - self.hidden]],
            "slots": [(s.kind, s.shape, str(s.dtype)) for s in slots],
            "breaks": [{"what": b.what, "reason": b.reason, "line": b.where[1],
                        "split": b.split, "message": b.message()} for b in self.breaks],
            "effects": [{"kind": s.kind, "call": s.name, "line": s.where[1]}
                        for s in self.effects],
            "counts": self.counts(),
        }

    def counts(self):
        ops = [s for s in self.steps if s.kind != "guard"]
        return {
            "ops": len(ops), "breaks": len(self.breaks),
            "graphs": 1 + sum(1 for s in self.steps if s.kind == "guard"),
            "fused_groups": len(self.groups),
            "fused_ops": sum(len(g.members) for g in self.groups),
            "islands": sum(1 for s in ops if s.kind == "island"),
            "kernels": len(ops) - sum(len(g.members) - 1 for g in self.groups),
            "effects": len(self.effects),
        }


class RuleNode:
    """What a gradient rule reads from its node (`next_functions` for which inputs want a
    gradient, `params`, `name()`), made once per step when a graph is compiled: a replay makes
    no node per op."""

    __slots__ = ("next_functions", "params", "_op")

    def __init__(self, step):
        self.next_functions = tuple((None, 0) if n else NO_EDGE for n in step.need)
        self.params = step.params
        self._op = step.name

    def with_params(self, params):
        """This node with `params` (a call's own, where they hold its values)."""
        node = RuleNode.__new__(RuleNode)
        node.next_functions, node.params, node._op = self.next_functions, params, self._op
        return node

    @property
    def op(self):
        return self._op

    def name(self):
        return backward_name(self._op)


def _walk(tree):
    """The leaves of nested tuples, lists and dicts."""
    stack = [tree]
    while stack:
        v = stack.pop()
        if isinstance(v, (tuple, list)):
            stack.extend(reversed(v))
        elif isinstance(v, dict):
            stack.extend(reversed(list(v.values())))
        else:
            yield v


def substitute(tree, value_of):
    """`tree` with each Ref replaced by `value_of(slot)`."""
    if isinstance(tree, Ref):
        return value_of(tree.slot)
    if isinstance(tree, (tuple, list)):
        return type(tree)(substitute(v, value_of) for v in tree)
    if isinstance(tree, dict):
        return {k: substitute(v, value_of) for k, v in tree.items()}
    return tree


def interpret(graph, inputs, drawn):
    """Run the graph with Tensors, op by op, recording as eager code does: the reference a
    compiled call equals, and how a gradient of a gradient goes through a compiled function.
    `inputs` are the input and captured tensors; `drawn` {slot: array} the random numbers the
    compiled call drew (so the same ones are used)."""
    env = dict(zip(graph.inputs + [s for s, _ in graph.captured], inputs, strict=True))
    for step in graph.steps:
        if step.kind == "guard":
            continue
        if step.kind == "random":
            env[step.outs[0]] = Tensor(drawn[step.outs[0]])
            continue
        args = substitute(step.args, env.__getitem__)
        kwargs = substitute(step.kwargs, env.__getitem__)
        out = step.fn(*args, **kwargs)
        outs = out if isinstance(out, (tuple, list)) else (out,)
        env.update(zip(step.outs, outs, strict=True))
    return [env[r.slot] if isinstance(r, Ref) else r for r in graph.outputs]
