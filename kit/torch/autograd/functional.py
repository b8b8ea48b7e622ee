"""`torch.autograd.functional`: vjp, jvp, jacobian, hessian, vhp and hvp of a function of
tensors, on kit's reverse pass (`kit.grad`).

As in PyTorch, `inputs` is a Tensor or a tuple of them, and each result has the structure of the
inputs (and outputs); inputs and results are detached from any outer graph unless
`create_graph=True`. jvp and hvp use the double-backward trick (J^T u is linear in u, and its
gradient against v is J v), so they need differentiable backward rules, which every kit
primitive has. `strict=True` refuses an output that does not depend on an input.

>>> import kit.torch as torch
>>> torch.autograd.functional.jacobian(lambda x: x ** 2, torch.tensor([1.0, 2.0]))
tensor([[2., 0.],
        [0., 4.]])
"""

from __future__ import annotations

from kit._creation import ones_like, zeros, zeros_like
from kit._tensor import Tensor
from kit.autograd import grad as _grad
from kit.grad_mode import enable_grad, no_grad
from kit.ops.movement import reshape, stack

__all__ = ["hessian", "hvp", "jacobian", "jvp", "vhp", "vjp"]


def _tuple(value, what):
    values = (value,) if isinstance(value, Tensor) else tuple(value)
    if not all(isinstance(v, Tensor) for v in values):
        raise TypeError(f"torch.autograd.functional: {what} must be a Tensor or a tuple of "
                        f"Tensors, got {type(value).__name__}")
    return values


def _prepared(inputs, create_graph):
    """Fresh leaves that require grad; with create_graph, views that keep the outer graph."""
    return tuple(x.view_as(x) if create_graph and x.requires_grad
                 else x.detach().requires_grad_(True) for x in inputs)


def _call(func, xs):
    with enable_grad():
        return func(*xs)


def _grads(outputs, xs, cotangents, create_graph, strict, who):
    """d(sum of outputs * cotangents) / d xs, zeros where an input has no effect."""
    pairs = [(o, u) for o, u in zip(outputs, cotangents, strict=True) if o.requires_grad]
    found = _grad([o for o, _ in pairs], xs, [u for _, u in pairs], retain_graph=True,
                  create_graph=create_graph, allow_unused=True) if pairs else (None,) * len(xs)
    result = []
    for i, (x, g) in enumerate(zip(xs, found, strict=True)):
        if g is None:
            if strict:
                raise RuntimeError(f"torch.autograd.functional.{who}: the output of the function "
                                   f"is independent of input {i}, which strict=True refuses")
            g = zeros_like(x)
        result.append(g)
    return tuple(result)


def _vectors(v, like, who, what):
    """v as a tuple shaped as `like`; None only where `like` holds one single-element tensor."""
    if v is None:
        if len(like) != 1 or like[0].numel() != 1:
            raise RuntimeError(f"torch.autograd.functional.{who}: v can be omitted only when "
                               f"the {what} is a single-element tensor. Fix: pass v")
        return (ones_like(like[0]),)
    vs = _tuple(v, "v")
    if len(vs) != len(like) or any(a.shape != b.shape for a, b in zip(vs, like, strict=True)):
        raise RuntimeError(f"torch.autograd.functional.{who}: v must have the shapes of the "
                           f"{what}: {[tuple(t.shape) for t in like]}, got "
                           f"{[tuple(t.shape) for t in vs]}")
    return vs


def _out(values, create_graph, single):
    values = tuple(v if create_graph else v.detach() for v in values)
    return values[0] if single else values


def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), v^T J): the vector-Jacobian product."""
    xs = _prepared(_tuple(inputs, "inputs"), create_graph)
    out = _call(func, xs)
    outs = _tuple(out, "the function's output")
    vs = _vectors(v, outs, "vjp", "output")
    grads = _grads(outs, xs, vs, create_graph, strict, "vjp")
    return (_out(outs, create_graph, isinstance(out, Tensor)),
            _out(grads, create_graph, isinstance(inputs, Tensor)))


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), J v): the Jacobian-vector product."""
    xs = _prepared(_tuple(inputs, "inputs"), create_graph)
    vs = _vectors(v, xs, "jvp", "input")
    out = _call(func, xs)
    outs = _tuple(out, "the function's output")
    us = tuple(zeros_like(o, requires_grad=True) for o in outs)  # J^T u is linear in u
    pullback = _grads(outs, xs, us, True, strict, "jvp")
    tangents = _grads(pullback, us, vs, create_graph, strict, "jvp")
    return (_out(outs, create_graph, isinstance(out, Tensor)),
            _out(tangents, create_graph, isinstance(out, Tensor)))


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False,
             strategy="reverse-mode"):
    """The Jacobian, of shape output.shape + input.shape for each (output, input) pair: a
    Tensor for one input and one output, else tuples (over outputs, then over inputs).
    (`vectorize` and `strategy` choose how PyTorch computes it; kit's answer is the same.)"""
    xs = _prepared(_tuple(inputs, "inputs"), create_graph)
    out = _call(func, xs)
    outs = _tuple(out, "the function's output")
    blocks = []
    for o in outs:
        flat = reshape(o, (-1,))
        rows = [_grads((flat[k],), xs, (None,), create_graph, strict, "jacobian")
                for k in range(flat.numel())]
        blocks.append(tuple(
            reshape(stack([row[i] for row in rows]), tuple(o.shape) + tuple(x.shape)) if rows
            else zeros(tuple(o.shape) + tuple(x.shape), dtype=x.dtype, device=x.device)
            for i, x in enumerate(xs)))
    per_output = [_out(b, create_graph, isinstance(inputs, Tensor)) for b in blocks]
    return per_output[0] if isinstance(out, Tensor) else tuple(per_output)


def _gradient_of(func, who, strict):
    """x -> d func(x) / dx (func returning one element), recorded for differentiating again."""
    def gradient(*xs):
        out = func(*xs)
        if not isinstance(out, Tensor) or out.numel() != 1:
            raise RuntimeError(f"torch.autograd.functional.{who}: the function must return a "
                               f"single-element Tensor")
        grads = _grads((out,), xs, (None,), True, strict, who)
        return grads[0] if len(grads) == 1 else grads

    return gradient


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False,
            outer_jacobian_strategy="reverse-mode"):
    """The Hessian of a function returning one element: input.shape + input.shape for one
    input, else a tuple of tuples (one block per pair of inputs)."""
    return jacobian(_gradient_of(func, "hessian", strict), inputs, create_graph, strict)


def _value(func, inputs):
    with no_grad():
        return func(*_tuple(inputs, "inputs"))


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), v^T H)."""
    product = vjp(_gradient_of(func, "vhp", strict), inputs, v, create_graph, strict)[1]
    return _value(func, inputs), product


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), H v)."""
    product = jvp(_gradient_of(func, "hvp", strict), inputs, v, create_graph, strict)[1]
    return _value(func, inputs), product
