"""Code generation for replay: a captured graph as the source of two flat Python functions.

The forward is one line per step (`v5 = E5(XP, v3, 2.0)` for an op with an array form, a kernel
call for a fused group, a call through Tensors for the rest) and returns the outputs and what the
backward reads. The backward is the reverse schedule, written once: each gradient rule called on
arrays (`_r = R7(N7, g8, v3)`), broadcasting undone where the shapes say so (the engine's own
`_fit`), gradients summed in local variables `g<slot>`. Constants and callables are names in the
functions' namespace (`K<n>`), so the source reads as the graph and can be printed in a lesson.
"""

from __future__ import annotations

import numpy as np

from kit import backend
from kit._tensor import Tensor
from kit.compiler.graph import OUT, Kept, Ref, RuleNode, _walk
from kit.compiler.guards import same_value
from kit.compiler.kernels import Kernel
from kit.engine import _fit
from kit.grad_mode import enable_grad
from kit.ops._registry import OPS


class GuardError(Exception):
    """A replay met a value or shape other than the trace's: use another graph."""


class Writer:
    """Writes the forward and backward source of a graph."""

    def __init__(self, graph, groups, leaf, island_backward):
        self.graph = graph
        self.groups = groups
        self.names = {"np": np, "T": Tensor, "TG": leaf, "SAME": same_value, "FAIL": GuardError,
                      "GRAD": enable_grad, "FIT": _fit, "ISLAND": island_backward,
                      "SUM": np.add.reduce}
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
            if isinstance(tree, list):
                return f"[{items}]"
            return f"({items},)" if tree else "()"
        if isinstance(tree, dict):
            items = ", ".join(f"{k!r}: {self.render(v, tensor)}" for k, v in tree.items())
            return "{" + items + "}"
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
                if group.reduce_step is not None:  # the kernel sums too: it makes the sum's value
                    targets = [f"v{group.reduce_step.outs[0]}"]
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
            if step.expr is not None or step.array is not None:
                xp = self.constant(np if graph.slots[step.outs[0]].device == "cpu" else
                                   backend.require_gpu("a compiled GPU function"))
                call = (f"{self.constant(step.expr or step.array)}({xp}, "
                        f"{self.call_args(step, lambda s: f'v{s}')})")
                lines.append(f"    {outs[0]} = {call}" if step.expr is not None else
                             f"    {outs[0]}, k{i} = {call}")
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
                self._unpack(lines, outs, step.sequence)
                if step.differentiable:
                    lines.append(f"    n{i} = (_i, _o)")
                    keep(f"n{i}")
            else:  # op without an array form, create, random: through Tensors
                lines.append(f"    _o = {fn}({self.call_args(step, lambda s: f'T(v{s})')})")
                self._unpack(lines, outs, step.sequence)
                for s in step.outs:
                    lines.append(f"    if v{s}.shape != {graph.slots[s].shape!r}: raise FAIL({i})")
                if step.kind == "random":
                    keep(outs[0])
            if step.rule is not None:
                for r in step.saved:
                    if isinstance(r, Ref) or r is OUT:
                        keep(f"v{r.slot}" if isinstance(r, Ref) else outs[step.out_index])
                    elif isinstance(r, Kept):
                        keep(f"k{i}")
                for r in _walk(step.params):
                    if isinstance(r, Ref):
                        keep(f"v{r.slot}")
        results = [f"v{r.slot}" if isinstance(r, Ref) else "None" for r in graph.outputs]
        lines.append(f"    return ({''.join(r + ', ' for r in results)}), "
                     f"({''.join(s + ', ' for s in saved)})")
        self.saved = saved
        slots = [int(s[1:]) if s.startswith("v") and s[1:].isdigit() else s for s in saved]
        return self._compile("forward", lines), slots

    @staticmethod
    def _unpack(lines, outs, sequence):
        if not sequence:
            lines.append(f"    {outs[0]} = _o._data")
        else:
            lines.extend(f"    {name} = _o[{k}]._data" for k, name in enumerate(outs))

    # --- backward ---------------------------------------------------------------------------
    def backward(self):
        graph = self.graph
        grads_in = [f"go{k}" for k in range(len(output_slots(graph)))]
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
        receivers.update(output_slots(graph))
        for s in sorted(receivers):
            lines.append(f"    g{s} = None")
        for k, s in enumerate(output_slots(graph)):
            lines.append(f"    if go{k} is not None:\n        g{s} = go{k} if g{s} is None else "
                         f"g{s} + go{k}")
        done_groups = set()
        for i in range(len(graph.steps) - 1, -1, -1):
            step = graph.steps[i]
            if step.group is not None and step is not self.groups[step.group].reduce_step:
                if step.group not in done_groups:
                    done_groups.add(step.group)
                    self._group_backward(lines, self.groups[step.group])
            elif step.rule is not None:
                self._rule_backward(lines, step, i)
            elif step.kind == "island" and step.differentiable:
                self._island_backward(lines, step, i)
        inputs = graph.inputs + [s for s, _ in graph.captured]
        results = "".join(f"g{s}, " if s in receivers else "None, " for s in inputs)
        lines.append(f"    return ({results})")
        return self._compile("backward", lines)

    def _accumulate(self, lines, slot, value, node, index, indent="        ", made=None):
        """Add `value`, the gradient of `slot` a rule or kernel made, into g<slot>; `made`:
        its (shape, dtype) when the graph says what it is (a kernel's output), else checked."""
        meta = self.constant((self.graph.slots[slot].shape, self.graph.slots[slot].dtype))
        shape, dtype = self.graph.slots[slot].shape, self.graph.slots[slot].dtype
        if made is not None and made[1] == dtype:
            fitted = _fitted(value, made[0], shape, self.graph.slots[slot].device == "cpu")
            if fitted is not None:
                lines.append(f"{indent}_x = {fitted}")
                lines.append(f"{indent}g{slot} = _x if g{slot} is None else g{slot} + _x")
                return
        lines.append(f"{indent}_x = {value}")
        lines.append(f"{indent}if _x is not None:")
        lines.append(f"{indent}    if _x.shape != {shape!r} or _x.dtype != {self.constant(dtype)}: "
                     f"_x = FIT({node}, {index}, _x, {meta}, False)")
        lines.append(f"{indent}    g{slot} = _x if g{slot} is None else g{slot} + _x")

    def _rule_backward(self, lines, step, i):
        if self._written_out(lines, step):
            return
        out = step.outs[step.out_index]
        node = self.constant(RuleNode(step))
        saved = ", ".join(f"v{r.slot}" if isinstance(r, Ref) else (
            f"v{out}" if r is OUT else f"k{i}[{r.index}]" if isinstance(r, Kept) else
            self.render(r, None)) for r in step.saved)
        lines.append(f"    if g{out} is not None:")
        if step.node_params():  # the rule reads this call's values from its node's params
            lines.append(f"        _n = {node}.with_params("
                         f"{self.render(step.params, lambda s: f'v{s}')})")
            node = "_n"
        lines.append(f"        _r = {self.constant(step.rule)}({node}, g{out}"
                     f"{', ' + saved if saved else ''})")
        for index, target in enumerate(step.grads_to):
            if target is not None and step.need[index]:
                self._accumulate(lines, target, f"_r[{index}] if len(_r) > {index} else None",
                                 node, index)

    def _written_out(self, lines, step):
        """The gradients of a product of two matrices or of an add, written out as the array
        operations their rules make (`g @ b.T`; `g`, summed over the leading axes for an input
        broadcast along them), with no call and no shape check: the graph's shapes say what
        they are. False (nothing written) for any other step, or other shapes or dtypes."""
        slots = self.graph.slots
        out = step.outs[step.out_index]
        g, (shape, dtype) = f"g{out}", (slots[out].shape, slots[out].dtype)
        wanted = [(k, t) for k, t in enumerate(step.grads_to) if t is not None and step.need[k]]
        if dtype.kind != "f" or any(slots[t].dtype != dtype for _, t in wanted):
            return False
        found = []
        if step.rule is OPS["matmul"].grad and step.params == (False, False):
            a, b = step.saved  # (each a Ref where the other operand wants a gradient)
            for k, target in wanted:
                other = b if k == 0 else a
                if not isinstance(other, Ref):
                    return False
                found.append((target, f"{g} @ v{other.slot}.T" if k == 0 else
                              f"v{other.slot}.T @ {g}"))
        elif step.rule is OPS["add"].grad:
            for _, target in wanted:
                fitted = _fitted(g, shape, slots[target].shape, slots[target].device == "cpu")
                if fitted is None:
                    return False
                found.append((target, fitted))
        else:
            return False
        lines.append(f"    if {g} is not None:")
        for target, value in found:
            lines.append(f"        _x = {value}")
            lines.append(f"        g{target} = _x if g{target} is None else g{target} + _x")
        return True

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
        zero = [self.constant(np.zeros(group.shape, self.graph.slots[s].dtype)
                              if group.device == "cpu" else 0.0) for s in group.grad_outputs]
        ins += [f"(g{s} if g{s} is not None else {z})" for s, z in zip(group.grad_outputs, zero,
                                                                       strict=True)]
        lines.append(f"    if {' or '.join(f'g{s} is not None' for s in group.grad_outputs)}:")
        lines.append(f"        _r = {kernel}({', '.join(ins)})")
        node = self.constant(RuleNode(group.steps[0]))
        for k, slot in enumerate(group.grad_inputs):  # (a kernel's outputs: the group's shape)
            self._accumulate(lines, slot, f"_r[{k}]", node, k,
                             made=(group.shape, group.backward[k].dtype))

    def direct(self, which):
        """`which` again, calling each fused kernel's `direct` function: what a replay runs while
        no profiler records the kernels' calls as events."""
        names = {k: v.direct if isinstance(v, Kernel) else v for k, v in self.names.items()}
        exec(compile(self.sources[which], f"<kit.compile {which} of {self.graph.name}>", "exec"),
             names)
        return names[which]

    def _compile(self, which, lines):
        source = "\n".join(lines) + "\n"
        self.sources[which] = source
        code = compile(source, f"<kit.compile {which} of {self.graph.name}>", "exec")
        exec(code, self.names)
        return self.names[which]


def _fitted(value, have, want, cpu):
    """Source for `value`, of shape `have`, brought to the shape `want` as the engine's _fit
    does for these two cases: unchanged, or summed over the leading axes it was broadcast
    along; None for any other case (the generated code calls _fit)."""
    lead = len(have) - len(want)
    if have == want:
        return value
    if lead > 0 and want and have[lead:] == want:
        # (NumPy's ndarray.sum is a Python function around this; CuPy's sum is its own)
        return f"SUM({value}, axis={tuple(range(lead))!r})" if cpu else \
            f"{value}.sum(axis={tuple(range(lead))!r})"
    return None


def _kept(group):
    """The names of the values a group's backward reads from its forward."""
    return [f"s{group.index}_{j}" if slot is None else f"v{slot}"
            for j, slot in enumerate(group.saved_from)]


def output_slots(graph):
    seen = []
    for r in graph.outputs:
        if isinstance(r, Ref) and graph.slots[r.slot].requires_grad and r.slot not in seen:
            seen.append(r.slot)
    return seen


