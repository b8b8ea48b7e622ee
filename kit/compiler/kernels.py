"""Code generation: a fused group's expressions as one kernel, for the data's device.

- GPU (CuPy): one `cupy.ElementwiseKernel` in CUDA C per kernel.
- CPU with numba (the `jit` extra): one generated loop, a numba gufunc over the elements.
- CPU without numba: the NumPy ufuncs of the expression, each writing into a preallocated
  buffer (no temporaries); large arrays are done in cache-sized blocks, so intermediates never
  travel to memory (as numexpr does).

NOTE: NumPy's SIMD exp/tanh are much faster than the scalar libm calls a numba loop makes
(measured 5-15x on the CI machine), so `config.cpu_kernel = "auto"` uses numba unless the group is
large and has transcendental functions; there the blocked NumPy kernel wins. Every backend
follows NumPy's dtype rules (a Python number takes the array's dtype) and, as fused kernels do in
PyTorch, never warns about inf or NaN. Kernels are cached by their source text.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from kit import backend
from kit.compiler.expr import TRANSCENDENTAL, Expr, topological
from kit.grad_mode import STATE

BLOCK = 16_384  # elements per block of the NumPy kernel (intermediates stay in cache)
LARGE = 65_536  # from here on, "auto" prefers NumPy's SIMD math for transcendental groups
CACHE = {}


def build(group, config):
    """Make the group's kernels for its device; the backend's name, or None if none can."""
    choice = config.cpu_kernel
    if group.device == "gpu":
        from kit.compiler.cuda import cuda_kernel as maker

        name = "cuda"
    elif choice == "numba" or (choice == "auto" and _numba() is not None and not (
            math.prod(group.shape) >= LARGE and _transcendental(group))):
        maker, name = _numba_kernel, "numba"
    else:
        maker, name = _numpy_kernel, "numpy"
    try:
        if group.reduce_step is not None:
            from kit.compiler.cuda import cuda_reduction

            try:
                group.fwd_kernel = cuda_reduction(group)
            except (NotImplementedError, RuntimeError):  # no reduction kernel: a plain sum
                group.reduce_step.group = group.reduce_step = None
        if group.reduce_step is None:
            group.fwd_kernel = _distinct(maker, group, group.forward, "forward")
        group.bwd_kernel = _distinct(maker, group, group.backward, "backward") \
            if group.backward else None
    except (ImportError, NotImplementedError):
        return None  # no numba / no CUDA compiler (the fake CuPy of the tests): not fused
    except Exception as exc:  # noqa: BLE001 - a compiler's own error: run unfused, and say so
        warnings.warn(f"kit.compile: no {name} kernel for {[s.name for s in group.steps]} "
                      f"({type(exc).__name__}: {exc}); these ops run unfused", RuntimeWarning,
                      stacklevel=2)
        return None
    group.backend = name
    return name


def _distinct(maker, group, roots, which):
    """A kernel for `roots` that computes each distinct expression once (x + b gives x and b the
    same gradient: one array, returned for both)."""
    unique = list({e.id: e for e in roots}.values())
    kernel = maker(group, unique, which)
    if len(unique) == len(roots):
        return kernel
    where = [next(k for k, u in enumerate(unique) if u is e) for e in roots]
    picked = f"({''.join(f'v[{k}], ' for k in where)})"

    def pick(of):
        return _made(f"def run(*a):\n    v = OF(*a)\n    return {picked}\n", {"OF": of})

    # (kernel itself silences what it must; `direct` is kernel's own, without the profiler)
    return Kernel(pick(kernel), kernel.source, None, direct=pick(kernel.direct))


def _made(source, namespace):
    """The function `run` that `source` defines, in `namespace`."""
    exec(compile(source, "<kit.compile kernel call>", "exec"), namespace)
    return namespace["run"]


def _transcendental(group):
    return any(e.op in TRANSCENDENTAL for e in topological(group.forward + group.backward))


def traffic(group):
    """Bytes each kernel reads and writes per element of the output, an input broadcast along
    the output counting as nothing: the memory traffic that fusion saves."""
    full = math.prod(group.shape)

    def read(roots):
        return sum(e.dtype.itemsize for e in _inputs(roots) if e.value >= len(group.inputs) or
                   math.prod(group.input_shapes[e.value]) == full)

    def written(roots):
        return sum(e.dtype.itemsize for e in {e.id: e for e in roots}.values())

    return {"forward": read(group.forward) + written(group.forward),
            "backward": read(group.backward) + written(group.backward)}


def _inputs(roots):
    return sorted({e.value: e for e in topological(roots) if e.op == "input"}.values(),
                  key=lambda e: e.value)


def arity(group, roots):
    return max([e.value for e in _inputs(roots)] + [len(group.inputs) - 1]) + 1


def _program(roots, printer):
    """[(name, node, argument names or literals)]: one line per expression node, named t0,
    t1... in order (inputs are i0, i1...), so equal groups give equal source and share a
    compiled kernel."""
    names, lines = {}, []
    for e in topological(roots):
        if e.op == "input":
            names[e.id] = f"i{e.value}"
            continue
        args = [names[a.id] if isinstance(a, Expr) else printer.literal(a, e) for a in e.args]
        names[e.id] = f"t{len(lines)}"
        lines.append((names[e.id], e, args))
    return lines


def assignments(roots, printer):
    """(statements, name of each root) for the printers that assign one value per line."""
    lines = _program(roots, printer)
    names = {e.id: name for name, e, _ in lines}
    statements = [(name, e, printer.op(e, args)) for name, e, args in lines]
    return statements, [names.get(r.id, f"i{r.value}") for r in roots]


# --- numba ---------------------------------------------------------------------------------
def _numba():
    try:
        import numba
    except ImportError:
        return None
    return numba


_PY_CALLS = {"exp": "math.exp", "log": "math.log", "log1p": "math.log1p", "expm1": "math.expm1",
             "sqrt": "math.sqrt", "tanh": "math.tanh", "sin": "math.sin", "cos": "math.cos",
             "isnan": "math.isnan", "abs": "abs"}
INFIX = {"add": "+", "sub": "-", "mul": "*", "div": "/", "pow": "**", "lt": "<", "le": "<=",
          "gt": ">", "ge": ">=", "eq": "==", "ne": "!=", "and": "&", "or": "|", "xor": "^"}


class _Python:
    """Prints an expression node as Python for numba."""

    @staticmethod
    def literal(value, node):
        if isinstance(value, bool):
            return repr(value)
        text = repr(value) if math.isfinite(value) else (
            "math.nan" if value != value else ("math.inf" if value > 0 else "-math.inf"))
        dtype = node.dtype if node.dtype.kind in "fiu" else next(
            (a.dtype for a in node.args if isinstance(a, Expr) and a.dtype.kind != "b"), None)
        return f"np.{dtype}({text})" if dtype is not None else text

    @staticmethod
    def op(e, a):
        op = e.op
        if op in INFIX:
            text = f"({a[0]} {INFIX[op]} {a[1]})"
        elif op in _PY_CALLS:
            text = f"{_PY_CALLS[op]}({a[0]})"
        elif op == "neg":
            text = f"(-{a[0]})"
        elif op == "not":
            text = f"(not {a[0]})"
        elif op == "where":
            text = f"({a[1]} if {a[0]} else {a[2]})"
        elif op in ("max", "min"):
            cmp = ">" if op == "max" else "<"
            text = f"({a[0]} if ({a[0]} {cmp} {a[1]} or {a[0]} != {a[0]}) else {a[1]})"
        elif op == "sign":
            text = f"(1 if {a[0]} > 0 else (-1 if {a[0]} < 0 else ({a[0]} if {a[0]} != {a[0]} " \
                   f"else 0)))"
        elif op == "cast":
            return f"({a[0]} != 0)" if e.dtype.kind == "b" else f"np.{e.dtype}({a[0]})"
        else:
            raise NotImplementedError(op)
        return text if e.dtype.kind == "b" else f"np.{e.dtype}({text})"


def _numba_kernel(group, roots, which):
    """One loop nest over the output's elements (numba compiles it to vectorised machine code;
    a gufunc's per-element calls measured 5x slower). Each input is indexed with its own
    broadcasting: a bias of shape (256,) in a (64, 256) group is read as x1[0, a1]. NumPy's
    error model: 1 / 0 is inf, as in NumPy (Python's would raise)."""
    numba = _numba()
    if numba is None:
        raise ImportError("numba")
    n_in = arity(group, roots)
    shape = group.shape or (1,)
    padded = [_padded(group.input_shapes[k] if k < len(group.inputs) else group.shape, shape)
              for k in range(n_in)]
    lines, results = assignments(roots, _Python)
    depth = "    " * (len(shape) + 1)
    loops = [f"{'    ' * (d + 1)}for a{d} in range(o0.shape[{d}]):" for d in range(len(shape))]
    reads = [f"{depth}i{k} = x{k}[{_index(padded[k], shape)}]"
             for k in sorted({e.value for e in _inputs(roots)})]
    body = loops + reads + [f"{depth}{name} = {text}" for name, _, text in lines]
    body += [f"{depth}o{k}[{_index(shape, shape)}] = {name}" for k, name in enumerate(results)]
    params = [f"x{k}" for k in range(n_in)] + [f"o{k}" for k in range(len(roots))]
    source = f"def kernel({', '.join(params)}):\n" + "\n".join(body) + "\n"
    compiled = CACHE.get(("numba", source))
    if compiled is None:
        namespace = {"np": np, "math": math}
        exec(compile(source, f"<kit.compile {which} kernel>", "exec"), namespace)
        compiled = CACHE["numba", source] = numba.njit(error_model="numpy")(namespace["kernel"])
    # NOTE: the call, written for these shapes (the graph's, fixed by its guards): outputs
    # allocated, broadcast inputs given their leading 1s, a 0-d group's outputs made 0-d again
    outs = [f"o{k}" for k in range(len(roots))]
    args = [f"x{k}" if tuple(group.input_shapes[k] if k < len(group.inputs) else group.shape)
            == padded[k] else f"x{k}.reshape({padded[k]!r})" for k in range(n_in)]
    results = outs if shape is group.shape else [f"{o}.reshape(())" for o in outs]
    call = "".join(f"    {o} = EMPTY({shape!r}, D{k})\n" for k, o in enumerate(outs))
    returned = "".join(r + ", " for r in results)
    run = _made(f"def run({', '.join(f'x{k}' for k in range(n_in))}):\n{call}"
                f"    KERNEL({', '.join(args + outs)})\n    return ({returned})\n",
                {"EMPTY": np.empty, "KERNEL": compiled,
                 **{f"D{k}": r.dtype for k, r in enumerate(roots)}})
    return Kernel(run, source, None)


def _padded(input_shape, shape):
    """`input_shape` with leading 1s up to the group's number of dimensions."""
    return (1,) * (len(shape) - len(input_shape)) + tuple(input_shape)


def _index(input_shape, shape):
    """The loop indices an input of `input_shape` is read at (0 where it is broadcast)."""
    return ", ".join(f"a{d}" if n == shape[d] and n != 1 else "0"
                     for d, n in enumerate(input_shape))


def input_dtypes(group, roots, n_in):
    found = {e.value: e.dtype for e in _inputs(roots)}
    forward = {e.value: e.dtype for e in _inputs(group.forward)}
    return [found.get(k, forward.get(k, np.dtype("float64"))) for k in range(n_in)]


class Kernel:
    """A compiled kernel: call it with the input arrays, get the output arrays (a tuple).
    `n_out` is None for a function that returns a tuple itself; `quiet` runs it with NumPy's
    floating-point warnings off (only NumPy's ufuncs raise them). A group's kernels have a
    `name` (Group.name_kernels): while a profiler runs, each call is an event of that name."""

    def __init__(self, fn, source, n_out, quiet=False, direct=None):
        self.fn = fn
        self.source = source
        self.n_out = n_out
        self.quiet = quiet
        self.name = None
        # what a replay calls while no profiler runs: the same, without the event's checks
        self.direct = direct if direct is not None else _direct(fn, n_out, quiet)

    def __call__(self, *arrays):
        recorder = STATE.profiler
        event = None
        if recorder is not None and self.name is not None:
            event = recorder.begin(self.name, "fused", "backward" if self.name.endswith(
                "_backward") else "forward", inputs=arrays)
        try:
            if self.quiet:
                with np.errstate(all="ignore"):
                    out = self.fn(*arrays)
            else:
                out = self.fn(*arrays)
        except BaseException:
            if event is not None:
                recorder.end(event)
            raise
        out = (out,) if self.n_out == 1 else out
        if event is not None:
            recorder.end(event, out, arrays)
        return out


def _direct(fn, n_out, quiet):
    if not quiet:
        return fn if n_out != 1 else lambda *arrays: (fn(*arrays),)

    def run(*arrays):
        token = backend.quiet()
        try:
            out = fn(*arrays)
        finally:
            backend.loud(token)
        return (out,) if n_out == 1 else out

    return run


# --- NumPy with out= buffers ----------------------------------------------------------------
_UFUNCS = {"add": "np.add", "sub": "np.subtract", "mul": "np.multiply", "div": "np.true_divide",
           "pow": "np.power", "neg": "np.negative", "exp": "np.exp", "log": "np.log",
           "log1p": "np.log1p", "expm1": "np.expm1", "sqrt": "np.sqrt", "tanh": "np.tanh",
           "sin": "np.sin", "cos": "np.cos", "abs": "np.absolute", "sign": "np.sign",
           "isnan": "np.isnan", "max": "np.maximum", "min": "np.minimum", "lt": "np.less",
           "le": "np.less_equal", "gt": "np.greater", "ge": "np.greater_equal",
           "eq": "np.equal", "ne": "np.not_equal", "and": "np.logical_and",
           "or": "np.logical_or", "xor": "np.logical_xor", "not": "np.logical_not"}


class _Ufuncs:
    """Prints an expression node as NumPy calls writing into `out` (no temporaries)."""

    @staticmethod
    def literal(value, node):
        return repr(value) if isinstance(value, bool) or math.isfinite(value) else (
            "np.nan" if value != value else ("np.inf" if value > 0 else "-np.inf"))

    @staticmethod
    def call(e, a, out):
        if e.op == "where":
            return f"SELECT({out}, {a[0]}, {a[1]}, {a[2]})"
        if e.op == "cast":
            return f"np.copyto({out}, {a[0]}, casting='unsafe')"
        return f"{_UFUNCS[e.op]}({', '.join(a)}, out={out})"


def _numpy_kernel(group, roots, which):
    n_in = arity(group, roots)
    lines = _program(roots, _Ufuncs)
    outputs = {}
    for k, r in enumerate(roots):
        outputs.setdefault(r.id, k)
    shape, size = group.shape, math.prod(group.shape)
    blocked = size >= 2 * BLOCK
    temps = [(name, e) for name, e, _ in lines if e.id not in outputs]
    written = {f"i{k}": f"b{k}" if blocked else f"i{k}" for k in range(n_in)}
    for name, e, _ in lines:
        k = outputs.get(e.id)
        written[name] = (f"ot{k}" if blocked else f"o{k}") if k is not None else (
            f"{name}[:n]" if blocked else name)
    calls = [_Ufuncs.call(e, [written.get(a, a) for a in args], written[name])
             for name, e, args in lines]
    target = [("ot" if blocked else "o") + str(k) for k in range(len(roots))]
    calls += [f"np.copyto({target[k]}, {written.get(_name_of(lines, r), r.value)})"
              for k, r in enumerate(roots) if outputs[r.id] != k or r.op == "input"]
    body = [f"def kernel({', '.join(f'i{k}' for k in range(n_in))}):",
            "    buffers = POOL.pop() if POOL else [np.empty(BUF, d) for d in DTYPES]",
            f"    {''.join(name + ', ' for name, _ in temps)}_ = *buffers, None"]
    body += [f"    o{k} = np.empty(SHAPE, DT{k})" for k in range(len(roots))]
    if blocked:
        body += [f"    i{k} = FLAT(i{k})" for k in range(n_in)]
        body += [f"    O{k} = o{k}.reshape(-1)" for k in range(len(roots))]
        body += ["    for start in range(0, SIZE, BLOCK):", "        n = min(BLOCK, SIZE - start)"]
        body += [f"        b{k} = i{k}[start:start + n] if i{k}.ndim else i{k}"
                 for k in range(n_in)]
        body += [f"        ot{k} = O{k}[start:start + n]" for k in range(len(roots))]
        body += [f"        {c}" for c in calls]
    else:
        body += [f"    {c}" for c in calls]
    body += ["    POOL.append(buffers)",
             f"    return {''.join(f'o{k}, ' for k in range(len(roots)))}"]
    source = "\n".join(body) + "\n"
    namespace = {"np": np, "SELECT": _select, "POOL": [], "DTYPES": [e.dtype for _, e in temps],
                 "SHAPE": shape,
                 "BUF": (BLOCK,) if blocked else shape, "SIZE": size, "BLOCK": BLOCK,
                 "FLAT": lambda a: _flat(a, shape)}
    namespace.update({f"DT{k}": r.dtype for k, r in enumerate(roots)})
    exec(compile(source, f"<kit.compile {which} kernel>", "exec"), namespace)
    return Kernel(namespace["kernel"], source, None, quiet=True)


def _select(out, cond, a, b):
    """np.where(cond, a, b) written into `out`. NOTE: with a 0 on one side (relu and its
    gradient) it masks the bits, as kit's eager where does (kit/ops/elementwise.py): a masked
    copy or np.where with an irregular mask is several times slower."""
    zero_b = type(b) in (int, float) and b == 0
    if (zero_b or (type(a) in (int, float) and a == 0)) and out.dtype.kind == "f":
        kept = a if zero_b else b
        if isinstance(kept, np.ndarray) and kept.shape == out.shape and kept.dtype == out.dtype:
            mask = out.view(f"i{out.dtype.itemsize}")
            np.copyto(mask, cond if zero_b else ~cond)
            np.negative(mask, out=mask)
            np.bitwise_and(kept.view(mask.dtype), mask, out=mask)
            return
    np.copyto(out, b)
    np.copyto(out, a, where=cond)


def _name_of(lines, expr):
    if expr.op == "input":
        return f"i{expr.value}"
    return next(name for name, e, _ in lines if e.id == expr.id)


def _flat(a, shape):
    """An operand as a flat array for the blocked kernel: a full-size array flattened (copied if
    it is not contiguous), a broadcast one expanded, a number or 0-d array as it is."""
    if not hasattr(a, "shape") or a.ndim == 0:
        return np.asarray(a)
    if a.shape != shape:
        a = np.broadcast_to(a, shape)
    return np.ascontiguousarray(a).reshape(-1)
