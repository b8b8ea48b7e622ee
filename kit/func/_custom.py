"""Custom Functions under kit.func transforms (PyTorch's "Extending torch.func").

Under any transform a Function must use the separate form (forward without ctx, plus
setup_context). Under vmap it also needs a rule, exactly one of:

- `generate_vmap_rule = True`: forward, setup_context and backward run on BatchedTensors, so
  they must be written with kit operations (NumPy cannot see a batch). kit records one graph node
  for the whole batch whose backward runs the user's backward on batched gradients.
- a `vmap(info, in_dims, *args)` staticmethod returning `(output, out_dims)`: it receives the
  physical tensors (the batch at `in_dims`) and usually calls the Function again on the batch.
"""

from __future__ import annotations

from collections import namedtuple

from kit._function_call import bind
from kit._modes import Mode
from kit._tensor import Tensor
from kit.func._batched import (
    BatchedTensor,
    add_level,
    batching,
    levels_of,
    lift,
    lower,
    physical,
    sizes_of,
)
from kit.func._rules import union_levels, union_sizes
from kit.function import Function, _backward_of, _separate_form

VmapInfo = namedtuple("VmapInfo", ["batch_size", "randomness"])
_DOCS = "For more details, please see the 'Extending torch.func' part of lesson 10."


def function_apply(cls, args, kwargs):
    """Function.apply while a kit.func transform is active."""
    if not _separate_form(cls):
        raise RuntimeError(
            f"In order to use an autograd.Function with functorch transforms (vmap, grad, jvp, "
            f"jacrev, ...), it must override the setup_context staticmethod. {cls.__name__} "
            f"uses forward(ctx, ...). Fix: write forward(*args) without ctx and move the ctx "
            f"work into setup_context(ctx, inputs, output). {_DOCS}"
        )
    inputs = bind(cls, True, args, kwargs)[0]
    if not any(type(a) is BatchedTensor for a in inputs):
        return _plain_apply(cls, inputs)
    has_vmap = cls.vmap is not Function.vmap
    if has_vmap and cls.generate_vmap_rule:
        raise RuntimeError(
            f"You tried to vmap over {cls.__name__}, but it has both generate_vmap_rule=True and "
            f"an overridden vmap staticmethod. Please set generate_vmap_rule=False or delete the "
            f"overridden vmap staticmethod to avoid ambiguity. {_DOCS}"
        )
    if has_vmap:
        return _with_vmap_staticmethod(cls, inputs)
    if cls.generate_vmap_rule:
        return _with_generated_rule(cls, inputs)
    raise RuntimeError(
        f"You tried to vmap over {cls.__name__}, but it does not have vmap support. Please "
        f"override and implement the vmap staticmethod or set generate_vmap_rule=True. {_DOCS}"
    )


class _untransformed(Mode):  # noqa: N801
    """Function.apply runs as outside any transform (none of its inputs is batched)."""

    __slots__ = ()

    def switches(self, state):
        return {"transforms": 0}


def _plain_apply(cls, inputs):
    with _untransformed():
        return cls.apply(*inputs)


# --- the user's vmap staticmethod: one level at a time ----------------------------------------
def _with_vmap_staticmethod(cls, inputs):
    level = max(lv for a in inputs for lv in levels_of(a))
    in_dims, unwrapped, size = [], [], None
    for a in inputs:
        if type(a) is BatchedTensor and level in a.levels:
            # the innermost level's batch dim sits right before the per-sample dims, so without
            # that level it is the first per-sample dim: in_dim 0, no data movement
            size = sizes_of(a)[level]
            rest = a.levels[:-1]
            unwrapped.append(BatchedTensor(a.value, rest) if rest else a.value)
            in_dims.append(0)
        else:
            unwrapped.append(a)
            in_dims.append(None)
    result = cls.vmap(VmapInfo(size, "error"), tuple(in_dims), *unwrapped)
    if not (isinstance(result, tuple) and len(result) == 2):
        raise RuntimeError(
            f"{cls.__name__}.vmap must return a tuple (output, out_dims), got "
            f"{type(result).__name__}. Fix: return the output and where its batch dim is, e.g. "
            f"`return result, 0`"
        )
    output, out_dims = result
    single = not isinstance(output, tuple)
    outputs = (output,) if single else output
    dims = (out_dims,) * len(outputs) if not isinstance(out_dims, tuple) else out_dims
    if len(dims) != len(outputs):
        raise RuntimeError(
            f"{cls.__name__}.vmap returned {len(outputs)} outputs but {len(dims)} out_dims. "
            f"Fix: give one out_dim (or None) per output"
        )
    wrapped = []
    for o, d in zip(outputs, dims, strict=True):
        if d is None or not isinstance(o, Tensor):
            wrapped.append(o)
            continue
        wrapped.append(add_level(o, level, d))
    return wrapped[0] if single else tuple(wrapped)


# --- generate_vmap_rule = True: the user's code on BatchedTensors ------------------------------
def _with_generated_rule(cls, inputs):
    levels = union_levels(*inputs)
    sizes = union_sizes(*inputs)
    state = {"levels": [levels_of(a) if isinstance(a, Tensor) else None for a in inputs]}

    def rebatch(values, level_list):
        return [BatchedTensor(v, lv) if lv else v for v, lv in zip(values, level_list,
                                                                     strict=True)]

    def forward(*values):
        batched = rebatch(values, state["levels"])
        with batching(), _explained(cls, "forward"):
            out = cls.forward(*batched)
        outs = out if isinstance(out, tuple) else (out,)
        state.update(inputs=tuple(batched), output=out,
                     out_levels=[levels_of(o) for o in outs])
        result = tuple(physical(o) for o in outs)
        return result if isinstance(out, tuple) else result[0]

    def setup_context(ctx, _inputs, _output):
        with batching(), _explained(cls, "setup_context"):
            cls.setup_context(ctx, state["inputs"], state["output"])
        # the engine compares outputs and dirty inputs by identity with the physical tensors
        object.__setattr__(ctx, "_non_differentiable",
                           tuple(physical(t) for t in ctx._non_differentiable))
        object.__setattr__(ctx, "_dirty", tuple(physical(t) for t in ctx._dirty))

    def relay(method, name, ctx, values, in_levels, out_levels):
        """The user's backward (or jvp) on batched values; its results physical again."""
        batched = [None if v is None else lift(v, lv)
                   for v, lv in zip(values, in_levels, strict=True)]
        with batching(), _explained(cls, name):
            result = method(ctx, *batched)
        result = result if isinstance(result, tuple) else (result,)
        out = []
        for i, v in enumerate(result):
            lv = out_levels[i] if i < len(out_levels) else None
            if v is None or not isinstance(v, Tensor) or lv is None:
                out.append(v)
                continue
            with batching():
                out.append(lower(v, lv, levels, sizes))
        return tuple(out)

    def backward(ctx, *grads):
        return relay(_backward_of(cls), "backward", ctx, grads, state["out_levels"],
                     state["levels"])

    def jvp(ctx, *tangents):
        return relay(cls.jvp, "jvp", ctx, tangents, state["levels"], state["out_levels"])

    body = {
        "forward": staticmethod(forward),
        "setup_context": staticmethod(setup_context),
        "backward": staticmethod(backward),
        "frontend": getattr(cls, "frontend", Function.frontend),
        "__doc__": f"{cls.__name__} on a whole batch (generate_vmap_rule=True).",
    }
    if cls.jvp is not Function.jvp:  # kit.func.jvp calls it (kit/func/_function_jvp.py)
        body["jvp"] = staticmethod(jvp)
    vmapped = type(cls.__name__, (Function,), body)
    outputs = vmapped.apply(*(physical(a) for a in inputs))
    single = not isinstance(outputs, tuple)
    outs = (outputs,) if single else outputs
    wrapped = tuple(BatchedTensor(o, lv) if lv and isinstance(o, Tensor) else o
                    for o, lv in zip(outs, state["out_levels"], strict=True))
    return wrapped[0] if single else wrapped


class _explained:  # noqa: N801 - used like a function: `with _explained(...)`
    """Add to a vmap error raised inside a generated rule which Function and method it was."""

    def __init__(self, cls, method):
        self.cls, self.method = cls, method

    def __enter__(self):
        return self

    def __exit__(self, kind, exc, tb):
        if exc is not None and isinstance(exc, RuntimeError) and str(exc).startswith("vmap:"):
            name = self.cls.__name__
            raise RuntimeError(
                f"{name}.{self.method} under vmap with generate_vmap_rule=True: the generated "
                f"rule runs {name}.{self.method} on BatchedTensors, so it may only use kit "
                f"operations.\n{exc}"
            ) from None
        return False

