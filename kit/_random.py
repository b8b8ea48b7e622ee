"""Random sampling from tensors, as PyTorch spells it: randperm, multinomial, bernoulli, normal
(its tensor forms) and the in-place fills normal_, uniform_, bernoulli_. Draws come from kit's
generator (`manual_seed`, or `generator=kit.torch.Generator()`: NumPy's PCG64, so the same seed
gives the same numbers in kit, not the ones PyTorch gives), on the CPU, then move to the tensor's
device.

As in PyTorch, a sample drawn from parameters that require grad requires grad too, with a zero
gradient (bernoulli and normal are not reparameterised: write mean + std * randn_like(std) for
that).
"""

from __future__ import annotations

import numpy as np

from kit import backend
from kit._creation import _placed, _Random
from kit._inplace import _fill_op, _inplace
from kit._promotion import default_float
from kit._tensor import Tensor, int64


def _rng(generator):
    return _Random.generator if generator is None else generator.rng


def _on(t, array):
    """A host array on the device of the tensor t."""
    return backend.to_device(array, t.device)


def _host(t):
    return backend.to_device(t._data, "cpu")


def _with_zero_gradient(sample, *parameters):
    """sample, recorded as a function of `parameters` with a zero gradient (as PyTorch's
    NormalBackward / BernoulliBackward), when one of them requires grad."""
    for p in parameters:
        if isinstance(p, Tensor) and p.requires_grad:
            sample = sample + p * 0
    return sample


def randperm(n, *, generator=None, dtype=int64, device=None, requires_grad=False):
    """A random permutation of 0..n-1 (as torch.randperm).

    >>> import kit
    >>> sorted(kit.randperm(4).tolist())
    [0, 1, 2, 3]
    """
    if not isinstance(n, int) or isinstance(n, bool):
        raise TypeError(f"kit.randperm: n must be an int, got {n!r}")
    if n < 0:
        raise RuntimeError(f"kit.randperm: n must be non-negative, got {n}")
    return Tensor(_placed(_rng(generator).permutation(n).astype(dtype), device), requires_grad)


def multinomial(input, num_samples, replacement=False, *, generator=None):  # noqa: A002
    """num_samples category indices per row of the (unnormalised) probabilities `input` (1-D or
    2-D); without replacement each category at most once, zero-probability ones last."""
    if input.dtype.kind != "f":
        raise RuntimeError(f"kit.multinomial: only floating-point dtypes are supported for "
                           f"input, got {input.dtype}. Fix: input.float()")
    if input.ndim not in (1, 2):
        raise RuntimeError(f"kit.multinomial: prob_dist must be 1 or 2 dim, got {input.ndim}")
    p = _host(input).astype(np.float64).reshape(-1, input.shape[-1])
    if not np.isfinite(p).all() or (p < 0).any():
        raise RuntimeError("kit.multinomial: probability tensor contains either `inf`, `nan` or "
                           "element < 0")
    total = p.sum(-1, keepdims=True)
    if (total <= 0).any():
        raise RuntimeError("kit.multinomial: invalid multinomial distribution (sum of "
                           "probabilities <= 0)")
    n = p.shape[-1]
    if not replacement and num_samples > n:
        raise RuntimeError(f"kit.multinomial: cannot sample n_sample ({num_samples}) > "
                           f"prob_dist.size(-1) ({n}) samples without replacement. Fix: "
                           f"replacement=True")
    rng = _rng(generator)
    if replacement:  # inverse CDF: the first category whose cumulative probability exceeds u
        cdf = np.cumsum(p / total, -1)
        u = rng.random((p.shape[0], num_samples))
        picks = np.minimum((u[..., None] >= cdf[:, None, :]).sum(-1), n - 1)
    else:  # an exponential race: the smallest E / p win, each category once (E ~ Exp(1))
        with np.errstate(divide="ignore"):
            keys = rng.exponential(size=p.shape) / p
        picks = np.argsort(keys, -1, kind="stable")[:, :num_samples]
    picks = picks.reshape(input.shape[:-1] + (num_samples,)).astype(np.int64)
    return Tensor(_on(input, picks))


def bernoulli(input, p=None, *, generator=None):  # noqa: A002
    """0 or 1 (in input's dtype) for each element, 1 with probability input (or p, a number)."""
    if input.dtype.kind != "f":
        raise NotImplementedError(f"\"bernoulli\" not implemented for {input.dtype} (kit."
                                  f"bernoulli, as in PyTorch). Fix: input.float()")
    probability = _host(input) if p is None else np.full(input.shape, float(p))
    _check_probabilities(probability, "bernoulli")
    draw = _rng(generator).random(probability.shape) < probability
    return _with_zero_gradient(Tensor(_on(input, draw.astype(input.dtype))), input)


def _check_probabilities(p, op):
    if not ((p >= 0) & (p <= 1)).all():
        raise RuntimeError(f"kit.{op}: expected probabilities in [0, 1] (as PyTorch: p_in >= 0 "
                           f"&& p_in <= 1), got values from {np.nanmin(p)} to {np.nanmax(p)}")


def _check_std(std):
    low = std if isinstance(std, (int, float)) else np.min(std) if np.size(std) else 0
    if low < 0:
        raise RuntimeError(f"kit.normal: expects std >= 0.0, but found std {low}")


def normal(mean, std=1.0, size=None, *, generator=None, dtype=None, device=None,
           requires_grad=False):
    """Normal samples: normal(mean_tensor, std_tensor) (broadcast), normal(mean_tensor, 2.0),
    normal(0.0, std_tensor), or normal(0.0, 1.0, size) (as torch.normal)."""
    tensors = [t for t in (mean, std) if isinstance(t, Tensor)]
    rng = _rng(generator)
    if not tensors:
        if size is None:
            raise TypeError("kit.normal: with a number for both mean and std, give the size: "
                            "normal(0.0, 1.0, (2, 3))")
        _check_std(std)
        shape = (size,) if isinstance(size, int) else tuple(size)
        dtype = default_float() if dtype is None else np.dtype(dtype)
        draw = (mean + std * rng.standard_normal(shape)).astype(dtype)
        return Tensor(_placed(draw, device), requires_grad)
    like = tensors[0]
    m = _host(mean) if isinstance(mean, Tensor) else mean
    s = _host(std) if isinstance(std, Tensor) else std
    _check_std(s)
    shape = np.broadcast_shapes(np.shape(m), np.shape(s))
    kind = np.result_type(*(t.dtype for t in tensors))
    draw = (m + s * rng.standard_normal(shape)).astype(kind)
    return _with_zero_gradient(Tensor(_on(like, draw)), mean, std)


# --- in-place fills (Tensor methods): recorded as copy_, so a leaf that requires grad is refused
# outside no_grad, as PyTorch refuses it --------------------------------------------------------
_FILLS = {name: _inplace(name, _fill_op) for name in ("normal_", "uniform_", "bernoulli_")}


def _fill_(name, t, draw):
    return _FILLS[name](t, Tensor(_on(t, draw.astype(t.dtype))))


def normal_(self, mean=0.0, std=1.0, *, generator=None):
    """Fill with normal samples of `mean` and `std` (as Tensor.normal_)."""
    _check_std(std)
    return _fill_("normal_", self, mean + std * _rng(generator).standard_normal(tuple(self.shape)))


def uniform_(self, a=0.0, b=1.0, *, generator=None):
    """Fill with uniform samples from [a, b) (as Tensor.uniform_(from, to))."""
    return _fill_("uniform_", self, a + (b - a) * _rng(generator).random(tuple(self.shape)))


def bernoulli_(self, p=0.5, *, generator=None):
    """Fill with 0 or 1, 1 with probability p (a number, or a tensor broadcast to self)."""
    probability = _host(p) if isinstance(p, Tensor) else np.asarray(float(p))
    _check_probabilities(probability, "bernoulli_")
    draw = _rng(generator).random(tuple(self.shape)) < np.broadcast_to(probability,
                                                                       tuple(self.shape))
    return _fill_("bernoulli_", self, draw)


METHODS = {"multinomial": multinomial, "bernoulli": bernoulli, "normal_": normal_,
           "uniform_": uniform_, "bernoulli_": bernoulli_}
