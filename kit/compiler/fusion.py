"""Fusion: runs of elementwise steps become one kernel, forward and backward.

A group is a maximal run of consecutive elementwise steps (each has the registry's expression
form, `op.expr`) of one output shape and device, at least two long. Its forward is the steps'
expression forms chained on symbolic values (kit/compiler/expr.py); its backward is their
gradient rules run on the same symbolic values, in reverse, exactly as the engine would run them
on arrays. A rule that reads the data to decide what to do cannot be fused: its step ends the run.

What a kernel reads and writes (one element each, per element of the output):
- forward: the group's inputs (values made before it, or captured) -> the values used after it,
  and, on the CPU, the transcendental values (exp, tanh, ...) its backward reads (a CPU computes
  them slowly, so keeping them is cheaper); everything else is recomputed in the backward, never
  stored. A GPU's kernels are limited by memory traffic, not arithmetic: there nothing is kept;
- backward: the group's inputs, those kept values and the gradient of each output -> the
  gradient of each input that wants one (broadcasting is undone after the kernel).

On a GPU, a group whose one output only feeds a sum right after it becomes one reduction kernel
(CuPy's ReductionKernel): the summed values are never written to memory.
"""

from __future__ import annotations

import numpy as np

from kit.compiler.expr import TRANSCENDENTAL, Expr, NotFusableError, topological
from kit.compiler.graph import OUT, Ref, RuleNode, substitute

MIN_STEPS = 2
MAX_STEPS = 48  # a longer run is cut: kernel source (and numba's compile time) stay small
MAX_ARGS = 48  # arrays a kernel reads and writes (NumPy's ufuncs take at most 64)


class Group:
    """A fused run of steps and the symbolic forms of its two kernels."""

    def __init__(self, index, steps, slots):
        self.index = index
        self.steps = steps
        self.shape = slots[steps[0].outs[0]].shape
        self.device = slots[steps[0].outs[0]].device
        self.inputs = []  # (Ref or a constant array) per kernel input, in order
        self.input_shapes = []
        self.outputs = []  # slots the forward kernel writes
        self.saved = []  # Exprs the backward reads from the forward
        self.saved_from = []  # per saved Expr: the output slot that holds it, or None
        self.forward = []  # Expr per forward kernel output (outputs, then saved)
        self.grad_inputs = []  # slots of the inputs the backward sends a gradient to
        self.grad_outputs = []  # slots of the outputs whose gradient the backward reads
        self.backward = []  # Expr per backward output
        self.fwd_kernel = self.bwd_kernel = None  # made by kit/compiler/kernels.py
        self.backend = None
        self.reduce_step = None  # a sum the forward kernel does too (GPU): see `reductions`
        self.reduce_axes = None

    @property
    def members(self):
        """The steps the group's kernels do: its elementwise run, and a sum they end with."""
        return self.steps + ([self.reduce_step] if self.reduce_step is not None else [])

    def name_kernels(self):
        """Name the kernels as Inductor names its own (`fused_<its ops, sorted>_<index>`): the
        name a profiler shows for each call."""
        name = f"fused_{'_'.join(sorted({s.name for s in self.members}))}_{self.index}"
        self.fwd_kernel.name = name
        if self.bwd_kernel is not None:
            self.bwd_kernel.name = f"{name}_backward"

    def describe(self):
        from kit.compiler.kernels import traffic

        return {
            "index": self.index, "ops": [s.name for s in self.members], "shape": self.shape,
            "kernel": getattr(self.fwd_kernel, "name", None),
            "inputs": [r.slot if isinstance(r, Ref) else "constant" for r in self.inputs],
            "outputs": list(self.outputs),
            "kept": sum(1 for slot in self.saved_from if slot is None),
            "grad_inputs": list(self.grad_inputs), "backend": self.backend,
            "bytes_per_element": traffic(self),
            "source": getattr(self.fwd_kernel, "source", None),
            "backward_source": getattr(self.bwd_kernel, "source", None),
        }


def fusable(step):
    return step.kind == "op" and step.expr is not None and len(step.outs) == 1


def groups(graph, used_later):
    """The fused groups of `graph` (steps are marked with their group's index).
    `used_later(slot, position)` says whether a slot is read after step `position` or kept for a
    backward outside the group (so the group must write it)."""
    found, run = [], []
    slots = graph.slots

    def close(last):
        pending = [(list(run), last)]
        while pending:
            steps, end = pending.pop()
            if len(steps) < MIN_STEPS:
                continue
            group = Group(len(found), steps, slots)
            try:
                _build(group, graph, lambda slot, end=end: used_later(slot, end))
            except NotFusableError:
                continue
            if _arguments(group) > MAX_ARGS:  # too many arrays for one kernel: halves
                half = len(steps) // 2
                pending += [(steps[half:], end), (steps[:half], end - len(steps) + half)]
                continue
            for step in group.steps:
                step.group = group.index
            found.append(group)
        run.clear()

    for position, step in enumerate(graph.steps):
        here = (slots[step.outs[0]].shape, slots[step.outs[0]].device) if step.outs else None
        if run and here != (slots[run[0].outs[0]].shape, slots[run[0].outs[0]].device):
            close(position - 1)
        if len(run) == MAX_STEPS:
            close(position - 1)
        if fusable(step) and _rule_fusable(step, slots):
            run.append(step)
        else:
            close(position - 1)
    close(len(graph.steps) - 1)
    return found


def _arguments(group):
    """The most arrays one of the group's kernels reads and writes."""
    forward = len(group.inputs) + len(group.forward)
    backward = len(group.inputs) + len(group.saved) + len(group.grad_outputs) + \
        len(group.backward)
    return max(forward, backward)


def _rule_fusable(step, slots):
    """A step whose gradient rule can be written per element (tried on symbolic values)."""
    if step.rule is None:
        return True

    def symbol(slot):
        return Expr.input(0, slots[slot].dtype, slots[slot].shape)

    try:
        out = step.expr(np, *substitute(step.args, symbol))
        saved = [out if r is OUT else (symbol(r.slot) if isinstance(r, Ref) else r)
                 for r in step.saved]
        step.rule(RuleNode(step), out, *saved)
    except Exception:  # noqa: BLE001 - any failure of a rule on symbols means "not per element"
        return False
    return True


def _build(group, graph, used_later):
    slots = graph.slots
    values = {}  # slot -> Expr
    inputs = group.inputs

    def value(slot):
        found = values.get(slot)
        if found is None:
            found = values[slot] = Expr.input(len(inputs), slots[slot].dtype, group.shape)
            inputs.append(Ref(slot))
            group.input_shapes.append(slots[slot].shape)
        return found

    def operand(v):
        if isinstance(v, np.ndarray):  # a constant array argument: a kernel input too
            inputs.append(v)
            group.input_shapes.append(v.shape)
            return Expr.input(len(inputs) - 1, v.dtype, group.shape)
        return v

    for step in group.steps:
        args = [operand(a) for a in substitute(step.args, value)]
        out = step.expr(np, *args)
        if not isinstance(out, Expr) or out.dtype != slots[step.outs[0]].dtype:
            raise NotFusableError(f"{step.name} does not give its traced dtype symbolically")
        values[step.outs[0]] = out
    produced = [s.outs[0] for s in group.steps]
    group.outputs = [s for s in produced if used_later(s)]
    _differentiate(group, values, produced, slots)
    group.forward = [values[s] for s in group.outputs] + [
        e for e, slot in zip(group.saved, group.saved_from, strict=True) if slot is None]


def _differentiate(group, values, produced, slots):
    """The backward kernel's outputs: each rule, in reverse, on the symbolic values."""
    steps = [s for s in group.steps if s.rule is not None]
    if not steps:
        return
    n_in = len(group.inputs)
    grad_of_output = {s: Expr.input(-1, values[s].dtype, group.shape) for s in group.outputs
                      if slots[s].requires_grad}
    grads = dict(grad_of_output)
    for step in reversed(steps):
        g = grads.get(step.outs[0])
        if g is None:
            continue
        saved = [values[step.outs[0]] if r is OUT else (values[r.slot] if isinstance(r, Ref)
                                                        else r) for r in step.saved]
        results = step.rule(RuleNode(step), g, *saved)
        for gi, target in zip(results, step.grads_to, strict=False):
            if gi is None or target is None:
                continue
            if not isinstance(gi, Expr):
                raise NotFusableError(f"the gradient rule of {step.name} gives a constant")
            have = grads.get(target)
            grads[target] = gi if have is None else have + gi
    wanted = [(r.slot, grads[r.slot]) for r in group.inputs if isinstance(r, Ref) and
              r.slot in grads and r.slot not in produced and slots[r.slot].requires_grad]
    roots = [g.astype(values[slot].dtype) for slot, g in wanted]
    forward_ids = {e.id for e in topological([values[s] for s in produced])}
    keep = _kept(roots, forward_ids) if group.device == "cpu" else []
    written = {values[s].id: s for s in group.outputs}
    group.saved = keep
    # a kept value the forward writes anyway (an output) is read from there, not written twice
    group.saved_from = [written.get(e.id) for e in keep]
    renamed = {e.id: Expr.input(n_in + i, e.dtype, group.shape) for i, e in enumerate(keep)}
    for i, g in enumerate(grad_of_output.values()):
        g.value = n_in + len(keep) + i
    group.grad_outputs = list(grad_of_output)
    group.grad_inputs = [slot for slot, _ in wanted]
    group.backward = _replace(roots, renamed)


def _kept(roots, forward_ids):
    """The transcendental forward values the backward reads (not those only under another)."""
    kept, seen, stack = [], set(), list(reversed(roots))
    while stack:
        e = stack.pop()
        if not isinstance(e, Expr) or e.id in seen:
            continue
        seen.add(e.id)
        if e.id in forward_ids and e.op in TRANSCENDENTAL:
            kept.append(e)
            continue
        stack.extend(reversed(e.args))
    return kept


def _replace(roots, renamed):
    """The expressions `roots` with the Exprs in `renamed` (by id) replaced."""
    done = dict(renamed)
    for e in topological(roots):
        if e.id in done or e.op == "input":
            continue
        args = tuple(done.get(a.id, a) if isinstance(a, Expr) else a for a in e.args)
        same = all(a is b for a, b in zip(args, e.args, strict=True))
        done[e.id] = e if same else Expr.make(e.op, args, cast=e.dtype if e.op == "cast" else None)
    return [done.get(r.id, r) for r in roots]


def reductions(graph, groups, used_later):
    """Mark each GPU group whose one output feeds only a `sum` right after the group: that sum
    is done by the group's forward kernel (a reduction kernel)."""
    position = {id(step): i for i, step in enumerate(graph.steps)}
    for group in groups:
        after = position[id(group.steps[-1])] + 1
        if group.device != "gpu" or len(group.outputs) != 1 or group.saved or \
                after >= len(graph.steps):
            continue
        step, (out,) = graph.steps[after], group.outputs
        args = step.args
        if step.kind != "op" or step.name != "sum" or not isinstance(args[0], Ref) or \
                args[0].slot != out or used_later(out, after):
            continue
        ndim = len(group.shape)
        axis = args[1] if len(args) > 1 else None
        axes = tuple(range(ndim)) if axis is None else tuple(
            a % ndim for a in ((axis,) if isinstance(axis, int) else axis))
        group.reduce_step, group.reduce_axes = step, axes
        step.group = group.index
