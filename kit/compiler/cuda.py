"""CUDA kernels of fused groups: CuPy's ElementwiseKernel, and ReductionKernel for a group that
ends in a sum. The expressions are printed as CUDA C (kit/compiler/expr.py's vocabulary); NaN
behaves as in NumPy (max and min pass it on, sign keeps it). CuPy is reached through
kit.backend.require_gpu, so a machine without a GPU never imports it.
"""

from __future__ import annotations

import hashlib
import math

from kit import backend
from kit.compiler import kernels
from kit.compiler.expr import Expr
from kit.compiler.kernels import INFIX, Kernel, arity, assignments, input_dtypes

_C_TYPES = {"f4": "float", "f8": "double", "b1": "bool", "i8": "long long", "i4": "int"}
_C_CALLS = {"exp": "exp", "log": "log", "log1p": "log1p", "expm1": "expm1", "sqrt": "sqrt",
            "tanh": "tanh", "sin": "sin", "cos": "cos", "isnan": "isnan", "abs": "fabs",
            "pow": "pow"}
_C_INFIX = {**INFIX, "and": "&&", "or": "||", "xor": "!="}


class _C:
    """Prints an expression node as CUDA C."""

    @staticmethod
    def literal(value, node):
        if isinstance(value, bool):
            return "true" if value else "false"
        text = repr(float(value)) if math.isfinite(value) else (
            "(0.0 / 0.0)" if value != value else ("(1.0 / 0.0)" if value > 0 else "(-1.0 / 0.0)"))
        dtype = node.dtype if node.dtype.kind in "fiu" else next(
            (a.dtype for a in node.args if isinstance(a, Expr) and a.dtype.kind != "b"), None)
        return f"(({_C_TYPES[dtype.str[1:]]}){text})" if dtype is not None else text

    @staticmethod
    def op(e, a):
        op = e.op
        if op == "pow" or op in _C_CALLS:
            text = f"{_C_CALLS[op]}({', '.join(a)})"
        elif op in _C_INFIX:
            text = f"({a[0]} {_C_INFIX[op]} {a[1]})"
        elif op == "neg":
            text = f"(-{a[0]})"
        elif op == "not":
            text = f"(!{a[0]})"
        elif op == "where":
            text = f"({a[0]} ? {a[1]} : {a[2]})"
        elif op in ("max", "min"):
            cmp = ">" if op == "max" else "<"
            text = f"(({a[0]} {cmp} {a[1]} || {a[0]} != {a[0]}) ? {a[0]} : {a[1]})"
        elif op == "sign":
            text = f"({a[0]} > 0 ? 1 : ({a[0]} < 0 ? -1 : ({a[0]} != {a[0]} ? {a[0]} : 0)))"
        elif op == "cast":
            text = f"({a[0]} != 0)" if e.dtype.kind == "b" else a[0]
        else:
            raise NotImplementedError(op)
        return text if e.dtype.kind == "b" else f"(({_C_TYPES[e.dtype.str[1:]]}){text})"


def _tiny(cupy, group, dtypes):
    """One-element inputs of the group's rank: a first call that makes CuPy compile."""
    return [cupy.zeros((1,) * len(group.shape), d) for d in dtypes]


def _name(prefix, key):
    """A kernel name fixed by its source (CuPy's on-disk cache then serves later processes)."""
    return f"{prefix}_{hashlib.sha1(repr(key).encode()).hexdigest()[:12]}"


def cuda_source(group, roots):
    """(in_params, out_params, operation) of the ElementwiseKernel for `roots`."""
    n_in = arity(group, roots)
    dtypes = input_dtypes(group, roots, n_in)
    lines, results = assignments(roots, _C)
    in_params = ", ".join(f"{d.name} i{k}" for k, d in enumerate(dtypes))
    out_params = ", ".join(f"{r.dtype.name} o{k}" for k, r in enumerate(roots))
    body = [f"{_C_TYPES[e.dtype.str[1:]]} {name} = {text};" for name, e, text in lines]
    body += [f"o{k} = {name};" for k, name in enumerate(results)]
    return in_params, out_params, "\n".join(body), dtypes


def cuda_kernel(group, roots, which):
    in_params, out_params, operation, dtypes = cuda_source(group, roots)
    key = ("cuda", in_params, out_params, operation)
    compiled = kernels.CACHE.get(key)
    if compiled is None:
        cupy = backend.require_gpu("a fused kit.compile kernel")
        compiled = cupy.ElementwiseKernel(in_params, out_params, operation, _name("kit_fused", key))
        compiled(*_tiny(cupy, group, dtypes))  # CuPy compiles on the first call: fail here
        kernels.CACHE[key] = compiled
    source = f"// {which}\n// in: {in_params}\n// out: {out_params}\n{operation}\n"
    return Kernel(compiled, source, len(roots), quiet=True)  # the fake CuPy: NumPy inside


def cuda_reduction(group):
    """The forward and the sum after it as one ReductionKernel: the group's expression is a
    device function that the reduction maps over the elements."""
    in_params, out_params, operation, dtypes = cuda_source(group, group.forward)
    ctype = _C_TYPES[group.forward[0].dtype.str[1:]]
    names = [f"i{k}" for k in range(len(dtypes))]
    args = ", ".join(f"{_C_TYPES[d.str[1:]]} {n}" for d, n in zip(dtypes, names, strict=True))
    preamble = f"__device__ {ctype} kit_fused_map({args}) {{\n" + \
        operation.replace("o0 = ", "return ") + "\n}"
    keepdims = bool(group.reduce_step.args[2]) if len(group.reduce_step.args) > 2 else False
    key = ("cuda-reduction", in_params, out_params, preamble)
    compiled = kernels.CACHE.get(key)
    if compiled is None:
        cupy = backend.require_gpu("a fused kit.compile kernel")
        compiled = cupy.ReductionKernel(
            in_params, out_params, f"kit_fused_map({', '.join(names)})", "a + b", "o0 = a", "0",
            _name("kit_fused_sum", key), reduce_type=ctype, preamble=preamble)
        compiled(*_tiny(cupy, group, dtypes), axis=group.reduce_axes)  # compiles it, or fails
        kernels.CACHE[key] = compiled
    axes = group.reduce_axes
    source = f"// forward and sum over axes {axes}\n{preamble}\n"
    return Kernel(lambda *arrays: compiled(*arrays, axis=axes, keepdims=keepdims), source, 1,
                   quiet=True)
