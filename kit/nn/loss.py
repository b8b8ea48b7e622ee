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


class SoftMarginLoss(_Loss):
    """log(1 + exp(-target * input))."""

    def forward(self, input, target):  # noqa: A002
        return F.soft_margin_loss(input, target, reduction=self.reduction)


class _MarginLoss(_Loss):
    """A loss with a `margin`."""

    def __init__(self, margin=0.0, reduction="mean"):
        super().__init__(reduction)
        self.margin = margin


class MarginRankingLoss(_MarginLoss):
    """max(0, -target * (input1 - input2) + margin)."""

    def forward(self, input1, input2, target):
        return F.margin_ranking_loss(input1, input2, target, self.margin, self.reduction)


class HingeEmbeddingLoss(_MarginLoss):
    """input where target is 1, max(0, margin - input) where it is -1."""

    def __init__(self, margin=1.0, reduction="mean"):
        super().__init__(margin, reduction)

    def forward(self, input, target):  # noqa: A002
        return F.hinge_embedding_loss(input, target, self.margin, self.reduction)


class CosineEmbeddingLoss(_MarginLoss):
    """1 - cos where target is 1, max(0, cos - margin) where it is -1."""

    def forward(self, input1, input2, target):
        return F.cosine_embedding_loss(input1, input2, target, self.margin, self.reduction)


class TripletMarginLoss(_MarginLoss):
    """max(0, margin + d(anchor, positive) - d(anchor, negative))."""

    def __init__(self, margin=1.0, p=2.0, eps=1e-6, swap=False, reduction="mean"):
        super().__init__(margin, reduction)
        self.p, self.eps, self.swap = p, eps, swap

    def forward(self, anchor, positive, negative):
        return F.triplet_margin_loss(anchor, positive, negative, self.margin, self.p, self.eps,
                                     self.swap, self.reduction)


class PoissonNLLLoss(_Loss):
    """The negative log-likelihood of a Poisson target with rate exp(input) (or input)."""

    def __init__(self, log_input=True, full=False, eps=1e-8, reduction="mean"):
        super().__init__(reduction)
        self.log_input, self.full, self.eps = log_input, full, eps

    def forward(self, log_input, target):
        return F.poisson_nll_loss(log_input, target, self.log_input, self.full, self.eps,
                                  self.reduction)


class GaussianNLLLoss(_Loss):
    """The negative log-likelihood of a Gaussian target with mean input and variance var."""

    def __init__(self, *, full=False, eps=1e-6, reduction="mean"):
        super().__init__(reduction)
        self.full, self.eps = full, eps

    def forward(self, input, target, var):  # noqa: A002
        return F.gaussian_nll_loss(input, target, var, self.full, self.eps, self.reduction)


class MultiLabelSoftMarginLoss(_Loss):
    """The mean over classes of the binary cross-entropy of sigmoid(input)."""

    def __init__(self, weight=None, reduction="mean"):
        super().__init__(reduction, weight)

    def forward(self, input, target):  # noqa: A002
        return F.multilabel_soft_margin_loss(input, target, self._buffers.get("weight"),
                                             self.reduction)


class MultiMarginLoss(_Loss):
    """The multi-class hinge loss: max(0, margin - input[y] + input[j])^p over classes j."""

    def __init__(self, p=1, margin=1.0, weight=None, reduction="mean"):
        super().__init__(reduction, weight)
        if p not in (1, 2):
            raise ValueError("only p == 1 and p == 2 supported")
        if weight is not None and weight.ndim != 1:
            raise ValueError(f"MultiMarginLoss: expected weight to be None or 1D tensor, got "
                             f"{weight.ndim}D instead")
        self.p, self.margin = p, margin

    def forward(self, input, target):  # noqa: A002
        return F.multi_margin_loss(input, target, self.p, self.margin,
                                   self._buffers.get("weight"), self.reduction)
