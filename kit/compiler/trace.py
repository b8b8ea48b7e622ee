"""Tracing: run a function once on real tensors and write down every primitive it calls.

The hook is the one every primitive already has (kit/ops/_registry.py): its first statement is
`if VMAP.depth: return VMAP.dispatch(name, fn, *args)`. While a trace runs, `TraceMode` (an entry
on the thread's stack of modes, kit/_modes.py) raises `depth` and points this thread's `dispatch`
at the tracer, which runs the primitive as usual (so the trace computes the eager results, with
their graph) and records the call as a `Step` (kit/compiler/graph.py). Eager code pays nothing:
the switch it reads is the one it read before.

The other places a function can do something a graph must know about tell the tracer through
`STATE.tracing`: Function.apply (an opaque node), tensor creation (`kit.zeros`, `kit.rand`),
reading a value into Python (`bool`, `item`, `print`), in-place changes, backward. Each is a step,
a guard (the graph splits there) or a break that makes the function run eagerly.
"""

from __future__ import annotations

import linecache
import threading

import numpy as np

from kit import _views, backend
from kit._modes import _THREAD, Mode, _Switches, leave
from kit._tensor import Tensor, bump_version
from kit.compiler.functions import elementwise_form
from kit.compiler.graph import OUT, Break, Graph, Kept, Ref, Slot, Step, _walk, substitute
from kit.compiler.guards import CompileError, user_line
from kit.compiler.rng import Watched
from kit.engine import Node, SavedOutput
from kit.func._batched import BatchedTensor
from kit.func._vmap import tree_flatten
from kit.grad_mode import STATE
from kit.ops._registry import OPS

RANDOM = frozenset({"rand", "randn", "randint", "rand_like", "randn_like"})
GUARDED = {  # what Python read -> how to read it from the array
    "bool": bool, "item": lambda a: a.item(), "tolist": lambda a: a.tolist(),
    "index": lambda a: int(a.item()),
}


class _Hooks(Mode):
    """A mode that points this thread's primitive hooks elsewhere. Leaving it puts kit.func's
    shared hooks back as they were: shared, not a copy owned by this thread (so that setting
    them for every thread, kit._modes.install, still reaches it)."""

    __slots__ = ()

    def __exit__(self, *exc):
        leave(self)
        own = vars(_THREAD)
        for name in ("dispatch", "function"):
            if name in own and own[name] is getattr(_Switches, name):
                del own[name]
        return False


class TraceMode(_Hooks):
    """Primitives, Function.apply and the tensor hooks report to `tracer` in the block."""

    __slots__ = ("tracer",)

    def __init__(self, tracer):
        self.tracer = tracer

    def switches(self, state):
        tracer = self.tracer
        tracer.outer = {"depth": state.depth, "transforms": state.transforms,
                        "dispatch": state.dispatch, "function": state.function, "tracing": None}
        tracer.level = state.transforms + 1
        return {"depth": state.depth + 1, "transforms": tracer.level,
                "dispatch": tracer.dispatch, "function": tracer.function, "tracing": tracer}


class Paused(_Hooks):
    """The block runs as it would without the trace (a primitive's own body, a Function)."""

    __slots__ = ("tracer",)

    def __init__(self, tracer):
        self.tracer = tracer

    def switches(self, state):
        return self.tracer.outer


class Tracer:
    """Records one run of a function as a Graph."""

    def __init__(self, name, fullgraph):
        self.graph = Graph(name)
        self.fullgraph = fullgraph
        self.tensors = []  # per slot, the tensor seen at trace time (kept alive: ids stay valid)
        self.aliases = []  # other Tensors of a slot's array (detach, .data), kept alive likewise
        self.by_id, self.by_array, self.by_edge = {}, {}, {}
        self.saved_slots = set()  # slots some recorded step keeps for backward
        self.outer = None
        self.level = 0
        self.drawing = False  # a traced random op is drawing: the watched generators allow it
        self.frozen = False  # a backward or an optimiser step ran: no op may follow it
        self.thread = threading.get_ident()
        self.definition = user_line()  # the traced function's `def` line, when it has one

    # --- the run ----------------------------------------------------------------------------
    def run(self, fn, args, kwargs, leaves):
        """fn(*args, **kwargs) traced; `leaves` are its tensor arguments. Returns its result."""
        for t in leaves:
            if id(t) not in self.by_id:
                self.graph.inputs.append(self._register(t, "input"))
        code = getattr(fn, "__code__", None) or getattr(getattr(fn, "forward", None),
                                                        "__code__", None)
        if code is not None:
            self.definition = (code.co_filename, code.co_firstlineno, code.co_name,
                               linecache.getline(code.co_filename, code.co_firstlineno).strip())
        with Watched(self), TraceMode(self):
            return fn(*args, **kwargs)

    def finish(self, result):
        """The Graph, with the function's result as its outputs."""
        leaves, rebuild = tree_flatten(result)
        graph = self.graph
        for leaf in leaves:
            if isinstance(leaf, Tensor):
                graph.outputs.append(Ref(self._slot_of(leaf)))
            elif leaf is None or isinstance(leaf, (bool, int, float, str)):
                graph.outputs.append(leaf)
            else:
                self.unsplittable("output", self.definition)
                graph.outputs.append(leaf)
        graph.rebuild = rebuild
        for step in graph.effects:  # the loss a backward starts from: an output of the graph's
            if step.kind == "backward":  # own, not returned (its reverse schedule starts there)
                graph.outputs.append(step.args[0])
                graph.hidden += 1
        graph.prune()
        return graph

    # --- hooks -------------------------------------------------------------------------------
    def dispatch(self, op, fn, *args):
        """A primitive called in the traced function (the registry's hook)."""
        if STATE.transforms != self.level or _batched(args):
            self.unsplittable("transform", user_line())
            return self.outer["dispatch"](op, fn, *args)
        if self.frozen:
            self.unsplittable("after_backward", user_line())
        with Paused(self):
            out = fn(*args)
        self._record("op", op, fn, args, {}, out)
        return out

    def function(self, cls, args, kwargs):
        """Function.apply in the traced function: an opaque node (an island), or, for one that
        declares `elementwise = True`, an op with an expression form (kit/compiler/functions.py)."""
        if STATE.transforms != self.level:
            self.unsplittable("transform", user_line())
            return self.outer["function"](cls, args, kwargs)
        if self.frozen:
            self.unsplittable("after_backward", user_line())
        form = None
        with Paused(self):
            out = cls.apply(*args, **kwargs)
            if getattr(cls, "elementwise", False):
                form = elementwise_form(cls, args, kwargs, out, lambda n: Tracer(n, True))
        self._record("island", cls.__name__, cls.apply, args, kwargs, out)
        if form is not None and self.graph.steps and self.graph.steps[-1].fn == cls.apply:
            inputs, expr, rule = form
            step = self.graph.steps[-1]
            step.kind, step.args, step.kwargs, step.expr = "op", self._template(inputs), {}, expr
            if out._rg:
                step.rule, step.saved = rule, step.args
                step.grads_to = tuple(r.slot if isinstance(r, Ref) else None for r in step.args)
                step.need = tuple(s is not None and self.graph.slots[s].requires_grad
                                  for s in step.grads_to)
        return out

    def create(self, name, fn, args, kwargs):
        """A tensor made in the traced function: made again on every call."""
        if kwargs.get("requires_grad"):
            self.unsplittable("leaf", user_line())
        if self.frozen:
            self.unsplittable("after_backward", user_line())
        with Paused(self):
            self.drawing = name in RANDOM
            try:
                out = fn(*args, **kwargs)
            finally:
                self.drawing = False
        self._record("random" if name in RANDOM else "create", name, fn, args, kwargs, out)
        return out

    def observe(self, t, what):
        """Python reads tensor `t` (`what`: a key of REASONS). A value read into Python becomes a
        guard; anything else makes the function run eagerly."""
        where = user_line()
        if self.frozen and what != "backward":
            self.unsplittable("after_backward", where)
            return
        if what not in GUARDED or isinstance(t, BatchedTensor):
            self.unsplittable(what, where)
            return
        self._refuse(what, where)
        value = GUARDED[what](t._data)
        self.graph.breaks.append(Break(what, where, True))
        self.graph.steps.append(Step("guard", what, GUARDED[what], (Ref(self._slot_of(t)),), {},
                                     (), where, guard=value))

    def inplace(self, t, op, other, args, kwargs):
        """`t.add_(y)` and the like: on a value the function made (and nothing else refers to),
        recorded as the out-of-place op with `t` now naming the result; True if so. Otherwise a
        break, and the caller changes `t` in place as eager code does."""
        slot = self.by_id.get(id(t))
        if self.frozen:
            self.unsplittable("after_backward", user_line())
            return False
        if slot is None or self.graph.slots[slot].kind != "value" or t._base is not None or \
                slot in self.saved_slots or self._has_views(t):
            self.unsplittable("inplace", user_line())
            return False
        result = op(t, other, *args, **kwargs)
        if result.shape != t.shape:
            from kit._inplace import _shape_error

            raise _shape_error(getattr(op, "__name__", "inplace"), t, result.shape)
        if result.dtype != t.dtype:
            result = result.to(t.dtype)
        t._data = result._data
        t._rg, t._grad_fn, t._nr, t._edge = result._rg, result._grad_fn, result._nr, result._edge
        bump_version(t)
        self.by_id[id(t)] = self.by_id[id(result)]
        return True

    def backward(self, outputs, gradient, retain_graph, create_graph, inputs):
        """`loss.backward()` in the traced function. One scalar loss the trace computed, with
        nothing asked of the pass that a replay could not repeat, is recorded (a "backward"
        effect: a replay runs the graph's own reverse schedule and accumulates into the leaves'
        .grad, as the engine does) and run now; True if so. Otherwise a break (the caller runs
        it eagerly). Nothing may be computed after it."""
        where = user_line()
        root = outputs[0] if len(outputs) == 1 else None
        slot = self.by_id.get(id(root)) if isinstance(root, Tensor) else None
        if self.frozen or slot is None or self.graph.slots[slot].kind != "value" or \
                gradient is not None or retain_graph or create_graph or inputs is not None or \
                root._data.size != 1 or not root._rg or STATE.extras:
            self.unsplittable("backward", where)
            return False
        self.graph.effects.append(Step("backward", "backward", None, (Ref(slot),), {}, (),
                                       where))
        self.frozen = True
        with Paused(self):
            from kit.autograd import backward

            backward(root)
        return True

    def effect(self, kind, call, changes_parameters, args, kwargs):
        """An optimiser's step or zero_grad, or a scheduler's step, in the traced function:
        recorded as a call the replay makes again, in order after the backward (it touches
        .grad, learning rates, and with `changes_parameters` the parameters: then nothing may
        be computed after it). Arguments other than flags (a closure, a tensor, a metric: a
        replay would pass the traced ones again), or a value returned, make the function run
        eagerly."""
        where = user_line()
        refused = any(a is not None and not isinstance(a, bool)
                      for a in (*args, *kwargs.values()))
        if refused:
            self.unsplittable("effect", where)
        with Paused(self):  # (the function runs eagerly if refused: nothing to record inside)
            result = call()
        if refused:
            return result
        if result is not None:
            self.unsplittable("effect", where)
            return result
        self.graph.effects.append(Step("effect", kind, call, (), {}, (), where))
        self.frozen = self.frozen or changes_parameters
        return None

    def module(self, module):
        """A module (kit.nn, kit.torch.nn) called in the traced function: what it computes can
        depend on its training flag (dropout, batch norm), and the graph captured its parameters
        and buffers, so the graph is guarded on the flag and on those tensors being the same
        objects (one assigned anew, `model.weight = Parameter(...)`, traces again)."""
        self.graph.modules.setdefault(id(module), (
            module, module.training, tuple(module._parameters.values()),
            tuple(module._buffers.values())))

    def unsplittable(self, what, where):
        """A break that cannot be a guard: the function will run eagerly."""
        self._refuse(what, where)
        if not any(b.what == what and b.where == where for b in self.graph.breaks):
            self.graph.breaks.append(Break(what, where, False))

    def _refuse(self, what, where):
        if self.fullgraph:
            raise CompileError(
                f"kit.compile(fullgraph=True) of {self.graph.name} refuses a "
                f"{Break(what, where, what in GUARDED).message(fullgraph=True)} (or compile "
                f"without fullgraph=True)")

    # --- recording ---------------------------------------------------------------------------
    def _record(self, kind, name, fn, args, kwargs, out):
        outs = out if isinstance(out, (tuple, list)) else (out,)
        if not all(isinstance(t, Tensor) for t in outs):
            self.unsplittable("output", user_line())
            return
        if all(id(t) in self.by_id for t in outs) and kind in ("op", "create"):
            return  # an input given back (x.to(its own device)): nothing to compute
        template = self._template(args)
        kw_template = self._template(kwargs)
        slots = tuple(self._register(t, "value") for t in outs)
        step = Step(kind, name, fn, template, kw_template, slots, user_line(),
                    sequence=isinstance(out, (tuple, list)))
        if kind == "island":
            self._island(step)
        elif kind == "op":
            kept = self._expression(step, out)
            self._differentiate(step, outs, kept)
        self.graph.steps.append(step)

    def _island(self, step):
        """A call replayed through the engine: which of its tensor arguments want a gradient."""
        step.kind = "island"
        step.expr = step.array = None
        step.need = tuple(self.graph.slots[r.slot].requires_grad
                          for r in _walk((step.args, step.kwargs)) if isinstance(r, Ref))
        self.saved_slots.update(step.refs())

    def _differentiate(self, step, outs, kept):
        """Fill in the gradient rule from the node the op recorded (an op built on another, as
        transpose on permute, records that one's node: its rule serves), or make the step an
        island when the node keeps something only this run had (an index computed inside the
        op, unless the op's array form makes it again: `kept`) or sends gradients to nodes made
        inside the op."""
        nodes = [(i, t._grad_fn) for i, t in enumerate(outs) if t._grad_fn is not None]
        if not nodes:
            return
        index, node = nodes[0]
        grads_to = tuple(self.by_edge.get(e) if e else None for e in node.next_functions)
        saved = _made_again(tuple(self._saved_ref(v, step) for v in node.saved), node.saved,
                            kept)
        params = self._template_arrays(node.params)
        if (len(nodes) > 1 or node.kind != "builtin" or type(node).apply is not Node.apply
                or node.rule is None or
                any(e and s is None for e, s in zip(node.next_functions, grads_to, strict=True))
                or saved is None or params is _UNKNOWN):
            self._island(step)
            return
        step.rule, step.params, step.out_index = node.rule, params, index
        step.need = tuple(bool(e) for e in node.next_functions)
        step.saved, step.grads_to = saved, grads_to
        self.saved_slots.update(r.slot for r in saved if isinstance(r, Ref))
        self.saved_slots.update(r.slot for r in _walk(params) if isinstance(r, Ref))
        if any(v is OUT for v in saved):  # a rule that reads the op's output (exp, tanh...)
            self.saved_slots.add(step.outs[index])

    def _saved_ref(self, v, step):
        if type(v) is SavedOutput:
            return OUT if v.index == 0 else _UNKNOWN
        if isinstance(v, np.generic):
            return v
        if isinstance(v, Tensor) or hasattr(v, "__array_interface__") or \
                backend.device_of(v) == "gpu":
            data = v._data if isinstance(v, Tensor) else v
            slot = self.by_id.get(id(v)) if isinstance(v, Tensor) else None
            slot = self.by_array.get(id(data)) if slot is None else slot
            if slot is not None:
                return Ref(slot)
            # a constant the op made from an argument (a NumPy operand, pair() in _record.py)
            for c in _walk((step.args, step.kwargs)):
                if isinstance(c, np.ndarray) and c.shape == data.shape and \
                        backend.device_of(data) == "cpu" and np.array_equal(c, data):
                    return data
            return _UNKNOWN
        return v

    def _template_arrays(self, params):
        """A node's params with each array of a traced value as a Ref to its slot (a call's
        own value: cross_entropy's class indices); _UNKNOWN if they hold any other Tensor or
        array the trace knows (one made from a traced value inside the op)."""
        if isinstance(params, Tensor):
            return _UNKNOWN
        if isinstance(params, (tuple, list)):
            found = [self._template_arrays(v) for v in params]
            return _UNKNOWN if any(v is _UNKNOWN for v in found) else type(params)(found)
        slot = self.by_array.get(id(params)) if hasattr(params, "shape") else None
        if slot is not None:
            return Ref(slot) if self.tensors[slot]._data is params else _UNKNOWN
        if isinstance(params, dict) and any(isinstance(v, Tensor) or id(v) in self.by_array
                                            for v in _walk(params)):
            return _UNKNOWN
        return params

    def _expression(self, step, out):
        """Use the registry's elementwise form (`expr`) when it gives exactly this call's
        result: one dtype throughout (no promotion), same device; or its array form (`array`,
        an op that is not elementwise), floating arguments of one dtype. Returns what the array
        form kept (None without one)."""
        op = OPS.get(step.name)
        form = op and (op.expr or op.array)
        if form is None or not isinstance(out, Tensor):
            return None
        arrays = substitute(step.args, lambda s: self.tensors[s]._data)
        typed = [a for a in arrays if hasattr(a, "dtype")]
        dtypes = {a.dtype for a in typed if a.dtype.kind != "b" and (
            op.expr is not None or a.dtype.kind == "f")}
        devices = {backend.device_of(a) for a in typed}
        floating = out.dtype.kind == "f" or all(d.kind == "f" for d in dtypes)
        if len(dtypes) > 1 or len(devices) != 1 or not floating or op.expr is not None and any(
                not hasattr(a, "dtype") and a is not None and type(a) not in (int, float)
                for a in arrays):
            return None
        xp = backend.get_array_module(out._data)
        try:
            with np.errstate(all="ignore"):
                value = form(xp, *arrays)
        except (TypeError, ValueError):
            return None
        kept = ()
        if op.expr is None:
            value, kept = value
        if value.dtype == out.dtype and value.shape == out.shape and bool(
                xp.array_equal(value, out._data, equal_nan=out.dtype.kind == "f")):
            if op.expr is not None:
                step.expr = form
            else:
                step.array = form
            return kept
        return None

    # --- slots ---------------------------------------------------------------------------------
    def _register(self, t, kind):
        if t._base is not None:
            _views.refresh(t)
        slot = len(self.graph.slots)
        self.graph.slots.append(Slot(slot, kind, t._data.shape, t._data.dtype,
                                     backend.device_of(t._data), bool(t._rg)))
        self.tensors.append(t)
        self.by_id[id(t)] = slot
        self.by_array[id(t._data)] = slot
        edge = t._edge if t._edge is not None else (t._leaf_edge() if t._rg else None)
        if edge:
            self.by_edge[edge] = slot
        return slot

    def _slot_of(self, t):
        slot = self.by_id.get(id(t))
        if slot is not None:
            return slot
        slot = self.by_array.get(id(t._data))
        if slot is not None:  # the same array in another Tensor (detach, .data): that value
            self.by_id[id(t)] = slot
            self.aliases.append(t)  # kept alive, so its id stays its own
            return slot
        if t._grad_fn is not None and self._derived(t):
            self.unsplittable("untraced", user_line())
        if self.frozen:  # (first seen after the backward or the step: perhaps made by them)
            self.unsplittable("after_backward", user_line())
        slot = self._register(t, "captured")
        self.graph.captured.append((slot, t))
        return slot

    def _derived(self, t):
        """True if `t`'s history reaches a value of the trace (it was computed from traced
        values by something the trace did not see)."""
        stack, seen = [t._grad_fn], set()
        while stack and len(seen) < 10_000:
            node = stack.pop()
            for edge in node.next_functions:
                if edge and edge in self.by_edge:
                    return True
                if edge and id(edge[0]) not in seen:
                    seen.add(id(edge[0]))
                    stack.append(edge[0])
        return False

    def _template(self, tree):
        """`tree` (a call's arguments) with each Tensor replaced by a Ref to its slot."""
        if isinstance(tree, Tensor):
            return Ref(self._slot_of(tree))
        if isinstance(tree, (tuple, list)):
            return type(tree)(self._template(v) for v in tree)
        if isinstance(tree, dict):
            return {k: self._template(v) for k, v in tree.items()}
        return tree

    def _has_views(self, t):
        """True if another tensor of the trace shares `t`'s memory (a view of it)."""
        owner = _views._owner(t._data)
        return any(other is not t and other._data is not t._data and
                   _views._owner(other._data) is owner for other in self.tensors + self.aliases)


_UNKNOWN = object()  # a saved value that is no slot and no constant of the call


def _made_again(saved, values, kept):
    """`saved` (a node's saved values as Refs, OUT, constants or _UNKNOWN) with each _UNKNOWN
    replaced by a Kept marker, where the op's array form made those values again (`kept`,
    equal ones, in the same order); None if some value stays unknown."""
    unknown = [v for v, r in zip(values, saved, strict=True) if r is _UNKNOWN]
    if not unknown:
        return saved
    if kept is None or len(kept) != len(unknown) or not all(
            _equal(a, b) for a, b in zip(kept, unknown, strict=True)):
        return None
    order = iter(range(len(kept)))
    return tuple(Kept(next(order)) if r is _UNKNOWN else r for r in saved)


def _equal(a, b):
    a, b = (v._data if isinstance(v, Tensor) else v for v in (a, b))
    if not (hasattr(a, "shape") and hasattr(b, "shape")) or a.shape != b.shape or \
            a.dtype != b.dtype or type(a) is not type(b):
        return False
    xp = backend.get_array_module(a)
    return bool(xp.array_equal(a, b, equal_nan=a.dtype.kind in "fc"))


def _batched(args):
    return any(isinstance(a, BatchedTensor) for a in _walk(args))
