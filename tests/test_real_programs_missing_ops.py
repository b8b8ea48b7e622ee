"""Real PyTorch programs that call the ops added for issue 12, unchanged but for the import: each
runs on kit.torch and on PyTorch 2.13 with the same float64 inputs, and the results and
gradients agree. The patterns: causal self-attention (baddbmm, triu, masked_fill, bmm), Gaussian
process regression (cholesky, solve, diagonal, logdet), a 1-D signal model (pad, conv1d,
max_pool1d, interpolate, flip, roll), distributional losses (quantile, median, cumprod,
logcumsumexp), metric learning (normalize, cosine_similarity, pairwise_distance, one_hot)."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import host

import kit.torch as ktorch

torch = pytest.importorskip("torch")
RNG = np.random.default_rng(12)


def _agree(program, *arrays, rtol=1e-10):
    results = []
    for m in (ktorch, torch):
        inputs = [m.tensor(a, dtype=m.float64, requires_grad=True) for a in arrays]
        out = program(m, *inputs)
        grads = m.autograd.grad(out, inputs)
        results.append([out, *grads])
    for got, expected in zip(*results, strict=True):
        np.testing.assert_allclose(host(got), expected.detach().numpy(), rtol=rtol, atol=1e-12)


def test_causal_self_attention():
    def program(m, x, w_qkv, bias):
        batch, steps, width = x.shape
        q, k, v = (x @ w_qkv).chunk(3, dim=-1)
        causal = m.triu(m.ones(steps, steps, dtype=m.bool), diagonal=1)
        scores = m.baddbmm(bias.expand(batch, steps, steps), q, k.transpose(1, 2),
                           alpha=width ** -0.5)
        weights = scores.masked_fill(causal, float("-inf")).softmax(dim=-1)
        return m.bmm(weights, v).square().sum()

    _agree(program, RNG.standard_normal((2, 4, 3)), RNG.standard_normal((3, 9)),
           RNG.standard_normal((1, 4, 4)))


def test_gaussian_process_negative_log_marginal_likelihood():
    def program(m, log_scale, log_noise, points, targets):
        squared = (points.unsqueeze(1) - points.unsqueeze(0)).square().sum(-1)
        kernel = m.exp(-0.5 * squared / m.exp(2 * log_scale))
        covariance = kernel + m.exp(log_noise) * m.eye(len(points), dtype=m.float64)
        low = m.linalg.cholesky(covariance)
        alpha = m.linalg.solve(covariance, targets)
        half_logdet = m.log(m.diagonal(low)).sum()
        fit = 0.5 * targets @ alpha + half_logdet
        return fit + 1e-3 * (m.logdet(covariance) - 2 * half_logdet) + m.linalg.det(
            covariance[:2, :2])

    _agree(program, np.array(0.3), np.array(-1.0), RNG.uniform(-2, 2, (6, 2)),
           RNG.standard_normal(6), rtol=1e-8)


def test_a_one_dimensional_signal_model():
    def program(m, signal, kernel, bias):
        F = m.nn.functional
        padded = F.pad(signal, (2, 2), mode="reflect")
        features = F.conv1d(padded, kernel, bias, stride=1)
        pooled = F.max_pool1d(m.tanh(features), 2)
        upsampled = F.interpolate(pooled, scale_factor=2, mode="linear")
        mirrored = upsampled.flip(-1) + m.roll(upsampled, 1, -1)
        return F.avg_pool1d(mirrored, 3).square().mean() + F.pad(signal, (1, 1)).abs().sum()

    _agree(program, RNG.standard_normal((2, 3, 10)), RNG.standard_normal((4, 3, 5)),
           RNG.standard_normal(4))


def test_distributional_losses():
    def program(m, predictions, rewards):
        levels = m.tensor([0.1, 0.5, 0.9], dtype=m.float64)
        quantiles = m.quantile(predictions, levels, dim=1)  # (3, batch)
        errors = rewards.unsqueeze(0) - quantiles
        pinball = m.maximum(levels.unsqueeze(1) * errors, (levels.unsqueeze(1) - 1) * errors)
        discounts = m.cumprod(m.full((4,), 0.9, dtype=m.float64), 0)
        returns = (rewards.unsqueeze(-1) * discounts).sum(-1)
        soft = m.logcumsumexp(predictions, dim=1)[:, -1]
        return pinball.mean() + m.median(predictions) + returns.sum() + soft.mean() + \
            m.kthvalue(predictions, 2, dim=1).values.sum()

    _agree(program, RNG.standard_normal((5, 7)), RNG.standard_normal(5))


def test_metric_learning():
    def program(m, anchors, others):
        F = m.nn.functional
        a, b = F.normalize(anchors, dim=1), F.normalize(others, dim=1)
        labels = m.tensor([0, 1, 2, 1])
        targets = F.one_hot(labels, 3).to(m.float64)
        similarity = F.cosine_similarity(a.unsqueeze(1), b.unsqueeze(0), dim=-1)
        margin = F.pairwise_distance(anchors, others) - 0.5
        return (similarity[:, :3] * targets).sum() + m.clamp_min(margin, 0).sum() + \
            m.addcmul(a, a, b, value=0.5).sum()

    _agree(program, RNG.standard_normal((4, 5)), RNG.standard_normal((4, 5)))
