"""The op registry: every op is declared once, in its family file, and the rest is generated.

A declaration says everything about an op (PyTorch's OpInfo, HIPS autograd's defvjp table):

    @primitive("log", grad=_log_rule, saves="x", batch="elementwise", methods=("log",),
               torch="log", mx="log")
    def log(x): ...

- `grad`: the gradient rule, `rule(node, g, *saved)` (see _record.py); None for an op with no
  gradient (comparisons, argmax) or a composite (its primitives own the gradient);
- `saves`: what the forward keeps for backward ("x", "output", "a, b", "" for nothing), as
  PyTorch's node keeps it (an in-place change of a kept tensor makes backward raise; `keep=` in
  record drops what the inputs that need a gradient do not use; tests/test_what_ops_save.py);
- `batch`: the name of its vmap batching rule in kit/func/_rules*.py (`@batch_rule("name")`); a
  composite has none, it batches through its primitives;
- `methods`: Tensor method names; an item `(name, spelling)` adapts the function (`reflected`
  for `__radd__`, `dims` for PyTorch's `dim=`/`keepdim=`, ...);
- `inplace`: in-place method names (`add_`, `__iadd__`), `fast`: the NumPy in-place operator used
  when nothing records (`operator.iadd`); an item `(name, spelling)` runs `spelling(op)` in
  place of the op;
- `torch`, `mx`: the names kit.torch and kit.mx.nd publish it under (a name, a tuple, or None);
- `expr`: for an elementwise primitive, its forward as `expr(xp, *args)` on its positional
  arguments once they share one dtype (the array computation, written so that it also runs on
  kit.compiler's symbolic values: operators, `xp.<ufunc>`, `xp.where`); kit.compile runs it on
  arrays and fuses chains of such ops into one kernel (kit/compiler/expr.py);
- `array`: for a primitive that is not elementwise, its forward on arrays as kit.compile replays
  it, `array(xp, *args) -> (output, kept)`: `kept` holds what the node saves that the op made
  itself (cross_entropy's probabilities), in the order saved; `()` for most ops. It must check
  what depends on values (an out-of-range class index), as the primitive does;
- `profile`: for a primitive that is not public (var's `variance`), the public op's name that a
  profile shows (aten::var in PyTorch's spelling, var in MXNet's).

`primitive` gives the forward the one line where a primitive meets vmap, a first statement
`if VMAP.depth: return VMAP.dispatch(name, fn, *args)` (one attribute read while no vmap
runs); `composite` only registers. Generated from `OPS`, once at import: kit.ops's namespace
(kit/ops/__init__.py), the Tensor methods (kit/_tensor_methods.py), kit.torch's and kit.mx.nd's
names, the vmap rule table (kit/func/_rules.py) and the generic tests (tests/test_op_registry.py,
with the sample inputs in tests/op_samples.py).
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from dataclasses import dataclass

from kit.engine import SAVED_NAMES
from kit.ops._vmap import VMAP

OPS = {}  # op name -> Op, in declaration order


@dataclass(frozen=True)
class Op:
    """One op's declaration."""

    name: str  # the node's op name (grad_fn names, vmap's rule table)
    fn: object  # the public function
    kind: str  # "primitive" or "composite"
    grad: object = None
    saves: str = ""
    batch: str | None = None
    methods: tuple = ()
    inplace: tuple = ()
    fast: object = None
    torch: tuple = ()
    mx: tuple = ()
    public: bool = True  # exported by kit.ops (and so kit)
    expr: object = None  # elementwise forward, expr(xp, *args), for kit.compile
    array: object = None  # non-elementwise forward on arrays, for kit.compile
    profile: str | None = None  # a profile's name for an internal primitive of a public op


def _names(value):
    if value is None:
        return ()
    return (value,) if isinstance(value, str) else tuple(value)


def _check_new(name):
    if name in OPS:
        raise ValueError(f"kit.ops: the op {name!r} is declared twice")


def _register(name, fn, kind, **fields):
    _check_new(name)
    for key in ("torch", "mx", "methods", "inplace"):
        fields[key] = _names(fields.get(key))
    OPS[name] = Op(name, fn, kind, **fields)
    if fields.get("saves"):
        SAVED_NAMES[name] = tuple(fields["saves"].split(", "))
    return fn


_HOOK = "if VMAP.depth:\n    return VMAP.dispatch({name!r}, {py}, {args})\n"


def _with_vmap_hook(name, forward):
    """`forward` with the vmap test as its first statement:
    `if VMAP.depth: return VMAP.dispatch(name, fn, *args)`.

    NOTE: a wrapper that calls forward would add a Python call to every op (about 5% of a tiny
    one), so forward's own source is recompiled with the test put in front: a call costs one
    attribute test, as the hand-written line did. The source, file and line numbers stay
    forward's own, so tracebacks and debuggers show the family file. Without source (a function
    made by exec), the plain wrapper does the same, one call slower.
    """
    code = forward.__code__
    if code.co_kwonlyargcount or code.co_flags & inspect.CO_VARKEYWORDS:
        raise TypeError(f"kit.ops: primitive {name!r} may not take keyword-only arguments")
    args = list(code.co_varnames[: code.co_argcount])
    if code.co_flags & inspect.CO_VARARGS:  # reshape(x, *shape)
        args.append("*" + code.co_varnames[code.co_argcount])
    args = ", ".join(args)
    try:
        lines, first = inspect.getsourcelines(forward)
    except (OSError, TypeError):
        fn = _call_through(forward, _HOOK.format(name=name, py=forward.__name__, args=args), args)
    else:
        # NOTE: the hook names the function by its def name, which the maker below binds: a
        # factory's functions (elementwise.py's _unary, used from other family files too) are
        # found there, not in the globals of the module that defines the factory.
        hook = _HOOK.format(name=name, py=code.co_name, args=args)
        fn = _recompiled(forward, hook, "".join(lines), first)
    fn.__defaults__ = forward.__defaults__
    fn.__name__, fn.__qualname__, fn.__doc__ = forward.__name__, forward.__name__, forward.__doc__
    fn.__wrapped__ = forward
    return fn


def _recompiled(forward, hook, source, first):
    indent = len(source) - len(source.lstrip())
    fdef = ast.parse(textwrap.dedent(source)).body[0]
    ast.increment_lineno(fdef, first - 1)
    if fdef.decorator_list:  # not run again; the function still starts where forward does
        fdef.lineno = fdef.decorator_list[0].lineno
        fdef.decorator_list = []
    for node in ast.walk(fdef):
        if hasattr(node, "col_offset"):
            node.col_offset += indent
            node.end_col_offset += indent
    test = ast.parse(hook).body
    for node in test:
        ast.copy_location(node, fdef)
    start = 1 if ast.get_docstring(fdef) is not None else 0
    fdef.body[start:start] = test
    # forward's free variables (a factory's op name, compute and rule) become the parameters of
    # a maker that returns the new function, so its closure holds the same values.
    free = forward.__code__.co_freevars
    maker = ast.parse(f"def _make(VMAP, {', '.join(free)}): pass").body[0]
    maker.body = [fdef, ast.Return(ast.Name(fdef.name, ast.Load()))]
    module = ast.fix_missing_locations(ast.Module([maker], type_ignores=[]))
    namespace = {}
    exec(compile(module, forward.__code__.co_filename, "exec"), forward.__globals__, namespace)
    cells = [cell.cell_contents for cell in forward.__closure__ or ()]
    return namespace["_make"](VMAP, *cells)


def _call_through(forward, hook, args):
    source = f"def {forward.__name__}({args}):\n" + textwrap.indent(hook, "    ")
    source += f"    return forward({args})\n"
    namespace = {"VMAP": VMAP, "forward": forward, "__name__": forward.__module__}
    exec(source, namespace)
    return namespace[forward.__name__]


def declare(name, forward, **fields):
    """Declare the primitive `name` computed by `forward`; returns the public function."""
    _check_new(name)
    return _register(name, _with_vmap_hook(name, forward), "primitive", **fields)


def primitive(name, **fields):
    """Decorator form of `declare`."""
    return lambda forward: declare(name, forward, **fields)


def composite(name, **fields):
    """Decorator: register an op built from primitives (no gradient code, no vmap rule)."""
    return lambda fn: _register(name, fn, "composite", **fields)


def published(front_end):
    """(name, Op) for every name `front_end` ("torch" or "mx") publishes, in declaration order."""
    return [(n, op) for op in OPS.values() for n in getattr(op, front_end)]


# --- method spellings: how a Tensor method adapts the function ------------------------------
def reflected(fn):
    """`__radd__`: `2 + t` calls `t.__radd__(2)`, which is add(2, t)."""

    def method(self, other):
        return fn(other, self)

    return method


def dims(fn):
    """PyTorch's and NumPy's spellings: `x.sum(dim, keepdim)` or `x.sum(axis=, keepdims=)`."""

    def method(self, dim=None, keepdim=False, *, axis=None, keepdims=None):
        return fn(self, axis if axis is not None else dim,
                  keepdims if keepdims is not None else keepdim)

    return method


def with_dim(fn):
    """`x.softmax(dim, dtype=None)`: PyTorch's method has no default dim (kit.softmax's is -1);
    `dtype` converts the input first."""

    def method(self, dim, dtype=None):
        return fn(self if dtype is None else self.to(dtype), dim)

    return method


def with_alpha(fn):
    """PyTorch's `x.add(y, alpha=a)`, x + a * y; the scaling is an op, so it is differentiable.
    A tensor y is scaled in the dtype of x + y, as PyTorch's (a uint8 y times 2 does not wrap),
    after the op's own operand check (`check`, sub's refusal of bool)."""
    from kit._promotion import result_type
    from kit.ops.elementwise import mul
    from kit.ops.movement import astype

    def method(self, other, alpha=1):
        if alpha == 1:
            return fn(self, other)
        if not hasattr(other, "shape"):  # a number is scaled as a number: x.sub(1, alpha=2)
            return fn(self, other * alpha)
        check = getattr(fn, "check", None)
        if check is not None:
            check(self, other)
        dtype = result_type(self, other)
        return fn(self, mul(other if other.dtype == dtype else astype(other, dtype), alpha))

    return method


def equality(answer):
    """`t == other` / `t != other`; with a non-operand (None, a string) PyTorch's plain answer
    instead of an error, so that `t in [None, "a"]` works."""

    def spelling(fn):
        def method(self, other):
            try:
                return fn(self, other)
            except TypeError:  # raised only for an unsupported operand type
                return answer

        return method

    return spelling
