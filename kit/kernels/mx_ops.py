"""The fused kernels as MXNet-style custom operators, for `import kit.mx as mx` code.

Importing this module registers two ops with `mx.operator.register`:

- "kit_fused_gelu": `mx.nd.Custom(x, op_type="kit_fused_gelu")`, GELU through the same kernels as
  `kit.kernels.FusedGELU` (CUDA on a GPU context, NumPy on the CPU);
- "kit_fused_softmax_ce": `mx.nd.Custom(data, label, op_type="kit_fused_softmax_ce")`, the
  per-row softmax-cross-entropy loss (N,) of logits (N, C) and labels (N,); labels may be float, as
  MXNet's are, and are read as class indices.

Both are one ordinary kit graph node, like any CustomOp. A CustomOp keeps nothing between forward
and backward, so the loss op's backward reruns the forward kernel to get each row's log-sum-exp.
Inside the ops the kernels need the raw device arrays; real MXNet would hand them over with DLPack
(`mx.nd.to_dlpack_for_read`), kit's NDArray gives its kit Tensor through `kit.mx.ndarray.unwrap`.
"""

from __future__ import annotations

import numpy as np

from kit import backend
from kit.kernels import _cuda
from kit.kernels.gelu import gelu_backward, gelu_forward
from kit.kernels.softmax_ce import check_classes, softmax_ce_backward, softmax_ce_forward
from kit.mx import operator
from kit.mx.ndarray import unwrap


def _array(nd):
    """The xp array behind an NDArray (read only: kernels never write into their inputs)."""
    return unwrap(nd)._data


class FusedGELUOp(operator.CustomOp):
    """GELU (tanh approximation) with the fused forward and backward kernels."""

    def forward(self, is_train, req, in_data, out_data, aux):
        self.assign(out_data[0], req[0], gelu_forward(_array(in_data[0])))

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        gx = gelu_backward(_array(in_data[0]), _array(out_grad[0]))
        self.assign(in_grad[0], req[0], gx)


@operator.register("kit_fused_gelu")
class FusedGELUProp(operator.CustomOpProp):
    """Properties of kit_fused_gelu: one input, one output of the same shape."""

    def __init__(self):
        super().__init__(need_top_grad=True)

    def declare_backward_dependency(self, out_grad, in_data, out_data):
        return [out_grad[0], in_data[0]]  # the output itself is never read back

    def create_operator(self, ctx, in_shapes, in_dtypes):
        return FusedGELUOp()


def _labels(label):
    """MXNet labels are often float arrays: read them as int64 class indices."""
    xp = backend.get_array_module(label)
    if label.dtype.kind == "f" and bool((label != xp.floor(label)).any()):
        raise ValueError(
            "kit_fused_softmax_ce: forward got labels that are not whole numbers; they are class "
            "indices. Fix: mx.nd.array(labels) with integer values 0..C-1"
        )
    return label.astype(np.int64)


def _check(x, t):
    _cuda.check_float("kit_fused_softmax_ce", x)
    check_classes("kit_fused_softmax_ce", t, x.shape[1], "label", "data has")


class FusedSoftmaxCEOp(operator.CustomOp):
    """Per-row softmax-cross-entropy with the fused kernels."""

    def forward(self, is_train, req, in_data, out_data, aux):
        x, t = _array(in_data[0]), _labels(_array(in_data[1]))
        _check(x, t)
        loss, _ = softmax_ce_forward(x, t)
        self.assign(out_data[0], req[0], loss)

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        x, t = _array(in_data[0]), _labels(_array(in_data[1]))
        _, lse = softmax_ce_forward(x, t)
        g = backend.get_array_module(x).ascontiguousarray(_array(out_grad[0]))
        self.assign(in_grad[0], req[0], softmax_ce_backward(x, t, lse, g))
        self.assign(in_grad[1], req[1], 0)  # labels get no gradient


@operator.register("kit_fused_softmax_ce")
class FusedSoftmaxCEProp(operator.CustomOpProp):
    """Properties of kit_fused_softmax_ce: (data, label) -> per-row loss."""

    def __init__(self):
        super().__init__(need_top_grad=True)

    def list_arguments(self):
        return ["data", "label"]

    def infer_shape(self, in_shape):
        data, label = in_shape
        if len(data) != 2 or tuple(label) != (data[0],):
            raise ValueError(
                f"kit_fused_softmax_ce: infer_shape expects data (N, C) and label (N,), got "
                f"{tuple(data)} and {tuple(label)}"
            )
        return [data, label], [(data[0],)], []

    def infer_type(self, in_type):
        return in_type, [in_type[0]], []  # the label keeps its own dtype

    def declare_backward_dependency(self, out_grad, in_data, out_data):
        return [out_grad[0], in_data[0], in_data[1]]

    def create_operator(self, ctx, in_shapes, in_dtypes):
        return FusedSoftmaxCEOp()
