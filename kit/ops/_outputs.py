"""Primitives with several outputs from one node: unbind/split's pieces, eigh's eigenvalues and
eigenvectors. `record()` (kit/ops/_record.py) stays the one-output fast path; this is its form
for a node whose outputs are 0, 1, 2... (`output_nr`, as PyTorch numbers them).

Such a node's rule is `rule(node, g0, g1, ..., *saved)`: one gradient per output (None for an
output nothing used), then what was saved (`SavedOutput(i)` markers name outputs).
"""

from __future__ import annotations

import weakref

from kit import _views
from kit._anomaly import capture_stack
from kit._tensor import Tensor, version_counter
from kit.engine import NO_EDGE, Node, SavedOutput, backward_name
from kit.grad_mode import STATE
from kit.saved_tensors import pack_node


class Outputs(Node):
    """A built-in node with several outputs: the engine hands its rule every output's gradient."""

    __slots__ = ()

    def apply(self, grads, differentiable):
        if not self.saved:
            return self.rule(self, *grads)
        return self.rule(self, *grads, *self.unpack_saved(differentiable))


def node_type(op, **attributes):
    """The Outputs subclass for `op`, named as PyTorch names its node (`UnbindBackward0`)."""
    return type(backward_name(op), (Outputs,), {"__slots__": (), **attributes})


def record_outputs(node_cls, op, rule, arrays, inputs, saved=(), params=None):
    """Tensors for `arrays` (views of an input's array become views of its base); when an input
    requires grad and grad mode is on, the outputs of one `node_cls` node, in order."""
    for t in inputs:
        if isinstance(t, Tensor) and t._base is not None:
            _views.refresh(t)
    outs = tuple(Tensor(a) for a in arrays)
    recording = STATE.enabled
    for y in outs:
        if y._data.base is not None:
            _views.mark(y, inputs, recording)
    edges = tuple((t._edge or t._leaf_edge()) if isinstance(t, Tensor) and t._rg else NO_EDGE
                  for t in inputs)
    if not (recording and any(edges) and outs):
        return outs
    versions = tuple(v._vc[0] if isinstance(v, Tensor) else 0 if type(v) is SavedOutput else -1
                     for v in saved)
    node = node_cls(op, rule, edges, saved, versions, params,
                    tuple((y.shape, y.dtype) for y in outs))
    if any(type(v) is SavedOutput for v in saved):
        node.out_data = tuple(y._data for y in outs)
        node.out_vc = tuple(version_counter(y) for y in outs)
    for i, y in enumerate(outs):
        y._rg, y._grad_fn, y._nr, y._edge = True, node, i, (node, i)
    if STATE.extras:  # NOTE: as record(): anomaly's stack, kit.viz's output refs, saved hooks
        if STATE.anomaly:
            capture_stack(node, 2)
        if STATE.keep_outputs:
            node.out_ref = weakref.ref(outs[0])
        if STATE.saved_hooks is not None and saved:
            pack_node(node, outs)
    return outs
