"""The graph and the reverse pass.

Every recorded call, a built-in primitive or a user's Function, is one `Node`. A node knows the
nodes that produced its inputs (`next_functions`, as in PyTorch), what it saved for backward,
and the shape and dtype of its outputs. Leaves that require grad end in an `AccumulateGrad` node.

The reverse pass (`run_backward`) is iterative: it counts, for each node, how many consumers will
send it a gradient, then runs a node once all of them have. Gradients live in a dict local to the
call and are popped once used. Broadcasting is undone here, in one place (`_fit`).

First-order backward passes raw arrays between nodes (fast); with `create_graph=True` it passes
Tensors with grad mode on, so the gradient is itself differentiable.
"""

from __future__ import annotations

import weakref

import numpy as np

from kit import backend
from kit._anomaly import check_nan, name_forward_line
from kit._modes import enter, leave
from kit.grad_mode import STATE, BackwardTask
from kit.saved_tensors import SavedTensor

FREED = object()  # Node.saved once released after a backward without retain_graph
SAVED_NAMES = {}  # op -> the names of what it saves, from its declaration (kit/ops/_registry.py)


class SavedOutput:
    """In Node.saved: "output `index` of this node". The node keeps that output's array, not its
    Tensor (which refers to the node: a reference cycle), and its version counter, so a saved
    output is version-checked like any saved tensor."""

    __slots__ = ("index",)

    def __init__(self, index):
        self.index = index

    def __repr__(self):
        return f"SavedOutput({self.index})"


OUTPUT = SavedOutput(0)  # a built-in op's own (only) output


class _NoEdge(tuple):
    """An entry of `next_functions` for an input that needs no gradient. It reads as PyTorch's
    `(None, 0)` (indexing, unpacking, ==, repr) but is false, so rules and the engine test
    `if edge:` for "needs a gradient".

    NOTE: it is an empty tuple underneath, so that its truth test stays the C-level length check
    of a tuple (a Python __bool__ would cost a call on every edge the engine walks).
    """

    __slots__ = ()
    _FACE = (None, 0)

    def __getitem__(self, index):
        return self._FACE[index]

    def __iter__(self):
        return iter(self._FACE)

    def __eq__(self, other):
        return other == self._FACE

    def __ne__(self, other):
        return other != self._FACE

    def __hash__(self):
        return hash(self._FACE)

    def __repr__(self):
        return repr(self._FACE)


NO_EDGE = _NoEdge()


class Node:
    """One recorded operation: the unit the reverse pass walks.

    What it keeps for backward, for built-in ops and Functions alike (one mechanism): `saved`
    (Tensors, SavedOutput markers, constants), `versions` (each saved tensor's version when saved,
    -1 for constants), `out_data` / `out_vc` (the outputs' arrays and version counters, for the
    SavedOutput markers). `unpack_saved` checks and unpacks them, `release` frees them.

    Public, read-only attributes used by tools such as kit.viz:
    `name()`, `next_functions`, `kind` ("builtin" or "custom"), `frontend` (for custom ops),
    `output_meta` ((shape, dtype) per output), `params`, `saved_values()`, `saved_items()`.
    """

    __slots__ = (
        "_name", "rule", "next_functions", "saved", "versions", "params", "output_meta",
        "pre_hooks", "out_data", "out_vc", "out_ref", "stack", "__weakref__",
    )
    kind = "builtin"
    frontend = None

    def __init__(self, name, rule, next_functions, saved, versions, params, output_meta):
        self._name = name
        self.rule = rule
        self.next_functions = next_functions
        self.saved = saved
        self.versions = versions
        self.params = params
        self.output_meta = output_meta
        self.pre_hooks = None
        self.out_data = None
        self.out_vc = None
        self.out_ref = None
        self.stack = None  # the forward's stack, under detect_anomaly (kit/_anomaly.py)

    def name(self) -> str:
        """PyTorch's spelling of the backward node: `MulBackward0` for the op `mul`."""
        return backward_name(self._name)

    @property
    def op(self) -> str:
        """The forward op's name, as kit.ops spells it ("mul", "matmul", or a Function's)."""
        return self._name

    def __repr__(self):
        return f"<{self.name()} object at {hex(id(self))}>"  # as PyTorch prints a grad_fn

    def outputs(self):
        """The output Tensors still alive (None for ones already collected)."""
        ref = self.out_ref
        return (ref() if ref is not None else None,)

    def saved_values(self):
        """What the node keeps for backward, for display: Tensors, arrays or constants, None
        for what it did not need to keep, a SavedTensor for what saved-tensor hooks packed."""
        if self.saved is FREED:
            return ()
        return tuple(self._output(v)[0] if type(v) is SavedOutput else v for v in self.saved)

    def saved_items(self):
        """`saved_values()` with their names, as (name, value) pairs: the names the op's
        declaration gives ("x" its input, "a" and "b" its operands, "output" its own output;
        "saved_tensors[i]" for a Function). PyTorch shows the same as `grad_fn._saved_self`,
        `_saved_other`, `_saved_result`..."""
        values = self.saved_values()
        if not values:
            return ()
        names = self._saved_names()
        if len(names) != len(values):
            names = [f"saved[{i}]" for i in range(len(values))]
        return tuple(zip(names, values, strict=True))

    def _saved_names(self):
        return SAVED_NAMES.get(self._name, ())

    def _output(self, marker):
        """(array, version counter) of the output a SavedOutput marker names. NOTE: a built-in
        op keeps its one output's (marker OUTPUT) directly, not in 1-tuples: two long-lived
        objects fewer per op for the cyclic GC."""
        if marker is OUTPUT:
            return self.out_data, self.out_vc
        return self.out_data[marker.index], self.out_vc[marker.index]

    def released(self) -> bool:
        return self.saved is FREED

    def unpack_saved(self, differentiable, hooks=True):
        """The saved values, each checked against its version: Tensors if `differentiable`
        (a saved output comes back as a Tensor that is that output of this node), else arrays.
        With `hooks=False` what saved-tensor hooks packed is not unpacked: a stand-in with the
        original's autograd identity (and no values) takes its place."""
        saved = self.saved
        if saved is FREED:
            raise RuntimeError(_freed_message(self))
        # One pass both checks versions (check_versions words the error) and unpacks.
        values = []
        for v, expected in zip(saved, self.versions, strict=True):
            if type(v) is SavedOutput:
                data, vc = self._output(v)
                if vc[0] != expected:
                    check_versions(self)
                values.append(Tensor._from_node(data, self, v.index) if differentiable else data)
            elif isinstance(v, Tensor):
                if v._vc[0] != expected:
                    check_versions(self)
                values.append(v if differentiable else v._data)
            elif type(v) is SavedTensor:  # packed by saved_tensors_hooks
                values.append(v.unpack(self, differentiable) if hooks else v.stand_in(self))
            else:
                values.append(v)
        return values

    def release(self):
        """Free what was saved (after a backward without retain_graph)."""
        if self.saved:
            self.saved = FREED
            self.out_data = None

    # -- called by the engine -------------------------------------------------------------
    def apply(self, grads, differentiable):
        """Gradients for each input, given the gradient of each output."""
        if not self.saved:  # NOTE: FREED is truthy; this is the "nothing saved" fast path
            return self.rule(self, grads[0])
        return self.rule(self, grads[0], *self.unpack_saved(differentiable))


def backward_name(op):
    return "".join(part.title() for part in op.split("_")) + "Backward0"


_NODE_CLASSES = {}
# Where PyTorch's node name is not kit's op name + "Backward0" (dtype and device copies).
_PYTORCH_NAMES = {"astype": "ToCopyBackward0", "to": "ToCopyBackward0",
                  "prod_dim": "ProdBackward1"}


def typed(node):
    """Give `node`, and every plain Node below it, the class named as PyTorch names its type
    (`type(y.grad_fn).__name__ == "MulBackward0"`); returns `node`.

    NOTE: record() makes plain Nodes and Tensor.grad_fn types them when a user looks. With a
    class per op from the start, the reverse pass's attribute reads would meet a different type
    at every node, which the interpreter cannot specialise: ~6% slower on a chain of tiny ops.
    """
    stack = [node]
    while stack:
        n = stack.pop()
        if type(n) is Node:
            n.__class__ = node_class(n._name)
            stack.extend(edge[0] for edge in n.next_functions if edge)
    return node


def node_class(op, display=None):
    """The Node subclass for `op`, named as PyTorch names it (`MulBackward0`), made once."""
    cls = _NODE_CLASSES.get(op)
    if cls is None:
        title = display or _PYTORCH_NAMES.get(op) or backward_name(op)
        cls = _NODE_CLASSES[op] = type(title, (Node,), {
            "__slots__": (), "name": lambda self, _title=title: _title,
            "__doc__": f"The backward of {op}.",
        })
    return cls


class AccumulateGrad(Node):
    """The end of a path: adds the incoming gradient into a leaf's `.grad`.

    NOTE: the leaf keeps its AccumulateGrad (and the edge to it) for its whole life, and the
    node refers back to the leaf weakly: no reference cycle, and no new node per training step.
    """

    __slots__ = ("_variable",)

    def __init__(self, variable):
        super().__init__("accumulate_grad", None, (), (), (), None,
                         ((variable.shape, variable.dtype),))
        self._variable = weakref.ref(variable)

    @property
    def variable(self):
        """The leaf Tensor (None once nothing else keeps it alive)."""
        return self._variable()

    def name(self) -> str:
        return "AccumulateGrad"

    def outputs(self):
        return (self.variable,)


def check_versions(node, saved=None, versions=None, needed_for="gradient computation",
                   how=""):
    """Raise if a tensor saved by `node` was modified in place after it was saved (by default
    what it saved for backward; kit.func passes what a Function saved for its jvp)."""
    saved = node.saved if saved is None else saved
    versions = node.versions if versions is None else versions
    for value, expected in zip(saved, versions, strict=True):
        if expected < 0 or value is None or type(value) is SavedTensor:  # checked when unpacked
            continue
        output = type(value) is SavedOutput
        vc = node._output(value)[1] if output else value._vc
        if vc[0] != expected:
            what = ("its output" if len(node.output_meta) == 1 else f"its output {value.index}"
                    ) if output else (
                f"a saved tensor of shape {list(value.shape)} and dtype {value.dtype}"
            )
            raise RuntimeError(
                f"one of the variables needed for {needed_for} has been modified by an "
                f"inplace operation: {what}, saved{how} by {node.name()}, is at version {vc[0]}; "
                f"expected version {expected} instead. Fix: do not modify it in place (use an "
                f"out-of-place op such as `x = x + 1`, or `.clone()` it before the change)."
                + ("" if STATE.anomaly else
                   f" Hint: run the forward and the backward under detect_anomaly() to see the "
                   f"line of your code that created {node.name()}.")
            )


def _freed_message(node):
    return (
        f"Trying to backward through the graph a second time (or directly access saved tensors "
        f"after they have already been freed): {node.name()} released what it saved after the "
        f"first backward. Fix: pass retain_graph=True to the first backward (or grad) call if "
        f"you need to go through the same graph twice, or recompute the forward."
    )


_ADD, _NDARRAY = np.add.reduce, np.ndarray


# --- the reverse pass -----------------------------------------------------------------------

def _fit(node, index, g, meta, differentiable):
    """Make `g` match the shape and dtype the node's input expects; undo broadcasting."""
    shape, dtype = meta
    if g.shape != shape:
        lead = g.ndim - len(shape)
        if lead > 0 and shape and g.shape[lead:] == shape:
            # NOTE: the common case (a bias): one plain sum, whose result is not a view, so
            # accumulating it into a leaf's .grad needs no copy. (NumPy's ndarray.sum is a
            # Python function around add.reduce.)
            g = _ADD(g, axis=tuple(range(lead))) if type(g) is _NDARRAY else \
                g.sum(axis=tuple(range(lead)))
        elif not _sum_compatible(g.shape, shape):
            raise RuntimeError(
                f"{node.name()} returned an invalid gradient at index {index} - got "
                f"{list(g.shape)} but expected shape compatible with {list(shape)}. Fix: return "
                f"a gradient of the input's shape, {tuple(shape)}: if forward broadcast that "
                f"input, sum the gradient over the axes it was broadcast along"
            )
        else:
            g = _sum_to(g, shape)
    if g.dtype != dtype:
        g = g.to(dtype) if differentiable else g.astype(dtype)
    return g


def _sum_compatible(have, want):
    """True when `want` broadcasts to `have`, so summing `have` down to `want` undoes it."""
    if len(want) > len(have):
        return False
    return all(w == h or w == 1 for h, w in zip(have[len(have) - len(want):], want, strict=True))


def _sum_to(g, shape):
    lead = g.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(
        lead + i for i, n in enumerate(shape) if n == 1 and g.shape[lead + i] != 1
    )
    return g.sum(axis=axes, keepdims=True).reshape(shape)


def _collect(roots):
    """Count, for every node reachable from `roots`, how many edges point at it."""
    deps = dict.fromkeys(roots, 0)  # a node's presence in deps means it was seen
    get = deps.get
    stack = list(roots)
    pop, push = stack.pop, stack.append
    while stack:
        for edge in pop().next_functions:
            if edge:
                nxt = edge[0]
                count = get(nxt)
                if count is None:
                    deps[nxt] = 1
                    push(nxt)
                else:
                    deps[nxt] = count + 1
    return deps


def _needed(nodes, capture):
    """The nodes `kit.grad` must run: those with a path down to a captured output. As in PyTorch,
    the rest of the graph is neither run nor freed (a later backward can still use it)."""
    consumers = {}
    for node in nodes:
        for edge in node.next_functions:
            if edge:
                consumers.setdefault(edge[0], []).append(node)
    needed = set()
    stack = [node for node, _ in capture]
    while stack:
        for consumer in consumers.get(stack.pop(), ()):
            if consumer not in needed:
                needed.add(consumer)
                stack.append(consumer)
    return needed


def run_backward(roots, root_grads, retain_graph=False, create_graph=False, capture=None):
    """Send `root_grads` backward from `roots`, a list of (node, output index) pairs.

    Without `capture`, gradients reaching leaves are accumulated into their `.grad`. With
    `capture` (a dict {(node, output index): slot}), the gradients arriving at those outputs are
    returned in a list instead and no `.grad` is touched (this is `kit.grad`).
    """
    differentiable = create_graph
    if capture is None and len(roots) == 1 and _onto_leaves(roots[0][0]) and not (
            STATE.anomaly or STATE.profiler):
        _one_step(roots[0], root_grads[0], retain_graph, differentiable)
        return None
    deps = _collect({node for node, _ in roots})
    buffers = {}
    for (node, index), g in zip(roots, root_grads, strict=True):
        add_gradient(buffers, node, index, g)
    captured = [None] * len(capture) if capture is not None else None
    needed = _needed(deps, capture) if capture is not None else None
    # Arrays already stored in some .grad: a second leaf receiving the same array gets a copy.
    owned = {id(g.base if g.base is not None else g) for g in root_grads
             if not differentiable and g is not None}
    ready = [node for node in buffers if deps.get(node, 0) == 0]
    anomaly = STATE.anomaly
    node = None
    # NOTE: detect_anomaly's NaN check and a running profiler watch each node; one local tells
    # the loop.
    watch = _watcher(anomaly and STATE.check_nan, STATE.profiler)
    mode = enter(BackwardTask(differentiable, capture is not None))
    # NOTE: as in PyTorch, inf/nan in gradients propagate silently; detect_anomaly finds them.
    quiet = backend.quiet()
    pop_ready, push_ready = ready.pop, ready.append
    pop_buffer, get_buffer = buffers.pop, buffers.get
    try:
        while ready:
            node = pop_ready()
            grads = pop_buffer(node, None)
            is_leaf = type(node) is AccumulateGrad
            if is_leaf and capture is None:
                if grads is not None:
                    _deliver(node, grads, differentiable, owned)
                continue
            if grads is not None:
                leaf = node.variable if is_leaf else None
                if is_leaf and leaf is None:
                    continue  # the leaf is gone: nobody can read its .grad any more
                hooks = leaf._hooks if is_leaf else node.pre_hooks
                if hooks:
                    grads = _run_hooks(node, hooks if is_leaf else None, grads, differentiable,
                                       owned)
                if capture is not None:
                    for index, g in enumerate(grads):
                        slot = capture.get((node, index))
                        if slot is not None and g is not None:
                            captured[slot] = g
                if is_leaf:
                    continue
            if is_leaf:
                continue
            if grads is None or (grads[0] is None and all(g is None for g in grads)) or (
                needed is not None and node not in needed
            ):
                in_grads = ()  # nothing flows through this node, but its inputs still wait on it
            else:
                if watch:
                    in_grads = watch(node, grads, differentiable)
                else:
                    in_grads = node.apply(grads, differentiable)
                if not retain_graph:
                    node.release()
            n_in = len(in_grads)
            index = -1
            for edge in node.next_functions:
                index += 1
                if not edge:
                    continue
                nxt, nr = edge
                g = in_grads[index] if index < n_in else None
                if g is not None:
                    meta = nxt.output_meta
                    shape, dtype = meta[nr]
                    if g.shape != shape or (g.dtype is not dtype and g.dtype != dtype):
                        g = _fit(node, index, g, meta[nr], differentiable)
                    # Inlined add_gradient: this loop runs once per edge of the graph.
                    slot = get_buffer(nxt)
                    if slot is None:
                        if len(meta) == 1:
                            buffers[nxt] = [g]
                        else:
                            slot = buffers[nxt] = [None] * len(meta)
                            slot[nr] = g
                    else:
                        have = slot[nr]
                        slot[nr] = g if have is None else have + g
                left = deps[nxt] - 1
                deps[nxt] = left
                if left == 0:
                    push_ready(nxt)
    except Exception as error:
        if anomaly and node is not None and node.stack:
            name_forward_line(error, node)
        raise
    finally:
        leave(mode)
        backend.loud(quiet)
    if captured is None:
        return None
    return [g if g is None or isinstance(g, Tensor) else Tensor(g) for g in captured]


def _onto_leaves(node):
    """True for a node whose inputs are all leaves (or need no gradient): a compiled function's
    one node, an op on parameters. Its backward is one step (_one_step), no graph walk."""
    if type(node) is AccumulateGrad or node.pre_hooks:
        return False
    for edge in node.next_functions:
        if edge and type(edge[0]) is not AccumulateGrad:
            return False
    return True


def _one_step(root, g, retain_graph, differentiable):
    """run_backward for a graph of one node onto leaves: what the walk does, without counting
    dependencies or buffering (gradients reaching one leaf twice are summed first, as there)."""
    node, index = root
    grads = [None] * len(node.output_meta)
    grads[index] = g
    owned = set() if differentiable else {id(g.base if g.base is not None else g)}
    mode = enter(BackwardTask(differentiable, False))
    quiet = backend.quiet()
    try:
        in_grads = node.apply(grads, differentiable)
        if not retain_graph:
            node.release()
        found = {}
        for k, (edge, g) in enumerate(zip(node.next_functions, in_grads, strict=False)):
            if edge and g is not None:
                leaf = edge[0]
                meta = leaf.output_meta[0]
                if g.shape != meta[0] or (g.dtype is not meta[1] and g.dtype != meta[1]):
                    g = _fit(node, k, g, meta, differentiable)
                have = found.get(leaf)
                found[leaf] = g if have is None else have + g
        for leaf, g in found.items():
            _deliver(leaf, [g], differentiable, owned)
    finally:
        leave(mode)
        backend.loud(quiet)


def _deliver(node, grads, differentiable, owned):
    """A leaf's AccumulateGrad receives `grads`: its hooks run, then `.grad` accumulates."""
    leaf = node._variable()
    if leaf is None:
        return  # the leaf is gone: nobody can read its .grad any more
    if leaf._hooks:
        grads = _run_hooks(node, leaf._hooks, grads, differentiable, owned)
    if grads[0] is not None:
        _accumulate(leaf, grads[0], differentiable, owned)


def node_vjp(node, grads):
    """One step of the reverse pass, for tools that show it step by step (kit.viz).

    Given the gradient arriving at each output of `node` (arrays; None for none), returns what
    it sends back along each entry of `next_functions` (an array, or None), broadcasting undone.
    First order; the graph is kept, no hook runs and no `.grad` changes.
    """
    # NOTE: no grad-mode block here: first-order rules work on arrays and record nothing, and a
    # lesson calls this from a recursive pass that is meant to hit RecursionError, which could
    # strike inside a mode's enter or exit and leave grad mode off for good.
    in_grads = node.apply(list(grads), False)
    passed = []
    for index, edge in enumerate(node.next_functions):
        g = in_grads[index] if index < len(in_grads) else None
        if not edge or g is None:
            passed.append(None)
        else:
            passed.append(_fit(node, index, g, edge[0].output_meta[edge[1]], False))
    return passed


def add_gradient(buffers, node, index, g):
    """Add `g` to what output `index` of `node` has received so far (`buffers`: node -> list)."""
    slot = buffers.get(node)
    if slot is None:
        slot = buffers[node] = [None] * len(node.output_meta)
    have = slot[index]
    slot[index] = g if have is None else have + g


def _run_hooks(node, leaf_hooks, grads, differentiable, owned):
    """Tensor hooks may replace a gradient; retain_grad runs last and stores it."""
    grads = list(grads)
    per_output = {0: leaf_hooks} if leaf_hooks is not None else node.pre_hooks
    for index, hooks in per_output.items():
        g = grads[index]
        if g is None:
            continue
        for key, hook in list(hooks.items()):
            if key == "retain":
                continue
            result = hook(g if differentiable else Tensor(g))
            if result is not None:
                if not isinstance(result, Tensor):
                    raise TypeError(
                        f"a hook on a gradient flowing into {node.name()} returned "
                        f"{type(result).__name__}; a hook must return a Tensor or None"
                    )
                if tuple(result.shape) != tuple(g.shape):
                    raise RuntimeError(
                        f"a hook on a gradient flowing into {node.name()} changed its shape from "
                        f"{list(g.shape)} to {list(result.shape)}; a hook must keep the shape"
                    )
                if result.dtype != g.dtype:
                    raise RuntimeError(
                        f"hook '{getattr(hook, '__name__', hook)}' has changed the type of value "
                        f"(was {g.dtype} got {result.dtype}): a hook on a gradient flowing into "
                        f"{node.name()} must keep the dtype. Fix: return g.to({g.dtype})"
                    )
                g = result if differentiable else result._data
        retained = hooks.get("retain")
        if retained is not None and retained() is not None:
            _accumulate(retained(), g, differentiable, owned)
        grads[index] = g
    return grads


def _accumulate(tensor, g, differentiable, owned):
    """Add `g` into `tensor.grad`, out of place, never sharing an array with another .grad."""
    if differentiable:
        tensor._grad = g if tensor._grad is None else tensor._grad + g
        return
    have = tensor._grad
    if have is not None:
        # NOTE: in place, as PyTorch: a reference to x.grad taken earlier stays current.
        try:
            have._data += g
        except (TypeError, ValueError):  # read-only, or a dtype/shape it cannot hold in place
            tensor._grad = Tensor(have._data + g)
            return
        bump_version(have)
        return
    base = g.base
    if base is not None or id(g) in owned:
        g = g.copy()  # NOTE: a view or a shared array; `x.grad.zero_()` must not change others
    owned.add(id(g))
    tensor._grad = Tensor(g)


def _watcher(nan_check, profiler):
    """What the reverse pass runs instead of `node.apply` while detect_anomaly's NaN check or a
    profiler (kit/profiler) watches it; None when nothing does."""
    if profiler is None:
        return _apply_checked if nan_check else None
    if not nan_check:
        return profiler.backward

    def watched(node, grads, differentiable):
        in_grads = profiler.backward(node, grads, differentiable)
        check_nan(node, in_grads)
        return in_grads

    return watched


def _apply_checked(node, grads, differentiable):
    in_grads = node.apply(grads, differentiable)
    check_nan(node, in_grads)
    return in_grads


# bound by kit._tensor once the class exists (the two modules need each other)
Tensor = bump_version = None


def bind_tensor(cls, bump):
    global Tensor, bump_version
    Tensor, bump_version = cls, bump
