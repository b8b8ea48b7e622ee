"""LayerNorm, BatchNorm1d/2d (running statistics while training, used in eval mode),
InstanceNorm1d/2d, GroupNorm and RMSNorm.

>>> import kit
>>> from kit import nn
>>> nn.BatchNorm1d(4)
BatchNorm1d(4, eps=1e-05, momentum=0.1, affine=True, bias=True, track_running_stats=True)
"""

from __future__ import annotations

import warnings

from kit._creation import ones, tensor, zeros
from kit._tensor import int64
from kit.grad_mode import no_grad
from kit.nn import functional as F  # noqa: N812 - the name PyTorch code uses
from kit.nn import init
from kit.nn.module import Module
from kit.nn.parameter import Parameter


def _over_trailing_dims(module, normalized_shape, eps, elementwise_affine, device, dtype):
    """LayerNorm's and RMSNorm's common settings: the trailing dims normalised over, eps, and a
    learned scale `weight` of those dims (ones), or None."""
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    module.normalized_shape = tuple(normalized_shape)
    module.eps = eps
    module.elementwise_affine = elementwise_affine
    if elementwise_affine:
        module.weight = Parameter(ones(module.normalized_shape, device=device, dtype=dtype))
    else:
        module.register_parameter("weight", None)


class LayerNorm(Module):
    """Normalises over the trailing `normalized_shape` dims, with a learned scale and shift."""

    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, bias=True,
                 device=None, dtype=None):
        super().__init__()
        _over_trailing_dims(self, normalized_shape, eps, elementwise_affine, device, dtype)
        if elementwise_affine and bias:
            self.bias = Parameter(zeros(self.normalized_shape, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)

    def forward(self, input):  # noqa: A002 - PyTorch's argument name
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return (
            f"{self.normalized_shape}, eps={self.eps}, "
            f"elementwise_affine={self.elementwise_affine}, bias={self.bias is not None}"
        )


class _BatchNorm(Module):
    """Shared by BatchNorm1d and BatchNorm2d, which differ only in the input ranks they take."""

    ranks = ()

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True,
                 track_running_stats=True, device=None, dtype=None, *, bias=True):
        super().__init__()
        self.num_features = num_features
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        if affine:
            self.weight = Parameter(ones(num_features, device=device, dtype=dtype))
            if bias:
                self.bias = Parameter(zeros(num_features, device=device, dtype=dtype))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if track_running_stats:
            self.register_buffer("running_mean", zeros(num_features, device=device, dtype=dtype))
            self.register_buffer("running_var", ones(num_features, device=device, dtype=dtype))
            self.register_buffer("num_batches_tracked", tensor(0, dtype=int64, device=device))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)

    def reset_running_stats(self):
        if self.track_running_stats:
            init.zeros_(self.running_mean)
            init.ones_(self.running_var)
            with no_grad():
                self.num_batches_tracked.zero_()

    def forward(self, input):  # noqa: A002
        if input.ndim not in self.ranks:
            wanted = " or ".join(f"{r}D" for r in self.ranks)
            raise ValueError(
                f"{type(self).__name__}: expected {wanted} input (got {input.ndim}D input)"
            )
        if input.shape[1] != self.num_features:
            raise ValueError(
                f"{type(self).__name__}: input has {input.shape[1]} channels (dim 1) but the "
                f"layer was built with num_features={self.num_features}"
            )
        momentum = 0.0 if self.momentum is None else self.momentum
        use_batch = self.training or not self.track_running_stats
        if self.training and self.track_running_stats:
            with no_grad():
                self.num_batches_tracked.add_(1)
            if self.momentum is None:  # a cumulative moving average
                momentum = 1.0 / float(self.num_batches_tracked.item())
        track = self.training and self.track_running_stats
        return F.batch_norm(
            input, self.running_mean if track or not use_batch else None,
            self.running_var if track or not use_batch else None, self.weight, self.bias,
            use_batch, momentum, self.eps,
        )

    def extra_repr(self):
        return (
            f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
            f"affine={self.affine}, bias={self.bias is not None}, "
            f"track_running_stats={self.track_running_stats}"
        )


class BatchNorm1d(_BatchNorm):
    """Batch normalisation over (N, C) or (N, C, L) inputs."""

    ranks = (2, 3)


class BatchNorm2d(_BatchNorm):
    """Batch normalisation over (N, C, H, W) inputs."""

    ranks = (4,)


class _InstanceNorm(_BatchNorm):
    """Shared by InstanceNorm1d and InstanceNorm2d: each sample's channels normalised over their
    own `spatial` dims; no affine parameters and no running statistics by default."""

    spatial = 1

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=False,
                 track_running_stats=False, device=None, dtype=None, *, bias=True):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype,
                         bias=bias)

    def forward(self, input):  # noqa: A002
        if input.ndim not in (self.spatial + 1, self.spatial + 2):
            raise ValueError(f"expected {self.spatial + 1}D or {self.spatial + 2}D input (got "
                             f"{input.ndim}D input)")
        unbatched = input.ndim == self.spatial + 1
        x = input.unsqueeze(0) if unbatched else input
        if x.shape[1] != self.num_features:
            dim = 0 if unbatched else 1
            if self.affine:
                raise ValueError(f"expected input's size at dim={dim} to match num_features "
                                 f"({self.num_features}), but got: {x.shape[1]}.")
            warnings.warn(f"input's size at dim={dim} does not match num_features. You can "
                          f"silence this warning by not passing in num_features, which is not "
                          f"used because affine=False", UserWarning, stacklevel=2)
        out = F.instance_norm(x, self.running_mean, self.running_var, self.weight, self.bias,
                              self.training or not self.track_running_stats,
                              0.0 if self.momentum is None else self.momentum, self.eps)
        return out.squeeze(0) if unbatched else out


class InstanceNorm1d(_InstanceNorm):
    """Instance normalisation over (N, C, L) or (C, L) inputs."""


class InstanceNorm2d(_InstanceNorm):
    """Instance normalisation over (N, C, H, W) or (C, H, W) inputs."""

    spatial = 2


class GroupNorm(Module):
    """Normalises each sample over groups of its channels, with a learned per-channel scale and
    shift."""

    def __init__(self, num_groups, num_channels, eps=1e-5, affine=True, device=None, dtype=None,
                 *, bias=True):
        super().__init__()
        if num_channels % num_groups:
            raise ValueError(f"num_channels ({num_channels}) must be divisible by num_groups "
                             f"({num_groups})")
        self.num_groups = num_groups
        self.num_channels = num_channels
        self.eps = eps
        self.affine = affine
        if affine:
            self.weight = Parameter(ones(num_channels, device=device, dtype=dtype))
        else:
            self.register_parameter("weight", None)
        if affine and bias:
            self.bias = Parameter(zeros(num_channels, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)

    def forward(self, input):  # noqa: A002
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return (f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
                f"bias={self.bias is not None}")


class RMSNorm(Module):
    """Divides by the root mean square over the trailing `normalized_shape` dims, with a learned
    scale; eps=None is the machine epsilon of the input's dtype."""

    def __init__(self, normalized_shape, eps=None, elementwise_affine=True, device=None,
                 dtype=None):
        super().__init__()
        _over_trailing_dims(self, normalized_shape, eps, elementwise_affine, device, dtype)

    def forward(self, input):  # noqa: A002
        return F.rms_norm(input, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self):
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}")
