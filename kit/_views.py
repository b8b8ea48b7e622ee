"""Views, and in-place changes made through them, as PyTorch defines them.

A view shares the storage of another tensor, its base (`t._base`, `t._is_view()`): basic indexing,
reshape (when no copy is needed), permute/transpose, expand, squeeze/unsqueeze... `record()` marks
any op result whose array is a view of an input's array, so no op has to declare it. A view shares
the version counter of its base: an in-place change through either is seen by both.

An in-place op on a view writes into the shared storage and rewrites the base's history with a
`CopySlices` node (PyTorch's name): outside the written region the base's gradient passes through
to its old history, inside it goes to the in-place op's result. The view's own history is then
made again from the base's new one (`AsStridedBackward0`). Other views of the same base find out
lazily: a view remembers the base's edge its history was made from (`_view_src`) and is remade
when it is next used (`refresh`).

The region a view covers is found from memory, not by replaying the ops that made it:
`positions(base, view)` gives, for each element of the view, its flat (C-order) index in the base.
"""

from __future__ import annotations

import numpy as np

from kit import backend
from kit.engine import NO_EDGE, OUTPUT, node_class

# A view made while grad mode was off: it has no history to remake, and an in-place change of it
# with grad mode on is refused (PyTorch refuses it too: it is ambiguous).
NO_GRAD = object()


def mark(y, inputs, recording):
    """If `y`'s array is a view of an input's array, make `y` a view of that input's base."""
    owner = _owner(y._data)
    for t in inputs:
        if isinstance(t, Tensor):
            if _owner(t._data) is owner:
                root = t._base if t._base is not None else t
                y._base = root
                y._vc = version_counter(root)
                y._view_src = root._edge if recording else NO_GRAD
                return


def _owner(array):
    """The object that owns an array's memory (NumPy keeps views pointing at it; as_strided
    goes through a helper object that has a `.base` too)."""
    base = array.base
    while base is not None:
        array, base = base, getattr(base, "base", None)
    return array


def refresh(t):
    """Remake the history of the view `t` if its base's history changed since it was made."""
    base = t._base
    src = t._view_src
    if src is base._edge or src is NO_GRAD:
        return
    _as_view_of_base(t)


def _as_view_of_base(t):
    base = t._base
    t._view_src = base._edge
    if not base._rg:
        t._rg, t._grad_fn, t._edge, t._nr = False, None, None, 0
        return
    idx = positions_on_device(base, t)
    node = node_class("as_strided")(
        "as_strided", _as_strided_rule, (base._edge or base._leaf_edge(),), (), (),
        (base.shape, idx), ((t.shape, t.dtype),),
    )
    t._rg, t._grad_fn, t._edge, t._nr = True, node, (node, 0), 0


def _as_strided_rule(node, g):
    from kit.ops.movement import index_put_add

    shape, idx = node.params
    size = int(np.prod(shape))
    return (index_put_add(g, idx, (size,)).reshape(shape),)


def copy_slices(view, result):
    """After `result` (an in-place op's value and history) was written into `view`'s storage:
    rewrite the base's history with a CopySlices node, then the view's from the base's."""
    base = view._base
    idx = positions_on_device(base, view)
    xp = backend.get_array_module(base._data)
    keep = xp.ones(base._data.size, dtype=bool)
    keep[idx.reshape(-1)] = False
    old = (base._edge or base._leaf_edge()) if base._rg else NO_EDGE
    new = (result._edge or result._leaf_edge()) if result._rg else NO_EDGE
    if not old and not new:
        _as_view_of_base(view)
        return
    # NOTE: an expanded view was written by fill_: its backward raises, as PyTorch's does
    # (several elements of the view are one element of the base)
    rule = _overlapping_rule if overlaps(view._data) else _copy_slices_rule
    node = node_class("copy_slices", "CopySlices")(
        "copy_slices", rule, (old, new), (), (),
        (keep.reshape(base.shape), idx), ((base.shape, base.dtype),),
    )
    base._rg, base._grad_fn, base._edge, base._nr = True, node, (node, 0), 0
    _as_view_of_base(view)


def overlaps(array):
    """Whether elements of `array` share memory: an expanded view, a stride 0 over a size > 1
    (an empty array has none to share, whatever its strides)."""
    return array.size > 1 and any(
        step == 0 and n > 1 for n, step in zip(array.shape, array.strides, strict=True))


def _overlapping_rule(node, g):
    raise RuntimeError(
        "unsupported operation: more than one element of the written-to tensor refers to a "
        "single memory location. Please clone() the tensor before performing the operation. "
        "(kit: the in-place op wrote an expanded view, whose elements share memory; its "
        "gradient is not defined. Fix: .clone() the expanded tensor first)"
    )


def _copy_slices_rule(node, g):
    from kit.ops.elementwise import where_

    keep, idx = node.params
    need = node.next_functions
    # NOTE: a fill, not a product: an inf or NaN gradient of the overwritten part does not leak
    # into the base through 0 * inf (PyTorch zeroes that part)
    g_base = where_(keep, g, 0) if need[0] else None
    g_result = g.reshape(-1)[idx] if need[1] else None
    return g_base, g_result


def positions_on_device(base, view):
    idx = positions(backend.to_device(base._data, "cpu"), backend.to_device(view._data, "cpu"),
                    _address(base._data), _address(view._data))
    return backend.to_device(idx, backend.device_of(base._data))


def positions(base, view, base_address=None, view_address=None):
    """For each element of `view` (an array sharing `base`'s memory), its flat C-order index in
    `base`. Addresses default to the arrays' own (CPU arrays)."""
    item = base.itemsize
    if base_address is None:
        base_address, view_address = _address(base), _address(view)
    base_offsets = _offsets(base.shape, base.strides, item)
    view_offsets = _offsets(view.shape, view.strides, item) + (view_address - base_address) // item
    low = int(base_offsets.min()) if base_offsets.size else 0
    table = np.full(int(base_offsets.max()) - low + 1 if base_offsets.size else 1, -1, np.intp)
    table[base_offsets.reshape(-1) - low] = np.arange(base.size)
    found = table[view_offsets - low] if view_offsets.size else view_offsets
    if found.size and found.min() < 0:  # pragma: no cover - a view always lies inside its base
        raise RuntimeError("kit: a view's elements are not all inside its base's storage")
    return found


def _offsets(shape, strides, item):
    """Each element's distance from element [0, ..., 0], in items."""
    offsets = np.zeros(shape, dtype=np.intp)
    for axis, (n, stride) in enumerate(zip(shape, strides, strict=True)):
        step = np.arange(n, dtype=np.intp) * (stride // item)
        offsets += step.reshape((n,) + (1,) * (len(shape) - axis - 1))
    return offsets


def _address(array):
    if isinstance(array, np.ndarray):
        return array.__array_interface__["data"][0]
    return array.data.ptr  # CuPy: the device pointer of element [0, ..., 0]


def check_inplace(t, op):
    """Refuse an in-place op that PyTorch refuses while grad mode records it."""
    base = t._base
    if base is None:
        if t._grad_fn is None and t._rg:
            raise RuntimeError(
                f"a leaf Variable that requires grad is being used in an in-place operation "
                f"({op}). Fix: do the update under `with kit.no_grad():`, or use an out-of-place "
                f"op (x = x + 1)"
            )
        return
    if base._grad_fn is None and base._rg:
        raise RuntimeError(
            f"a view of a leaf Variable that requires grad is being used in an in-place "
            f"operation ({op}). Fix: change the leaf under `with kit.no_grad():` (an optimiser "
            f"step), or work on a copy: y = x.clone(); y[...] changes y, and gradients still "
            f"reach x"
        )
    if t._view_src is NO_GRAD:
        raise RuntimeError(
            f"A view was created in no_grad mode and is being modified inplace with grad mode "
            f"enabled ({op}). Given that this use case is ambiguous and error-prone, it is "
            f"forbidden. Fix: move both the view and the in-place op inside the no_grad block "
            f"(if the change must not be tracked) or both outside (if it must)"
        )
    node = t._grad_fn
    if getattr(node, "multiple_views", False):  # unbind/split's pieces (kit/ops/view_ops.py)
        raise RuntimeError(
            f"Output {t._nr} of {node.name()} is a view and is being modified inplace ({op}). "
            f"This view is the output of a function that returns multiple views. Such functions "
            f"do not allow the output views to be modified inplace (as in PyTorch). Fix: replace "
            f"the inplace operation by an out-of-place one, or index the base instead (x[0] "
            f"rather than x.unbind()[0])"
        )


def adopt_output(result, t):
    """The in-place op's node saved its own output: that output now lives in `t`'s storage, so
    point the node there, so that a later in-place change of `t` is caught before backward."""
    node = result._grad_fn
    if node is None or node.out_data is None or not any(v is OUTPUT for v in node.saved):
        return
    node.out_data = t._data
    node.out_vc = version_counter(t)
    version = t._vc[0]
    node.versions = tuple(version if v is OUTPUT else expected
                          for v, expected in zip(node.saved, node.versions, strict=True))


Tensor = version_counter = None  # bound by kit._tensor (which imports this module)


def bind(tensor_cls, counter):
    global Tensor, version_counter
    Tensor, version_counter = tensor_cls, counter
