"""`kit.compile`: a function that traces itself once per signature and replays the graph.

On a call, the arguments' signature (kit/compiler/guards.py) picks the cache entry. A new one is
traced (kit/compiler/trace.py) and compiled (kit/compiler/replay.py), then replayed, also on that
first call; an entry whose trace met a break that cannot be a guard runs the function eagerly.
An entry holds one graph per outcome of its guards: a replay whose guard fails tries the next
graph, then traces a new one. Past `cache_size_limit` graphs, new signatures run eagerly with a
warning, as torch.compile does.
"""

from __future__ import annotations

import functools
import warnings

from kit._tensor import Tensor
from kit.compiler import rng
from kit.compiler.codegen import GuardError
from kit.compiler.guards import captured_ok, fast_guard, modes_ok, signature, tensor_spec
from kit.compiler.replay import Program
from kit.compiler.trace import Tracer
from kit.grad_mode import STATE


class Config:
    """kit.compile's settings (`kit.compiler.config`), as torch._dynamo.config."""

    cache_size_limit = 8  # graphs per compiled function (torch's recompile limit is 8 too)
    fuse = True  # fuse elementwise runs into kernels
    cpu_kernel = "auto"  # "auto", "numba" or "numpy" (kit/compiler/kernels.py)


config = Config()


class _Eager:
    """A cache entry whose function runs eagerly: why (its graph's breaks)."""

    def __init__(self, graph):
        self.graph = graph


class CompiledFunction:
    """What `kit.compile(fn)` returns: call it as `fn`; `explain()` shows what was captured."""

    def __init__(self, fn, fullgraph=False, cache_size_limit=None, fuse=None):
        self.fn = fn
        self.fullgraph = fullgraph
        self.cache_size_limit = cache_size_limit
        self.fuse = fuse  # None: config.fuse
        self.cache = {}  # signature -> [Program or _Eager]
        self.last = None  # the Program or _Eager used by the last call
        self.fast = None  # (check, program): the last call's, when it can be checked in one go
        self.fast_guards = {}  # signature -> (check, program) or None
        self.warned = False
        functools.update_wrapper(self, fn, updated=())
        self.modular = callable(getattr(fn, "modules", None))  # (a module: its flags are keyed)
        self.__name__ = getattr(fn, "__name__", type(fn).__name__)

    def __get__(self, instance, owner):
        return self if instance is None else functools.partial(self, instance)

    def __getattr__(self, name):  # a compiled module still has its parameters, train(), ...
        fn = self.__dict__.get("fn")
        if fn is None:
            raise AttributeError(name)
        return getattr(fn, name)

    def __call__(self, *args, **kwargs):
        if STATE.transforms > (STATE.profiler is not None) or STATE.tracing is not None:
            # inside kit.func transforms (a running profiler is one level of `transforms`, not
            # a transform), or inside another compiled function's trace (which then records
            # these ops itself): plain Python
            return self.fn(*args, **kwargs)
        fast = self.fast
        if fast is not None and not kwargs and fast[0](args):
            # NOTE: the arguments, captured tensors and modes are as on the last call (its
            # program has no value guards, so it is the one that entry replays)
            try:
                result = fast[1].call([*args, *fast[1].captured_tensors])
            except GuardError:  # (a shape an op computed differs: the entries below decide)
                pass
            else:
                self.last = fast[1]
                return result
        if not kwargs and _tensors_only(args):
            leaves = tensors = list(args)  # the common call: tensors only, by position
            structure = len(args)
        else:
            leaves, structure = _flatten((args, kwargs))
            tensors = [v for v in leaves if isinstance(v, Tensor)]
        key = signature(leaves, structure, _module_modes(self.fn) if self.modular else None)
        if key[2] is not None:  # f(x, x): the graph has one input per tensor
            tensors = list({id(t): t for t in tensors}.values())
        entry = self.cache.get(key)
        for program in entry or ():
            if isinstance(program, _Eager):
                self.last = program
                return self.fn(*args, **kwargs)
            if not captured_ok(program.captured) or (
                    program.modules and not modes_ok(program.modules)):
                continue
            try:
                result = program.call(tensors + program.captured_tensors)
            except GuardError:
                continue
            self.last = program
            if not kwargs and leaves is tensors and len(entry) == 1 and not program.guarded \
                    and key[2] is None:
                self._remember(key, args, program)
            return result
        if self.size() >= self.limit:
            if not self.warned:
                self.warned = True
                warnings.warn(
                    f"kit.compile: {self.__name__} hit cache_size_limit ({self.limit}): it "
                    f"was traced for {self.limit} different signatures or guard outcomes "
                    f"(shapes, dtypes, requires_grad, values read with .item() or `if`). New "
                    f"ones run eagerly. Fix: keep shapes fixed, or raise "
                    f"kit.compiler.config.cache_size_limit", UserWarning, stacklevel=2)
            return self.fn(*args, **kwargs)
        return self._trace(key, args, kwargs, tensors)

    @property
    def limit(self):
        return self.cache_size_limit if self.cache_size_limit is not None else \
            config.cache_size_limit

    def size(self):
        return sum(len(v) for v in self.cache.values())

    def _trace(self, key, args, kwargs, tensors):
        tracer = Tracer(self.__name__, self.fullgraph)
        states = rng.states()
        result = tracer.run(self.fn, args, kwargs, tensors)
        graph = tracer.finish(result)
        if graph.eager:
            self.last = _Eager(graph)
            self.cache.setdefault(key, []).append(self.last)
            return result  # the trace ran the function eagerly: that is this call's result
        inputs = tensors + [t for _, t in graph.captured]
        program = Program(graph, config, config.fuse if self.fuse is None else self.fuse)
        if graph.effects:
            # NOTE: the trace ran the backward and the optimiser's calls for real: replayed
            # now, they would run twice. The trace's result is this call's.
            return self._keep(key, program, result)
        rng.restore(states)  # the replay draws what the eager call would have drawn
        try:
            result = program.call(inputs)
        except GuardError:
            if not program.groups:
                raise
            # NOTE: fused kernels may round differently from the eager ops the trace ran
            # (numba's tanh is libm's, NumPy's is its own), so a value read into Python (a
            # guard) can come out a last bit apart on the very inputs traced, and no call would
            # ever match. This graph replays op by op instead, with the array functions eager
            # code runs: bit for bit what the trace saw.
            program = Program(graph, config, False)
            rng.restore(states)
            result = program.call(inputs)
        return self._keep(key, program, result)

    def _remember(self, key, args, program):
        """Make the next call check first whether it repeats this one (`guards.fast_guard`,
        made once per signature)."""
        if key not in self.fast_guards:
            modes = _module_modes(self.fn) if self.modular else None
            check = fast_guard(args, program, modes, functools.partial(_module_modes, self.fn))
            self.fast_guards[key] = None if check is None else (check, program)
        self.fast = self.fast_guards[key]

    def _keep(self, key, program, result):
        """Cache `program` under `key` with what its later calls are guarded on (the captured
        tensors' specs, the modules' flags and tensors); `result` is this call's."""
        graph = program.graph
        program.captured = [(t, tensor_spec(t)) for _, t in graph.captured]
        program.captured_tensors = [t for _, t in graph.captured]
        program.guarded = any(s.kind == "guard" for s in graph.steps)  # (on values)
        program.modules = list(graph.modules.values())
        self.cache.setdefault(key, []).append(program)
        self.last = program
        return result

    # --- what was captured ---------------------------------------------------------------------
    @property
    def graph(self):
        """The Graph (kit/compiler/graph.py) of the last call: its steps, breaks and groups."""
        return None if self.last is None else self.last.graph

    def explain(self):
        """What the last call captured, as plain data: steps, fused groups, breaks with their
        reasons and source lines, counts (see kit.compiler.graph.Graph.describe)."""
        if self.last is None:
            raise RuntimeError(f"kit.compile: {self.__name__} has not been called yet; call it "
                               f"once so that it traces")
        found = self.last.graph.describe()
        found["eager"] = isinstance(self.last, _Eager)
        found["cache_size"] = self.size()
        if not found["eager"]:
            found["source"] = dict(self.last.source)
        return found

    def reset(self):
        """Forget every graph (the next call traces again)."""
        self.cache.clear()
        self.fast_guards.clear()
        self.last = self.fast = None
        self.warned = False


def compile(fn=None, *, fullgraph=False, dynamic=None, cache_size_limit=None,  # noqa: A001
            fuse=None):
    """Trace `fn` into a graph of kit primitives on its first call with given input shapes,
    dtypes, devices and requires_grad flags, and replay that graph afterwards: one flat list of
    array calls forward and a reverse schedule computed once, with elementwise runs fused into
    one kernel. The call is one node in the caller's graph, so `backward()` goes through it.

    A whole training step compiles too: `loss.backward()` of one scalar loss and an optimiser's
    `step()`/`zero_grad()` (or a scheduler's `step()`) are recorded as effects, which a replay
    makes after the forward, in order (the backward on arrays, from the graph's own reverse
    schedule; the optimiser's calls as Python); nothing may be computed after them.

    Python that reads tensor values (`if t > 0:`, `t.item()`) splits the graph and guards on
    the value; printing, `.numpy()`, in-place changes of inputs make `fn` run eagerly.
    `fullgraph=True` raises instead, naming the line. `explain()` shows what was captured.
    `fuse=False` replays the graph op by op (kit.compiler.config.fuse by default).

    >>> import kit
    >>> @kit.compile
    ... def f(x):
    ...     return (x * 2 + 1).tanh().sum()
    >>> x = kit.tensor([0.1, 0.2], requires_grad=True)
    >>> f(x).backward()
    >>> x.grad
    tensor([0.6100, 0.4323])
    >>> f.explain()["counts"]["fused_groups"]
    1
    """
    if dynamic:
        raise ValueError(
            "kit.compile(dynamic=True): kit specialises each graph to its input shapes (a new "
            "shape traces again, up to cache_size_limit). Fix: leave dynamic unset (or False)")
    if fn is None:
        return lambda f: compile(f, fullgraph=fullgraph, cache_size_limit=cache_size_limit,
                                 fuse=fuse)
    if not callable(fn):
        raise TypeError(f"kit.compile: expected a function or a module, got {type(fn).__name__}")
    return CompiledFunction(fn, fullgraph, cache_size_limit, fuse)


def _tensors_only(args):
    for a in args:
        if type(a) is not Tensor:
            return False
    return True


def _flatten(tree):
    """(leaves, a hashable description of the structure) of nested tuples/lists/dicts."""
    leaves = []

    def walk(v):
        if isinstance(v, (tuple, list)):
            return (type(v).__name__, tuple(walk(x) for x in v))
        if isinstance(v, dict):
            return ("dict", tuple((k, walk(v[k])) for k in v))
        leaves.append(v)
        return None

    return leaves, walk(tree)


def _module_modes(fn):
    """A module's training flags (train() and eval() give different graphs)."""
    return tuple(getattr(m, "training", None) for m in fn.modules())
