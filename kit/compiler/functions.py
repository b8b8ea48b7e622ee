"""Custom Functions in a compiled graph: opaque nodes, unless they say they are elementwise.

A user's Function (kit.Function, an MXNet CustomOp) runs its own Python, so kit.compile cannot
see into it: it is replayed through the engine as one opaque node (an "island" step). A
kit.Function that declares `elementwise = True` promises that its forward and backward are made
of kit's elementwise ops only. Its forward and backward are then traced once, together, into
elementwise steps, which give it what a primitive of the registry has: an expression form (the
forward) and a gradient rule (its own backward, not the derivative of its forward, so a custom
gradient stays custom). It joins fused kernels and replays without Tensors, like a built-in op.

>>> import kit
>>> class Swish(kit.Function):
...     elementwise = True
...     @staticmethod
...     def forward(ctx, x):
...         ctx.save_for_backward(x)
...         return x * x.sigmoid()
...     @staticmethod
...     def backward(ctx, g):
...         (x,) = ctx.saved_tensors
...         s = x.sigmoid()
...         return g * (s + x * s * (1 - s))
>>> f = kit.compile(lambda x: Swish.apply(x * 2).exp())
>>> _ = f(kit.tensor([0.5, 1.0]))
>>> f.explain()["groups"][0]["ops"]
['mul', 'Swish', 'exp']
"""

from __future__ import annotations

import numpy as np

from kit import backend
from kit._function_call import bind
from kit._function_ctx import FunctionCtx
from kit._tensor import Tensor
from kit.compiler.expr import Expr
from kit.compiler.graph import Ref, substitute
from kit.compiler.guards import CompileError
from kit.grad_mode import no_grad


def elementwise_form(cls, args, kwargs, out, new_tracer):
    """(inputs, expr, rule) of an elementwise Function called on `args` (its positional inputs,
    the expression form `expr(xp, *inputs)` and the rule `rule(node, g, *inputs)`), or None when
    its forward or backward is not made of elementwise ops only."""
    from kit.function import _backward_of, _separate_form

    separate = _separate_form(cls)
    inputs, _, _, _ = bind(cls, separate, args, kwargs)
    if kwargs or not isinstance(out, Tensor):
        return None
    positions = [i for i, a in enumerate(inputs) if isinstance(a, Tensor)]
    leaves = [Tensor(inputs[i]._data) for i in positions]
    g = Tensor(backend.get_array_module(out._data).ones_like(out._data))
    tracer = new_tracer(cls.__name__)
    forward_steps = set()

    def both(*tensors):
        values = list(inputs)
        for i, t in zip(positions, tensors, strict=False):
            values[i] = t
        ctx = FunctionCtx()
        object.__setattr__(ctx, "needs_input_grad", tuple(i in positions
                                                            for i in range(len(values))))
        with no_grad():
            y = cls.forward(*values) if separate else cls.forward(ctx, *values)
            if separate:
                cls.setup_context(ctx, tuple(values), y)
            forward_steps.update(id(s) for s in tracer.graph.steps)
            grads = _backward_of(cls)(ctx, tensors[-1])
        return y, grads if isinstance(grads, tuple) else (grads,)

    try:
        graph = tracer.finish(tracer.run(both, leaves + [g], {}, leaves + [g]))
    except CompileError:
        return None
    if graph.breaks or graph.captured or any(s.kind != "op" or s.expr is None
                                             for s in graph.steps):
        return None
    slots = graph.inputs  # the tensor inputs, then g
    steps = graph.steps
    forward = [s for s in steps if id(s) in forward_steps]
    out_ref, grad_refs = graph.outputs[0], graph.outputs[1:]

    def evaluate(chosen, values):
        env = dict(zip(slots, values, strict=True))
        xp = np if any(isinstance(v, (Expr, np.ndarray)) for v in values) else \
            backend.get_array_module(*[v for v in values if hasattr(v, "shape")])
        for step in chosen:
            env[step.outs[0]] = step.expr(xp, *substitute(step.args, env.__getitem__))
        return env

    def expr(xp, *values):
        env = evaluate(forward, [values[i] for i in positions] + [None])
        return env[out_ref.slot]

    def rule(node, g, *values):
        env = evaluate(steps, [values[i] for i in positions] + [g])
        found = [env[r.slot] if isinstance(r, Ref) else None for r in grad_refs]
        found += [None] * (len(positions) - len(found))
        result = [None] * len(values)
        for i, grad in zip(positions, found, strict=False):
            result[i] = grad
        return tuple(result)

    if not isinstance(out_ref, Ref):
        return None
    with np.errstate(all="ignore"):
        check = expr(backend.get_array_module(out._data),
                     *[a._data if isinstance(a, Tensor) else a for a in inputs])
    if not (check.shape == out.shape and check.dtype == out.dtype):
        return None
    return inputs, expr, rule
