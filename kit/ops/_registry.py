"""The op registry: every op is declared once, in its family file, and the rest is generated.

A declaration says everything about an op (PyTorch's OpInfo, HIPS autograd's defvjp table):

    @primitive("log", grad=_log_rule, saves="x", batch="elementwise", methods=("log",),
               torch="log", mx="log")
    def log(x): ...

- `grad`: the gradient rule, `rule(node, g, *saved)` (see _record.py); None for an op with no
  gradient (comparisons, argmax) or a composite (its primitives own the gradient);
- `saves`: what the forward keeps for backward ("x", "output", "a, b", "" for nothing);
- `batch`: the name of its vmap batching rule in kit/func/_rules*.py (`@batching("name")`); a
  composite has none, it batches through its primitives;
- `methods`: Tensor method names; an item `(name, spelling)` adapts the function (`reflected`
  for `__radd__`, `dims` for PyTorch's `dim=`/`keepdim=`, ...);
- `inplace`: in-place method names (`add_`, `__iadd__`), `fast`: the NumPy in-place operator used
  when nothing records (`operator.iadd`);
- `torch`, `mx`: the names kit.torch and kit.mx.nd publish it under (a name, a tuple, or None).

`primitive` wraps the forward in a function with the same signature that first tests
`VMAP.depth` (one attribute read while no vmap runs) and otherwise calls the forward: the one
place where a primitive meets vmap. `composite` only registers. Generated from `OPS`, once at
import: kit.ops's namespace (kit/ops/__init__.py), the Tensor methods (kit/_tensor_methods.py),
kit.torch's and kit.mx.nd's names, the vmap rule table (kit/func/_rules.py) and the generic tests
(tests/test_op_registry.py, sample inputs in tests/op_samples.py).
"""

from __future__ import annotations

from dataclasses import dataclass

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


def _names(value):
    if value is None:
        return ()
    return (value,) if isinstance(value, str) else tuple(value)


def _register(name, fn, kind, **fields):
    if name in OPS:
        raise ValueError(f"kit.ops: the op {name!r} is declared twice")
    for key in ("torch", "mx", "methods", "inplace"):
        fields[key] = _names(fields.get(key))
    OPS[name] = Op(name, fn, kind, **fields)
    return fn


_WRAPPER = """\
def {py}({params}):
    if VMAP.depth:
        return VMAP.dispatch({name!r}, {py}, {args})
    return forward({args})
"""


def _with_vmap_hook(name, forward):
    """`forward` behind the vmap test, as a function with forward's own signature and defaults
    (generated source, so that a call costs one test and one call, no *args packing)."""
    code = forward.__code__
    if code.co_kwonlyargcount or code.co_flags & 0x08:  # CO_VARKEYWORDS
        raise TypeError(f"kit.ops: primitive {name!r} may not take keyword-only arguments")
    args = list(code.co_varnames[: code.co_argcount])
    if code.co_flags & 0x04:  # CO_VARARGS: reshape(x, *shape)
        args.append("*" + code.co_varnames[code.co_argcount])
    py = forward.__name__
    namespace = {"VMAP": VMAP, "forward": forward}
    exec(_WRAPPER.format(py=py, name=name, params=", ".join(args), args=", ".join(args)),
         namespace)
    fn = namespace[py]
    fn.__defaults__ = forward.__defaults__
    fn.__doc__, fn.__module__, fn.__qualname__ = forward.__doc__, forward.__module__, py
    fn.__wrapped__ = forward
    return fn


def declare(name, forward, **fields):
    """Declare the primitive `name` computed by `forward`; returns the public function."""
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


def last_dim(fn):
    """`x.softmax(dim=-1)`."""

    def method(self, dim=-1):
        return fn(self, dim)

    return method


def with_alpha(fn):
    """PyTorch's `x.add(y, alpha=a)`, x + a * y; the scaling is an op, so it is differentiable."""
    from kit.ops.elementwise import mul

    def method(self, other, alpha=1):
        return fn(self, other if alpha == 1 else mul(other, alpha))

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
