"""`gluon.loss`: per-sample losses as MXNet 1.x computes them (the mean over every axis but the
batch axis, so `loss.backward()` sums over the batch and `trainer.step(batch_size)` averages).

>>> import kit.mx as mx
>>> loss = mx.gluon.loss.L2Loss()
>>> loss(mx.nd.array([[1.0, 2.0]]), mx.nd.array([[0.0, 0.0]])).asnumpy()  # 1/2 mean of squares
array([1.25], dtype=float32)
"""

from __future__ import annotations

import numpy as np

from kit import backend
from kit.mx.gluon.block import HybridBlock
from kit.mx.gluon.nn.basic_layers import apply
from kit.nn import functional
from kit.ops import cross_entropy, where

__all__ = [
    "HuberLoss", "L1Loss", "L2Loss", "Loss", "SigmoidBCELoss", "SigmoidBinaryCrossEntropyLoss",
    "SoftmaxCELoss", "SoftmaxCrossEntropyLoss",
]


def _batch_mean(loss, batch_axis):
    axes = tuple(i for i in range(loss.ndim) if i != batch_axis % loss.ndim)
    return loss.mean(axes) if axes else loss


def _weighting(loss, weight, sample_weight):
    if sample_weight is not None:
        loss = loss * sample_weight
    if weight is not None:
        loss = loss * weight
    return loss


def _like(label, pred, loss):
    if label.shape != pred.shape:
        if label.numel() != pred.numel():
            raise ValueError(
                f"{loss}: label of shape {tuple(label.shape)} cannot be reshaped like the "
                f"prediction {tuple(pred.shape)}. Fix: give one label per output"
            )
        label = label.reshape(pred.shape)
    return label


class Loss(HybridBlock):
    """Base class: `weight` (a global scale) and `batch_axis` (kept, every other axis is
    averaged)."""

    def __init__(self, weight=None, batch_axis=0, **kwargs):
        super().__init__(**kwargs)
        self._weight = weight
        self._batch_axis = batch_axis

    def __repr__(self):
        return f"{type(self).__name__}(batch_axis={self._batch_axis}, w={self._weight})"


class L2Loss(Loss):
    """`weight / 2 * (label - pred)^2`, averaged per sample (MXNet's 1/2 factor)."""

    def __init__(self, weight=1.0, batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)

    def hybrid_forward(self, F, pred, label, sample_weight=None):  # noqa: N803
        def compute(pred, label, sample_weight):
            diff = _like(label, pred, "L2Loss") - pred
            loss = _weighting(diff * diff, self._weight / 2, sample_weight)
            return _batch_mean(loss, self._batch_axis)

        return apply(compute, pred, label, sample_weight)


class L1Loss(Loss):
    """`weight * |label - pred|`, averaged per sample."""

    def __init__(self, weight=None, batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)

    def hybrid_forward(self, F, pred, label, sample_weight=None):  # noqa: N803
        def compute(pred, label, sample_weight):
            loss = abs(_like(label, pred, "L1Loss") - pred)
            return _batch_mean(_weighting(loss, self._weight, sample_weight), self._batch_axis)

        return apply(compute, pred, label, sample_weight)


class SoftmaxCrossEntropyLoss(Loss):
    """Cross-entropy of softmax(pred) along `axis` against class indices (`sparse_label`) or
    probabilities; `from_logits` means pred already holds log-probabilities."""

    def __init__(self, axis=-1, sparse_label=True, from_logits=False, weight=None,
                 batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._axis = axis
        self._sparse_label = sparse_label
        self._from_logits = from_logits

    def hybrid_forward(self, F, pred, label, sample_weight=None):  # noqa: N803
        sparse = self._sparse_label
        if sparse:  # (one host copy, in int64: astype copies)
            classes = backend.to_device(label._t._data, "cpu").astype(np.int64)
        fast = (sparse and not self._from_logits and pred.ndim == 2 and self._axis in (-1, 1)
                and self._batch_axis == 0 and sample_weight is None and self._weight is None)
        if fast:  # the fused primitive (it checks the classes): one node, the same values
            return apply(cross_entropy, pred, target=classes.reshape(-1), reduction="none")
        if sparse:
            n = pred.shape[self._axis]
            if classes.size and (classes.min() < 0 or classes.max() >= n):
                raise IndexError(
                    f"SoftmaxCrossEntropyLoss: label holds class {int(classes.max())} but pred "
                    f"has {n} classes along axis {self._axis} (valid: 0..{n - 1})"
                )

        def compute(pred, label, sample_weight):
            logp = pred if self._from_logits else functional.log_softmax(pred, self._axis)
            if sparse:
                axis = self._axis % pred.ndim
                hot = np.moveaxis(np.eye(pred.shape[axis], dtype=np.dtype(pred.dtype))[
                    classes.reshape(pred.shape[:axis] + pred.shape[axis + 1:])], -1, axis)
                label = hot
            else:
                label = _like(label, pred, "SoftmaxCrossEntropyLoss")
            loss = -(logp * label).sum(self._axis, keepdims=True)
            return _batch_mean(_weighting(loss, self._weight, sample_weight), self._batch_axis)

        return apply(compute, pred, None if sparse else label, sample_weight)


class SigmoidBinaryCrossEntropyLoss(Loss):
    """Binary cross-entropy of sigmoid(pred) (or of pred itself with `from_sigmoid`), computed
    stably from the logits; `pos_weight` scales the positive term."""

    def __init__(self, from_sigmoid=False, weight=None, batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._from_sigmoid = from_sigmoid

    def hybrid_forward(self, F, pred, label, sample_weight=None, pos_weight=None):  # noqa: N803
        def compute(pred, label, sample_weight, pos_weight):
            label = _like(label, pred, "SigmoidBinaryCrossEntropyLoss")
            if not self._from_sigmoid:
                log_sig_neg = functional.softplus(-abs(pred)) + functional.relu(-pred)
                if pos_weight is None:
                    loss = pred - pred * label + log_sig_neg  # -log sigmoid(-x) = x + that
                else:
                    log_weight = 1 + (pos_weight - 1) * label
                    loss = pred - pred * label + log_weight * log_sig_neg
            else:
                eps = 1e-12
                positive = (pred + eps).log() * label
                if pos_weight is not None:
                    positive = positive * pos_weight
                loss = -(positive + (1 - pred + eps).log() * (1 - label))
            return _batch_mean(_weighting(loss, self._weight, sample_weight), self._batch_axis)

        return apply(compute, pred, label, sample_weight, pos_weight)


class HuberLoss(Loss):
    """Quadratic within `rho` of the label, linear beyond: 0.5/rho * d^2 or |d| - rho/2."""

    def __init__(self, rho=1, weight=None, batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._rho = rho

    def hybrid_forward(self, F, pred, label, sample_weight=None):  # noqa: N803
        def compute(pred, label, sample_weight):
            diff = abs(_like(label, pred, "HuberLoss") - pred)
            loss = where(diff > self._rho, diff - 0.5 * self._rho,
                         (0.5 / self._rho) * diff * diff)
            return _batch_mean(_weighting(loss, self._weight, sample_weight), self._batch_axis)

        return apply(compute, pred, label, sample_weight)


SoftmaxCELoss = SoftmaxCrossEntropyLoss
SigmoidBCELoss = SigmoidBinaryCrossEntropyLoss
