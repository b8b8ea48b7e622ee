"""jvp, jacfwd and hessian, computed by reverse-over-reverse (kit has no forward-mode engine).

`jvp(f, x, v)` uses the double-vjp identity: the pullback u -> J^T u is linear in u, and
differentiating it again, against v, gives J v. So it needs backward rules that are themselves
differentiable: all kit primitives are. A custom Function that defines the `jvp` staticmethod is
differentiated through it, as in PyTorch's forward mode (kit/func/_function_jvp.py), so its
backward may use NumPy; one without jvp needs a backward written with kit operations. Results
equal forward mode's up to rounding; the cost is that of two reverse passes.
"""

from __future__ import annotations

import functools

from kit._tensor import Tensor
from kit.func._function_jvp import recording_pullback
from kit.func._grad import _argnums, _basis, _detached, _split_aux, jacrev, vjp, with_args
from kit.func._vmap import vmap


def _linearize(func, primals):
    """(output, jvp_fn) where jvp_fn(*tangents) is J @ tangents (by the double-vjp trick)."""
    out, vjp_fn = vjp(func, *primals)
    if not isinstance(out, Tensor):
        raise RuntimeError("jvp(f, primals, tangents): f must return a single Tensor")
    u = out.detach() * 0  # any point works: vjp_fn is linear in its cotangent
    with recording_pullback():  # custom Functions record their jvp staticmethod, where defined
        _, vjp_of_vjp = vjp(vjp_fn, u)

    def jvp_fn(*tangents):
        if len(tangents) != len(primals):
            raise RuntimeError(
                f"jvp(f, primals, tangents): Expected one tangent per primal, got "
                f"{len(tangents)} tangents for {len(primals)} primals"
            )
        for i, (p, t) in enumerate(zip(primals, tangents, strict=True)):
            if tuple(p.shape) != tuple(t.shape):
                raise RuntimeError(
                    f"jvp(f, primals, tangents): Expected primals and tangents to have the same "
                    f"shape, but tangent {i} has {list(t.shape)} and primal {i} has "
                    f"{list(p.shape)}"
                )
        return vjp_of_vjp(tuple(tangents))[0]

    return out, jvp_fn


def jvp(func, primals, tangents, has_aux=False):
    """`(func(*primals), J @ tangents)`: a Jacobian-vector product (forward-mode result).

    kit computes it by reverse-over-reverse (two vjps), not with a forward-mode engine. A custom
    Function's `jvp(ctx, *tangents)` staticmethod is called where defined, as in PyTorch, so its
    backward may use NumPy; in jvp, `ctx.saved_tensors` is what `ctx.save_for_forward` kept.

    >>> import kit
    >>> import numpy as np
    >>> from kit.func import jvp
    >>> jvp(lambda x: x ** 2, (kit.tensor([1.0, 2.0]),), (kit.tensor([1.0, 1.0]),))
    (tensor([1., 4.]), tensor([2., 4.]))
    >>> class NumpyExp(kit.Function):
    ...     @staticmethod
    ...     def forward(x):
    ...         return kit.tensor(np.exp(x.numpy()))
    ...     @staticmethod
    ...     def setup_context(ctx, inputs, output):
    ...         ctx.save_for_forward(output)
    ...     @staticmethod
    ...     def jvp(ctx, x_t):
    ...         (y,) = ctx.saved_tensors
    ...         return x_t * y
    >>> jvp(NumpyExp.apply, (kit.tensor([0.0, 1.0]),), (kit.tensor([1.0, 2.0]),))[1]
    tensor([1.0000, 5.4366])
    """
    if not isinstance(primals, tuple) or not isinstance(tangents, tuple):
        raise RuntimeError(
            "jvp(f, primals, tangents): Expected primals and tangents to be tuples. Fix: "
            "jvp(f, (x,), (v,))"
        )
    if len(primals) != len(tangents):
        raise RuntimeError(
            f"jvp(f, primals, tangents): Expected primals and tangents to have the same length, "
            f"got {len(primals)} and {len(tangents)}"
        )
    aux = []

    def plain(*args):
        out, extra = _split_aux(func(*args), has_aux, "jvp(f, primals, tangents)")
        aux.append(extra)
        return out

    out, jvp_fn = _linearize(plain, primals)
    # No detach: the pullback keeps a graph only for an enclosing transform (grad of jvp,
    # jacfwd of jacfwd), which needs it.
    tangent_out = jvp_fn(*tangents)
    return (out, tangent_out, _detached(aux[0], False)) if has_aux else (out, tangent_out)


def linearize(func, *primals):
    """`(func(*primals), jvp_fn)`, as torch.func.linearize: `jvp_fn(*tangents)` is J @ tangents
    at `primals`. `func` runs once; each call of jvp_fn is one more pass, without re-running
    `func` (in kit a reverse pass over the recorded pullback, see the module's docstring).

    >>> import kit
    >>> from kit.func import linearize
    >>> out, jvp_fn = linearize(lambda x: x ** 2, kit.tensor([1.0, 3.0]))
    >>> out, jvp_fn(kit.tensor([1.0, 0.0])), jvp_fn(kit.tensor([0.0, 1.0]))
    (tensor([1., 9.]), tensor([2., 0.]), tensor([0., 6.]))
    """
    return _linearize(func, primals)


def jacfwd(func, argnums=0, has_aux=False):
    """The Jacobian column by column: a jvp vmapped over the basis of each input.

    kit's jvp is reverse-over-reverse, so this equals jacrev up to rounding; it is here so
    that code written for torch.func runs, and to show the forward-mode view of a Jacobian.

    >>> import kit
    >>> from kit.func import jacfwd
    >>> jacfwd(lambda x: x.sum() * x)(kit.tensor([1.0, 2.0]))
    tensor([[4., 1.],
            [2., 5.]])
    """

    @functools.wraps(func)
    def wrapper(*args):
        nums = _argnums(argnums, len(args), "jacfwd(f)(*args)")
        diff = [args[n] for n in nums]
        aux = []

        def partial(*d):
            out, extra = _split_aux(func(*with_args(args, nums, d)), has_aux, "jacfwd(f)(*args)")
            aux.append(extra)
            return out

        out, jvp_fn = _linearize(partial, diff)
        jacs = []
        for i, primal in enumerate(diff):
            def column(v, i=i):
                tangents = [p.detach() * 0 for p in diff]
                tangents[i] = v
                return jvp_fn(*tangents)

            cols = vmap(column)(_basis(primal))  # (numel_i, *out.shape)
            k = out.ndim
            cols = cols.permute(tuple(range(1, k + 1)) + (0,)) if k else cols
            jacs.append(cols.reshape(tuple(out.shape) + tuple(primal.shape)))
        jac = jacs[0] if isinstance(argnums, int) else tuple(jacs)
        return (jac, _detached(aux[0], False)) if has_aux else jac

    return wrapper


def hessian(func, argnums=0):
    """The Hessian of a scalar function: `jacfwd(jacrev(f))`, as torch.func.hessian.

    >>> import kit
    >>> from kit.func import hessian
    >>> hessian(lambda x: (x ** 3).sum())(kit.tensor([1.0, 2.0]))
    tensor([[ 6.,  0.],
            [ 0., 12.]])
    """
    return jacfwd(jacrev(func, argnums), argnums)
