"""CosineSimilarity and PairwiseDistance, the module forms of kit/ops/vectors.py's functions
(PyTorch prints them without options).

>>> import kit
>>> from kit import nn
>>> nn.CosineSimilarity(dim=0)(kit.tensor([1.0, 0.0]), kit.tensor([1.0, 1.0]))
tensor(0.7071)
"""

from __future__ import annotations

from kit.nn import functional as F  # noqa: N812 - the name PyTorch code uses
from kit.nn.module import Module


class CosineSimilarity(Module):
    """The cosine of the angle between two inputs along `dim`."""

    def __init__(self, dim=1, eps=1e-8):
        super().__init__()
        self.dim = dim
        self.eps = eps

    def forward(self, x1, x2):
        return F.cosine_similarity(x1, x2, self.dim, self.eps)


class PairwiseDistance(Module):
    """The p-norm of x1 - x2 + eps along the last dim."""

    def __init__(self, p=2.0, eps=1e-6, keepdim=False):
        super().__init__()
        self.norm = p
        self.eps = eps
        self.keepdim = keepdim

    def forward(self, x1, x2):
        return F.pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)
