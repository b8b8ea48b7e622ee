"""How `Function.apply` binds its arguments, and the corrected line shown when a Function is
called the wrong way (an instance called, a class passed to vmap)."""

from __future__ import annotations

import ast
import inspect
import linecache
import weakref


def bind(cls, separate, args, kwargs):
    """Forward's arguments as one positional tuple, defaults filled in (setup_context's inputs),
    how many of them backward must return gradients for, and the (args, kwargs) to call forward
    with (keyword-only parameters stay keywords).

    As in PyTorch, the separate form counts every argument, defaults included; the combined form
    counts only those the caller passed (a default left out needs no gradient slot).
    """
    try:
        sig, params, plain = _forward_signature(cls, separate)
    except (TypeError, ValueError):
        return args, len(args), args, kwargs
    if plain and not kwargs and len(args) == len(params):
        return args, len(args), args, kwargs  # every parameter passed by position: nothing to bind
    try:
        bound = sig.bind(*args, **kwargs)
    except TypeError as exc:
        hint = _ctx_hint(cls, separate)
        raise TypeError(f"{cls.__name__}.apply: {exc} (forward{sig}){hint}") from None
    passed = set(bound.arguments)
    bound.apply_defaults()
    values = []
    given = 0
    for p in params:
        v = bound.arguments.get(p.name)
        if p.kind is p.VAR_POSITIONAL:
            values.extend(v or ())
        elif p.kind is p.VAR_KEYWORD:
            if v:
                raise TypeError(f"{cls.__name__}.apply: **kwargs in forward are not supported")
        else:
            values.append(v)
        if p.name in passed:
            given = len(values)
    return tuple(values), len(values) if separate else given, bound.args, bound.kwargs


_SIGNATURES = weakref.WeakKeyDictionary()  # forward function -> {separate: _forward_signature}


def _forward_signature(cls, separate):
    """forward's signature without ctx, its parameters, and whether all of them are plain
    positional ones; cached per forward function (inspect.signature costs more than the rest of
    apply)."""
    forward = cls.forward
    try:
        per_form = _SIGNATURES.setdefault(forward, {})
    except TypeError:  # not weak-referenceable: no cache
        per_form = {}
    found = per_form.get(separate)
    if found is None:
        sig = inspect.signature(forward)
        params = list(sig.parameters.values())
        if not separate and params:
            params = params[1:]  # ctx
        plain = all(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params)
        found = per_form[separate] = (sig.replace(parameters=params), params, plain)
    return found


def _ctx_hint(cls, separate):
    """Why binding failed when a separate-form forward still takes ctx (seed 001's mistake)."""
    try:
        first = next(iter(inspect.signature(cls.forward).parameters), None)
    except (TypeError, ValueError):
        first = None
    if not separate or first not in ("ctx", "self"):
        return ""
    return (
        f". {cls.__name__} defines setup_context, so forward must not take ctx: its first "
        f"parameter {first!r} received your first input. Fix: drop {first!r} from forward "
        f"(do ctx work in setup_context(ctx, inputs, output)), or drop setup_context and keep "
        f"forward(ctx, ...)"
    )


def caller_call_tree(frame):
    """The caller's source line, parsed; None when it cannot be read (a REPL) or parsed (a
    multi-line call)."""
    line = linecache.getline(frame.f_code.co_filename, frame.f_lineno).strip()
    try:
        return ast.parse(line)
    except SyntaxError:
        return None


def corrected_line(frame, instance):
    """The caller's source line with its call on `instance` rewritten to `Cls.apply`, or None
    when the line cannot be read or parsed (a multi-line call, code typed into a REPL)."""
    tree = caller_call_tree(frame)
    if tree is None:
        return None
    cls = type(instance).__name__
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        callee = node.func
        named = isinstance(callee, ast.Name) and (
            frame.f_locals.get(callee.id, frame.f_globals.get(callee.id)) is instance
        )
        constructed = (  # MyFn()(x): the callee is itself a call of the class
            isinstance(callee, ast.Call) and isinstance(callee.func, ast.Name)
            and callee.func.id == cls
        )
        if named or constructed:
            node.func = ast.Attribute(ast.Name(cls, ast.Load()), "apply", ast.Load())
            return ast.unparse(tree)
    return None
