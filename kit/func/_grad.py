"""grad, grad_and_value, vjp, jacrev: reverse mode on kit's engine.

All of them run kit's reverse pass. Each differentiated input becomes a fresh leaf (or, when it
is already part of an enclosing graph, a recorded alias of it), so nested transforms never mix
up their gradients. Inside vmap the leaf is first expanded over every active batch level:
its gradient is then one gradient per sample instead of their sum (per-sample gradients).
"""

from __future__ import annotations

import functools

from kit._creation import ones_like, zeros_like
from kit._modes import STATE, Mode
from kit._tensor import Tensor
from kit.engine import run_backward
from kit.func._batched import (
    BatchedTensor,
    active_levels,
    expand_levels,
    levels_of,
    lift,
    lower,
    make,
    physical,
)
from kit.func._vmap import tree_flatten, vmap
from kit.grad_mode import enable_grad
from kit.ops import movement


class GradLevel(Mode):
    """The entry of one running grad-like transform (grad, vjp, jacrev): grad mode on, and
    `grad_levels` counted (a nested one keeps its graph for the enclosing one)."""

    __slots__ = ()

    def switches(self, state):
        return {"transforms": state.transforms + 1, "grad_levels": state.grad_levels + 1,
                "grad": True, "enabled": not state.inference}


class _Leaves:
    """The differentiated inputs of one transform call, as leaves of a fresh graph."""

    def __init__(self):
        self.sizes = active_levels()
        self.levels = tuple(self.sizes)
        self.physical = []
        self.connected = False

    def add(self, t, who):
        if not isinstance(t, Tensor):
            raise TypeError(
                f"{who}: can only differentiate with respect to Tensors, got "
                f"{type(t).__name__}. Fix: choose the tensor arguments with argnums"
            )
        x = expand_levels(t, self.levels, self.sizes) if self.levels else t
        value = physical(x)
        if value.requires_grad:  # part of an enclosing graph: a recorded alias keeps the link
            self.connected = True
            leaf = movement.reshape(value, value.shape)
        else:
            leaf = Tensor(value._data, requires_grad=True)
        self.physical.append(leaf)
        return make(leaf, levels_of(x))

    def pullback(self, outputs, cotangents, create_graph, retain_graph):
        """The gradient of sum(outputs * cotangents) with respect to each leaf."""
        roots, grads, batched = [], [], False
        for i, (out, ct) in enumerate(zip(outputs, cotangents, strict=True)):
            value = physical(out)
            if not (isinstance(value, Tensor) and value.requires_grad):
                continue
            if ct is None:
                g = ones_like(value)
            else:
                if tuple(ct.shape) != tuple(out.shape):
                    raise RuntimeError(
                        f"vjp: Mismatch in shape: cotangent {i} has a shape of {list(ct.shape)} "
                        f"and output {i} has a shape of {list(out.shape)}"
                    )
                g = lower(ct, levels_of(out), self.levels, self.sizes)
                batched = batched or type(g) is BatchedTensor
            roots.append(value._edge or value._leaf_edge())
            grads.append(g)
        differentiable = create_graph or batched
        if not differentiable:
            grads = [g._data for g in grads]
        edges = [leaf._edge or leaf._leaf_edge() for leaf in self.physical]
        capture = {}
        for i, edge in enumerate(edges):
            capture.setdefault(edge, i)
        found = (run_backward(roots, grads, retain_graph=retain_graph,
                              create_graph=differentiable, capture=capture)
                 if roots else [None] * len(capture))
        results = []
        for leaf, edge in zip(self.physical, edges, strict=True):
            g = found[capture[edge]]
            if g is None:
                g = zeros_like(leaf)
            elif not create_graph:
                g = g.detach()
            results.append(lift(g, self.levels))
        return results


def _argnums(argnums, n_args, who):
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    if not nums:
        raise RuntimeError(f"{who}: argnums must be non-empty")
    for a in nums:
        if not isinstance(a, int) or not -n_args <= a < n_args:
            raise RuntimeError(
                f"{who}: Got argnums={argnums!r}, but the function was called with {n_args} "
                f"positional arguments. Fix: argnums must index the positional arguments"
            )
    return tuple(a % n_args for a in nums)


def _detached(tree, keep):
    if keep:
        return tree
    leaves, rebuild = tree_flatten(tree)
    return rebuild([leaf.detach() if isinstance(leaf, Tensor) else leaf for leaf in leaves])


def with_args(args, nums, values):
    """`args` with args[n] replaced by the matching value, for each n in `nums` (jacrev and
    jacfwd differentiate with respect to those positions only)."""
    full = list(args)
    for n, v in zip(nums, values, strict=True):
        full[n] = v
    return full


def _split_aux(out, has_aux, who):
    if not has_aux:
        return out, None
    if not (isinstance(out, tuple) and len(out) == 2):
        raise RuntimeError(
            f"{who}: output of function f should be a tuple: (output, aux) if has_aux is True"
        )
    return out


def _substitute(args, argnums, leaves, who):
    """args with the tensors of args[argnums] replaced by leaves, and how to regroup grads."""
    args = list(args)
    groups = []
    for n in argnums:
        flat, rebuild = tree_flatten(args[n])
        args[n] = rebuild([leaves.add(t, who) for t in flat])
        groups.append((rebuild, len(flat)))
    return args, groups


def _regroup(grads, groups, argnums):
    out, i = [], 0
    for rebuild, count in groups:
        out.append(rebuild(grads[i:i + count]))
        i += count
    return out[0] if isinstance(argnums, int) else tuple(out)


# --- reverse mode ---------------------------------------------------------------------------
def grad_and_value(func, argnums=0, has_aux=False):
    """Like `grad`, returning `(gradient, value)` (`((gradient), (value, aux))` with has_aux).

    >>> import kit
    >>> from kit.func import grad_and_value
    >>> grad_and_value(lambda x: (x ** 3).sum())(kit.tensor([1.0, 2.0]))
    (tensor([ 3., 12.]), tensor(9.))
    """
    who = "grad_and_value(f)(*args)"

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        nums = _argnums(argnums, len(args), who)
        leaves = _Leaves()
        with GradLevel():
            nested = STATE.grad_levels > 1
            call_args, groups = _substitute(args, nums, leaves, who)
            out, aux = _split_aux(func(*call_args, **kwargs), has_aux, who)
            if not isinstance(out, Tensor):
                raise RuntimeError(
                    f"{who}: Expected f(*args) to return a Tensor, got {type(out).__name__}"
                )
            if out.ndim != 0:
                raise RuntimeError(
                    f"{who}: Expected f(*args) to return a scalar Tensor, got tensor with "
                    f"{out.ndim} dims. Maybe you wanted to use the vjp or jacrev APIs instead?"
                )
            keep = nested or leaves.connected
            grads = leaves.pullback([out], [None], keep, keep)
        value = _detached(out, keep)
        result = _regroup(grads, groups, argnums)
        if has_aux:
            return result, (value, _detached(aux, keep))
        return result, value

    return wrapper


def grad(func, argnums=0, has_aux=False):
    """The gradient of a scalar function: `grad(f)(x)` is df/dx, a function like f.

    `argnums` picks the argument(s) to differentiate (int or tuple); with `has_aux=True`, f returns
    `(output, aux)` and grad returns `(gradient, aux)`. Transforms nest: `grad(grad(f))`,
    `vmap(grad(f))` (per-sample gradients).

    >>> import kit
    >>> from kit.func import grad
    >>> grad(lambda x: (x ** 2).sum())(kit.tensor([1.0, 2.0]))
    tensor([2., 4.])
    >>> float(grad(grad(lambda x: x ** 3))(kit.tensor(2.0)))
    12.0
    """
    inner = grad_and_value(func, argnums, has_aux)

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        grads, value = inner(*args, **kwargs)
        return (grads, value[1]) if has_aux else grads

    return wrapper


def vjp(func, *primals, has_aux=False):
    """`(output, vjp_fn)`: vjp_fn(cotangent) is cotangent^T J, one tensor per primal.

    >>> import kit
    >>> from kit.func import vjp
    >>> out, vjp_fn = vjp(lambda x: x * 3, kit.tensor([1.0, 2.0]))
    >>> vjp_fn(kit.tensor([1.0, 10.0]))
    (tensor([ 3., 30.]),)
    """
    who = "vjp(f, *primals)"
    leaves = _Leaves()
    with GradLevel():
        nested = STATE.grad_levels > 1
        call_args, groups = _substitute(primals, range(len(primals)), leaves, who)
        out, aux = _split_aux(func(*call_args), has_aux, who)
    out_leaves = tree_flatten(out)[0]
    for leaf in out_leaves:
        if not isinstance(leaf, Tensor):
            raise RuntimeError(f"{who}: Expected f to return Tensors, got {type(leaf).__name__}")
    keep = nested or leaves.connected

    def vjp_fn(*cotangents):
        ct_leaves = tree_flatten(cotangents[0] if len(cotangents) == 1 else cotangents)[0]
        if len(ct_leaves) != len(out_leaves):
            raise RuntimeError(
                f"vjp_fn: expected one cotangent per output of f ({len(out_leaves)}), got "
                f"{len(ct_leaves)}"
            )
        with enable_grad():
            grads = leaves.pullback(out_leaves, ct_leaves, keep or STATE.grad_levels > 0, True)
        return tuple(_regroup(grads, groups, tuple(range(len(primals)))))

    value = _detached(out, keep)
    if has_aux:
        return value, vjp_fn, _detached(aux, keep)
    return value, vjp_fn


def _basis(t):
    """The standard basis of t's shape, stacked: shape (numel, *t.shape)."""
    from kit._creation import eye

    n = t.numel()
    basis = eye(n, dtype=t.dtype, device=t.device)
    return basis.reshape((n,) + tuple(t.shape))


def jacrev(func, argnums=0, has_aux=False):
    """The Jacobian by reverse mode: one vjp, vmapped over the basis of the output.

    >>> import kit
    >>> from kit.func import jacrev
    >>> jacrev(lambda x: x ** 2)(kit.tensor([1.0, 2.0]))
    tensor([[2., 0.],
            [0., 4.]])
    """

    @functools.wraps(func)
    def wrapper(*args):
        nums = _argnums(argnums, len(args), "jacrev(f)(*args)")
        diff = [args[n] for n in nums]

        def partial(*d):
            return func(*with_args(args, nums, d))

        result = vjp(partial, *diff, has_aux=has_aux)
        out, vjp_fn = result[0], result[1]
        if not isinstance(out, Tensor):
            raise RuntimeError("jacrev(f)(*args): f must return a single Tensor")
        rows = vmap(vjp_fn)(_basis(out))
        jacs = tuple(r.reshape(tuple(out.shape) + tuple(a.shape)) for r, a in zip(
            rows, diff, strict=True))
        jac = jacs[0] if isinstance(argnums, int) else jacs
        return (jac, result[2]) if has_aux else jac

    return wrapper
