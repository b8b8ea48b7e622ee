"""`vmap`: run a per-sample function on a whole batch at once.

vmap does not loop. It wraps each input in a BatchedTensor (the batch dimension moved in front,
tagged with a fresh level), calls the function once, and every kit primitive the function uses
applies its batching rule, one NumPy call for the whole batch. The outputs are unwrapped with
the batch dimension moved to `out_dims`.
"""

from __future__ import annotations

import ast
import functools
import sys

from kit._function_call import caller_call_tree
from kit._tensor import Tensor
from kit.func._batched import BatchedTensor, VmapLevel, add_level, new_level, remove_level
from kit.function import Function


def tree_flatten(tree):
    """Leaves of nested tuples/lists/dicts, and a function that rebuilds the structure."""
    if isinstance(tree, (tuple, list)):
        parts = [tree_flatten(t) for t in tree]
        leaves = [leaf for p in parts for leaf in p[0]]

        kind = type(tree)

        def rebuild(values):
            out, i = [], 0
            for p_leaves, p_rebuild in parts:
                out.append(p_rebuild(values[i:i + len(p_leaves)]))
                i += len(p_leaves)
            return kind(out) if kind in (tuple, list) else kind(*out)

        return leaves, rebuild
    if isinstance(tree, dict):
        keys = list(tree)
        leaves, rebuild_values = tree_flatten([tree[k] for k in keys])
        return leaves, lambda values: dict(zip(keys, rebuild_values(values), strict=True))
    return [tree], lambda values: values[0]


def broadcast_dims(dims, tree, what, name):
    """One dim per leaf of `tree`: an int/None applies to a whole subtree."""
    if dims is None or isinstance(dims, int):
        return [dims] * len(tree_flatten(tree)[0])
    if isinstance(dims, (tuple, list)) and isinstance(tree, (tuple, list)):
        if len(dims) != len(tree):
            raise ValueError(
                f"vmap({name}, {what}={dims!r}, ...): {what} has {len(dims)} entries but there "
                f"are {len(tree)} {'inputs' if what == 'in_dims' else 'outputs'}. Fix: give one "
                f"entry per {'argument' if what == 'in_dims' else 'output'} (None for not batched)"
            )
        return [d for sub, t in zip(dims, tree, strict=True)
                for d in broadcast_dims(sub, t, what, name)]
    if isinstance(dims, dict) and isinstance(tree, dict):
        return [d for k in tree for d in broadcast_dims(dims.get(k), tree[k], what, name)]
    raise ValueError(
        f"vmap({name}, {what}={dims!r}, ...): {what} is not compatible with the structure of the "
        f"{'inputs' if what == 'in_dims' else 'outputs'}. Fix: an int, None, or a tuple with one "
        f"entry per {'argument' if what == 'in_dims' else 'output'}"
    )


def _name(func):
    return getattr(func, "__name__", type(func).__name__)


def _class_error(func, frame):
    name = func.__name__
    line = _corrected_line(frame, func) or f"vmap({name}.apply)"
    return TypeError(
        f"vmap({name}): {name} is an autograd Function class, and vmap needs the function that "
        f"runs it, {name}.apply:\n    {line}\n{name} also needs a setup_context staticmethod "
        f"(forward without ctx) and either `generate_vmap_rule = True` or a vmap staticmethod."
    )


def _corrected_line(frame, cls):
    """The caller's source line with `cls` replaced by `cls.apply` where it is passed to a call,
    or None when the line cannot be read (a REPL) or parsed (a multi-line call)."""
    tree = caller_call_tree(frame)
    if tree is None:
        return None
    found = False
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            for i, arg in enumerate(node.args):
                if isinstance(arg, ast.Name) and frame.f_locals.get(
                        arg.id, frame.f_globals.get(arg.id)) is cls:
                    node.args[i] = ast.Attribute(arg, "apply", ast.Load())
                    found = True
    return ast.unparse(tree) if found else None


def vmap(func, in_dims=0, out_dims=0):
    """Vectorise `func` over a batch dimension: `vmap(f)(xs)` is `stack([f(x) for x in xs])`,
    computed with one call per primitive instead of a Python loop.

    `in_dims` (int, None, or one entry per argument, nested like the arguments) says which dim
    of each input is the batch (None: the same value for every sample); `out_dims` where the
    batch goes in each output. Keyword arguments are passed unbatched.

    >>> import kit
    >>> from kit.func import vmap
    >>> x = kit.tensor([[1.0, 2.0], [3.0, 4.0]])
    >>> vmap(lambda row: (row * row).sum())(x)
    tensor([ 5., 25.])
    """
    if isinstance(func, type) and issubclass(func, Function):
        raise _class_error(func, sys._getframe(1))
    if not callable(func):
        raise TypeError(f"vmap: expected a function, got {type(func).__name__}")
    name = _name(func)

    @functools.wraps(func)
    def batched(*args, **kwargs):
        leaves, rebuild = tree_flatten(args)
        dims = broadcast_dims(in_dims, args, "in_dims", name)
        size = _batch_size(leaves, dims, name, in_dims)
        level = new_level()
        wrapped = [leaf if d is None else add_level(leaf, level, d)
                   for leaf, d in zip(leaves, dims, strict=True)]
        with VmapLevel(level, size):
            out = func(*rebuild(wrapped), **kwargs)
        out_leaves, out_rebuild = tree_flatten(out)
        odims = broadcast_dims(out_dims, out, "out_dims", name)
        result = []
        for leaf, d in zip(out_leaves, odims, strict=True):
            if d is None:
                if type(leaf) is BatchedTensor and level in leaf.levels:
                    raise ValueError(
                        f"vmap({name}, ...): out_dims=None for an output that is batched "
                        f"(it differs per sample). Fix: give it an out_dim, e.g. 0"
                    )
                result.append(leaf)
                continue
            if not isinstance(leaf, Tensor):
                raise ValueError(
                    f"vmap({name}, ...): `{name}` must only return Tensors, got type "
                    f"{type(leaf)}. Did you mean to set out_dims= to None for output?"
                )
            result.append(remove_level(leaf, level, d, size))
        return out_rebuild(result)

    return batched


def _batch_size(leaves, dims, name, in_dims):
    sizes = []
    for leaf, d in zip(leaves, dims, strict=True):
        if d is None:
            continue
        if not isinstance(leaf, Tensor):
            raise ValueError(
                f"vmap({name}, in_dims={in_dims!r}, ...)(<inputs>): Got in_dim={d} for an input "
                f"but the input is of type {type(leaf)}. We cannot vmap over non-Tensor "
                f"arguments, please use None as the respective in_dim"
            )
        if not -leaf.ndim <= d < leaf.ndim:
            raise ValueError(
                f"vmap({name}, in_dims={in_dims!r}, ...)(<inputs>): Got in_dim={d} for some "
                f"input, but that input is a Tensor of dimensionality {leaf.ndim} so expected "
                f"in_dim to satisfy -{leaf.ndim} <= in_dim < {leaf.ndim}."
            )
        sizes.append(leaf.shape[d])
    if not sizes:
        raise ValueError(
            f"vmap({name}, in_dims={in_dims!r}, ...)(<inputs>): at least one input must be a "
            f"Tensor with a batch dimension, but all in_dims are None. Fix: give the batched "
            f"input an in_dim (0 by default)"
        )
    if len(set(sizes)) > 1:
        raise ValueError(
            f"vmap: Expected all tensors to have the same size in the mapped dimension, got "
            f"sizes {sizes} for the mapped dimension"
        )
    return sizes[0]
