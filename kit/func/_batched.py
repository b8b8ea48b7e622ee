"""BatchedTensor: what a function under `vmap` sees, and the dispatcher that batches primitives.

A BatchedTensor is a per-sample view of a plain Tensor, its `value`, that holds every sample at
once. The batch dimensions sit in front of `value`, one per active vmap level, in level order
(`levels`, increasing); the rest of `value` is the per-sample ("logical") shape that `.shape`
reports. Levels are unique ids, one per vmap call, so nested vmaps (and a backward pass that runs
after its vmap returned) never confuse two batch dimensions.

Every primitive in kit.ops starts with `if VMAP.depth: return VMAP.dispatch(op, fn, *args)`;
each running vmap is a `VmapLevel` entry on the thread's stack of modes (kit/_modes.py).
`dispatch` finds the BatchedTensor arguments and calls the op's batching rule (kit/func/_rules*.py),
which aligns the physical values and calls the primitive once on them. Autograd happens on the
physical values, so every recorded node sees ordinary Tensors.
"""

from __future__ import annotations

import itertools

from kit._modes import Mode, active
from kit._tensor import Tensor
from kit.ops import movement

_LEVELS = itertools.count(1)
RULES = {}  # op name -> rule(fn, *args, **kwargs)


def new_level():
    return next(_LEVELS)


class batching(Mode):  # noqa: N801 - used like a function: `with batching():`
    """Primitives dispatch BatchedTensors in the block (around the user's code)."""

    __slots__ = ()

    def switches(self, state):
        return {"depth": state.depth + 1, "transforms": state.transforms + 1}


class VmapLevel(batching):
    """The entry of one running vmap: its level and batch size."""

    __slots__ = ("level", "size")

    def __init__(self, level, size):
        self.level = level
        self.size = size


def active_levels():
    """{level: batch size} of the vmaps running in this thread, outermost first."""
    return {mode.level: mode.size for mode in active(VmapLevel)}


class unbatched(Mode):  # noqa: N801
    """Primitives run plainly in the block: batching rules work on the physical values (user
    code they call enters `batching` again)."""

    __slots__ = ()

    def switches(self, state):
        return {"depth": 0}


def _no_storage(what):
    return RuntimeError(
        f"vmap: {what} on a BatchedTensor. Inside vmap a tensor is one sample of a batch that "
        f"kit stores as a whole, so NumPy and Python cannot see one sample's numbers (PyTorch "
        f"says 'Cannot access data pointer of Tensor that doesn't have storage'). Fix: write "
        f"the function with kit operations only. An in-place update of a tensor that is not "
        f"batched with a batched value (y[i] = x, y += x) must become out-of-place "
        f"(y = y + x, kit.where). In a custom Function whose forward needs NumPy, set "
        f"generate_vmap_rule = False and write a vmap staticmethod that calls the Function on "
        f"the whole batch (lesson 10, section 6)."
    )


class BatchedTensor(Tensor):
    """A tensor seen per sample inside vmap; `value` holds the whole batch."""

    __slots__ = ("value", "levels")
    # Tensor's per-object autograd state lives on `value`; these read-only defaults shadow it.
    _grad = None
    _retains_grad = False
    _hooks = None
    name = None
    _base = None  # never a view: its value is
    _view_src = None

    def __init__(self, value, levels):  # noqa: D107 - Tensor.__init__ is deliberately skipped
        self.value = value
        self.levels = levels

    # --- what a sample looks like -------------------------------------------------------------
    @property
    def shape(self):
        return self.value.shape[len(self.levels):]

    @property
    def ndim(self):
        return self.value.ndim - len(self.levels)

    @property
    def dtype(self):
        return self.value.dtype

    @property
    def device(self):
        return self.value.device

    @property
    def requires_grad(self):
        return self.value.requires_grad

    @property
    def grad_fn(self):
        return self.value.grad_fn

    @property
    def is_leaf(self):
        return self.value.grad_fn is None

    @property
    def _vc(self):
        return self.value._vc

    def size(self, dim=None):
        return self.shape if dim is None else self.shape[dim]

    def dim(self):
        return self.ndim

    def numel(self):
        n = 1
        for s in self.shape:
            n *= s
        return n

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    def __repr__(self):
        return f"BatchedTensor(levels={self.levels}, value={self.value!r})"

    # --- what a sample cannot do --------------------------------------------------------------
    @property
    def data(self):
        raise _no_storage("reading .data")

    @property
    def _data(self):
        raise _no_storage("reading its array")

    def numpy(self):
        raise _no_storage("calling .numpy()")

    def __array__(self, dtype=None, copy=None):
        raise _no_storage("converting to a NumPy array (np.asarray, np.* functions)")

    def tolist(self):
        raise _no_storage("calling .tolist()")

    def item(self):
        raise RuntimeError(
            "vmap: It looks like you're calling .item() on a Tensor. Under vmap each sample has "
            "its own value, so there is no single Python number. Fix: keep the computation in "
            "tensors (use kit.where instead of an if on a value)."
        )

    __float__ = __int__ = __index__ = item

    def __bool__(self):
        raise RuntimeError(
            "vmap: a tensor was used in data-dependent Python control flow (if/while/and/or on "
            "a tensor). Under vmap each sample may take a different branch. Fix: compute both "
            "branches and select with kit.where(condition, a, b)."
        )

    def backward(self, *args, **kwargs):
        raise RuntimeError(
            "vmap: .backward() was called inside the vmapped function. Fix: take gradients "
            "with kit.func.grad / vjp inside vmap (per-sample gradients: vmap(grad(loss)))."
        )

    # --- autograd bookkeeping that lives on the physical value --------------------------------
    def detach(self):
        return BatchedTensor(self.value.detach(), self.levels)

    def requires_grad_(self, requires_grad=True):
        self.value.requires_grad_(requires_grad)
        return self

    def clone(self):
        return BatchedTensor(_plain(self.value.clone), self.levels)

    def __setitem__(self, index, value):
        from kit.ops.movement import index_put

        self._write(index_put(self, index, value), "setitem")

    def _write(self, result, op):
        """Make an out-of-place result this tensor's new value, in place on its batch."""
        result = expand_levels(result, self.levels, sizes_of(self))
        if levels_of(result) != self.levels:
            raise RuntimeError(
                f"vmap: in-place {op} would write a batched value into a tensor that is not "
                f"batched at the same vmap levels. Fix: use the out-of-place op (y = x + z)."
            )
        _plain(self.value.copy_, result.value)
        return self


def _plain(fn, *args):
    """Call `fn` with the primitives' batching switched off (all arguments are physical)."""
    with unbatched():
        return fn(*args)


def _inplace(name, op):
    def method(self, *args, **kwargs):
        return self._write(op(self, *args, **kwargs), name)

    method.__name__ = name
    return method


def _bind_inplace():
    from kit.ops import add, clamp, div, index_add, mul, sub

    ops = {
        "add_": add, "sub_": sub, "mul_": mul, "div_": div, "__iadd__": add, "__isub__": sub,
        "__imul__": mul, "__itruediv__": div, "clamp_": clamp,
        "index_add_": index_add,
        "fill_": lambda t, v: movement.index_put(t, Ellipsis, v),
        "copy_": lambda t, v: movement.index_put(t, Ellipsis, v),
        "zero_": lambda t: movement.index_put(t, Ellipsis, 0),
    }
    for name, op in ops.items():
        setattr(BatchedTensor, name, _inplace(name, op))


_bind_inplace()


# --- levels ---------------------------------------------------------------------------------
def levels_of(x):
    return x.levels if type(x) is BatchedTensor else ()


def physical(x):
    return x.value if type(x) is BatchedTensor else x


def make(value, levels):
    return BatchedTensor(value, levels) if levels else value


def sizes_of(x):
    """{level: batch size} of a BatchedTensor (empty for anything else)."""
    if type(x) is not BatchedTensor:
        return {}
    return dict(zip(x.levels, x.value.shape[: len(x.levels)], strict=True))


def movedim(t, source, destination):
    """Physical movedim through kit.permute (recorded for autograd); no-op when in place."""
    if source == destination:
        return t
    order = list(range(t.ndim))
    order.insert(destination, order.pop(source))
    return movement.permute(t, order)


def add_level(x, level, dim):
    """x (plain or batched) whose logical dim `dim` holds the batch of `level`."""
    levels = levels_of(x)
    value = physical(x)
    k = len(levels)
    logical = value.ndim - k
    if not -logical <= dim < logical:
        raise ValueError(f"in_dim {dim} is out of range for a tensor with {logical} dimensions")
    position = sum(1 for lv in levels if lv < level)
    value = movedim(value, k + dim % logical, position)
    return BatchedTensor(value, levels[:position] + (level,) + levels[position:])


def remove_level(x, level, dim, size):
    """The batch of `level` moved to logical dim `dim` (expanded if x is not batched there)."""
    levels = levels_of(x)
    if level not in levels:
        # Not batched here: every sample gets the same value (x may still be batched at the
        # enclosing vmaps, whose rules these ops go through).
        from kit.ops.movement import expand, unsqueeze

        y = unsqueeze(x, dim % (x.ndim + 1))
        return expand(y, tuple(size if i == dim % y.ndim else -1 for i in range(y.ndim)))
    value = x.value
    position = levels.index(level)
    rest = levels[:position] + levels[position + 1:]
    logical = value.ndim - len(levels) + 1
    value = movedim(value, position, len(rest) + dim % logical)
    return make(value, rest)


def expand_levels(x, levels, sizes):
    """x batched at exactly `levels`: missing levels are broadcast (zero-copy), extra ones kept."""
    have = levels_of(x)
    if all(lv in have for lv in levels):
        return x
    value = physical(x)
    union = tuple(sorted(set(have) | set(levels)))
    shape, i = [], 0
    for lv in union:
        if lv in have:
            shape.append(value.shape[i])
            i += 1
        else:
            shape.append(1)
    value = movement.reshape(value, tuple(shape) + tuple(value.shape[len(have):]))
    full = tuple(sizes[lv] if lv not in have else shape[j] for j, lv in enumerate(union))
    value = movement.expand(value, full + tuple(value.shape[len(union):]))
    return BatchedTensor(value, union)


def lower(x, inner_levels, forward_levels, sizes):
    """Turn the `inner_levels` of x into leading per-sample dims, in the given order.

    Used where physical values meet an enclosing vmap: a cotangent reaching a graph recorded at
    `forward_levels`, or a custom Function's gradient. Levels of x that are in `forward_levels`
    but not in `inner_levels` are summed away (the physical tensor was shared by those samples);
    missing inner levels are broadcast with `sizes`; levels outside `forward_levels` stay batched.
    """
    have = levels_of(x)
    value = physical(x)
    drop = tuple(i for i, lv in enumerate(have)
                 if lv in forward_levels and lv not in inner_levels)
    if drop:
        from kit.ops.reductions import sum as sum_

        value = sum_(value, drop)
        have = tuple(lv for i, lv in enumerate(have) if i not in drop)
    kept = tuple(lv for lv in have if lv not in forward_levels)
    wanted = kept + tuple(inner_levels)
    present = [lv for lv in wanted if lv in have]
    order = tuple(have.index(lv) for lv in present)
    if order != tuple(range(len(have))):
        value = movement.permute(value, order + tuple(range(len(have), value.ndim)))
    if len(present) != len(wanted):
        batch = value.shape[:len(present)]
        shape = tuple(batch[present.index(lv)] if lv in present else 1 for lv in wanted)
        value = movement.reshape(value, shape + tuple(value.shape[len(present):]))
        full = tuple(sizes[lv] if lv not in present else n
                     for lv, n in zip(wanted, shape, strict=True))
        value = movement.expand(value, full + tuple(value.shape[len(wanted):]))
    return make(value, kept)


def lift(x, inner_levels):
    """Inverse of `lower`: x's leading logical dims are the `inner_levels`; batch them again."""
    have = levels_of(x)
    value = physical(x)
    current = have + tuple(inner_levels)
    wanted = tuple(sorted(current))
    perm = tuple(current.index(lv) for lv in wanted)
    value = movement.permute(value, perm + tuple(range(len(current), value.ndim)))
    return make(value, wanted)


# --- dispatch -------------------------------------------------------------------------------
def _any_batched(args):
    for a in args:
        if type(a) is BatchedTensor:
            return True
        if type(a) in (list, tuple) and any(type(b) is BatchedTensor for b in a):
            return True
    return False


def dispatch(op, fn, *args, **kwargs):
    """Run primitive `fn` on args that may be BatchedTensors: via its rule, or plainly."""
    with unbatched():
        if not _any_batched(args) and not _any_batched(kwargs.values()):
            return fn(*args, **kwargs)
        rule = RULES.get(op)
        if rule is None:
            raise NotImplementedError(
                f"vmap: kit.{op} has no batching rule. Fix: compute it outside vmap, or "
                f"express it with other kit operations"
            )
        return rule(fn, *args, **kwargs)


def rule(*names):
    """Register a batching rule for the named ops."""

    def register(fn):
        for name in names:
            RULES[name] = fn
        return fn

    return register
