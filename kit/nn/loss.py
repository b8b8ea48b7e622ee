"""Loss modules: each holds its options and calls the function of the same name.

>>> import kit
>>> from kit import nn
>>> nn.MSELoss()(kit.tensor([1.0, 3.0]), kit.tensor([1.0, 1.0]))
tensor(2.)
"""

from __future__ import annotations

from kit.nn import functional as F  # noqa: N812 - the name PyTorch code uses
from kit.nn.module import Module


class _Loss(Module):
    """Holds `reduction` ('mean', 'sum' or 'none') and a `weight` buffer where one applies."""

    def __init__(self, reduction="mean", weight=None):
        super().__init__()
        if reduction not in ("mean", "sum", "none"):
            raise ValueError(f"{reduction} is not a valid value for reduction")
        self.reduction = reduction
        if weight is not None:
            self.register_buffer("weight", weight)


class MSELoss(_Loss):
    """Mean squared error."""

    def forward(self, input, target):  # noqa: A002 - PyTorch's argument name
        return F.mse_loss(input, target, reduction=self.reduction)


class CrossEntropyLoss(_Loss):
    """Cross-entropy of logits against class indices or class probabilities."""

    def __init__(self, weight=None, ignore_index=-100, reduction="mean", label_smoothing=0.0):
        super().__init__(reduction, weight)
        self.ignore_index = ignore_index
        self.label_smoothing = label_smoothing

    def forward(self, input, target):  # noqa: A002
        return F.cross_entropy(input, target, self._buffers.get("weight"), self.ignore_index,
                               self.reduction, self.label_smoothing)


class NLLLoss(_Loss):
    """Negative log-likelihood of log-probabilities against class indices."""

    def __init__(self, weight=None, ignore_index=-100, reduction="mean"):
        super().__init__(reduction, weight)
        self.ignore_index = ignore_index

    def forward(self, input, target):  # noqa: A002
        return F.nll_loss(input, target, self._buffers.get("weight"),
                          self.ignore_index, self.reduction)


class BCELoss(_Loss):
    """Binary cross-entropy of probabilities."""

    def __init__(self, weight=None, reduction="mean"):
        super().__init__(reduction, weight)

    def forward(self, input, target):  # noqa: A002
        weight = self._buffers.get("weight")
        return F.binary_cross_entropy(input, target, weight, self.reduction)


class BCEWithLogitsLoss(_Loss):
    """Binary cross-entropy of sigmoid(logits), computed stably from the logits."""

    def __init__(self, weight=None, reduction="mean", pos_weight=None):
        super().__init__(reduction, weight)
        if pos_weight is not None:
            self.register_buffer("pos_weight", pos_weight)

    def forward(self, input, target):  # noqa: A002
        return F.binary_cross_entropy_with_logits(
            input, target, self._buffers.get("weight"), self.reduction,
            self._buffers.get("pos_weight"),
        )


class L1Loss(_Loss):
    """Mean absolute error."""

    def forward(self, input, target):  # noqa: A002
        return F.l1_loss(input, target, reduction=self.reduction)


class SmoothL1Loss(_Loss):
    """Quadratic below `beta`, linear above."""

    def __init__(self, reduction="mean", beta=1.0):
        super().__init__(reduction)
        self.beta = beta

    def forward(self, input, target):  # noqa: A002
        return F.smooth_l1_loss(input, target, reduction=self.reduction, beta=self.beta)


class HuberLoss(_Loss):
    """Quadratic below `delta`, delta times linear above."""

    def __init__(self, reduction="mean", delta=1.0):
        super().__init__(reduction)
        self.delta = delta

    def forward(self, input, target):  # noqa: A002
        return F.huber_loss(input, target, reduction=self.reduction, delta=self.delta)


class KLDivLoss(Module):
    """KL divergence of log-probabilities `input` from `target` ('batchmean' is the
    mathematical one)."""

    def __init__(self, reduction="mean", log_target=False):
        super().__init__()
        if reduction not in ("mean", "sum", "none", "batchmean"):
            raise ValueError(f"{reduction} is not a valid value for reduction")
        self.reduction = reduction
        self.log_target = log_target

    def forward(self, input, target):  # noqa: A002
        return F.kl_div(input, target, reduction=self.reduction, log_target=self.log_target)
