"""torch.nn.MultiheadAttention on kit's primitives: the same parameters as PyTorch's (so its
state_dict loads), the same masks and the same outputs, both with the attention weights (PyTorch's
path that scales the queries first) and without them (scaled_dot_product_attention, whose fully
hidden rows give 0). Compared with PyTorch in tests/test_nn_more_api.py.

>>> import kit
>>> from kit import nn
>>> x = kit.ones(5, 2, 4)
>>> out, weights = nn.MultiheadAttention(4, 2)(x[:3], x, x)
>>> out.shape, weights.shape
((3, 2, 4), (2, 3, 5))
"""

from __future__ import annotations

import math

from kit._creation import empty, zeros
from kit.nn import functional as F  # noqa: N812 - the name PyTorch code uses
from kit.nn import init
from kit.nn.layers import Linear
from kit.nn.module import Module
from kit.nn.parameter import Parameter
from kit.ops.elementwise import where
from kit.ops.linalg import matmul
from kit.ops.movement import cat


class NonDynamicallyQuantizableLinear(Linear):
    """MultiheadAttention's output projection: a Linear under the name PyTorch prints."""


def _additive(mask, name, dtype):
    """A bool mask (True: hidden) or a float mask (added) as the float mask to add."""
    if mask is None:
        return None
    if mask.dtype.kind == "b":
        return where(mask, -math.inf, 0.0).to(dtype)
    if mask.dtype.kind != "f":
        raise AssertionError(f"only bool and floating types of {name} are supported "
                             f"(kit.MultiheadAttention, as in PyTorch)")
    return mask


class MultiheadAttention(Module):
    """Attention over `num_heads` heads of `embed_dim // num_heads` features, with input and
    output projections, as torch.nn.MultiheadAttention: the same parameters (so a PyTorch
    state_dict loads), the same masks (True in a bool mask hides, as there) and outputs."""

    def __init__(self, embed_dim, num_heads, dropout=0.0, bias=True, add_bias_kv=False,
                 add_zero_attn=False, kdim=None, vdim=None, batch_first=False, device=None,
                 dtype=None):
        super().__init__()
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(f"embed_dim and num_heads must be greater than 0, got embed_dim="
                             f"{embed_dim} and num_heads={num_heads} instead")
        if embed_dim % num_heads:
            raise AssertionError("embed_dim must be divisible by num_heads")
        self.embed_dim, self.num_heads, self.dropout = embed_dim, num_heads, dropout
        self.kdim = embed_dim if kdim is None else kdim
        self.vdim = embed_dim if vdim is None else vdim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.head_dim = embed_dim // num_heads
        self.batch_first = batch_first
        options = {"device": device, "dtype": dtype}
        if self._qkv_same_embed_dim:
            self.in_proj_weight = Parameter(empty(3 * embed_dim, embed_dim, **options))
            for name in ("q_proj_weight", "k_proj_weight", "v_proj_weight"):
                self.register_parameter(name, None)
        else:
            self.q_proj_weight = Parameter(empty(embed_dim, embed_dim, **options))
            self.k_proj_weight = Parameter(empty(embed_dim, self.kdim, **options))
            self.v_proj_weight = Parameter(empty(embed_dim, self.vdim, **options))
            self.register_parameter("in_proj_weight", None)
        if bias:
            self.in_proj_bias = Parameter(empty(3 * embed_dim, **options))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = NonDynamicallyQuantizableLinear(embed_dim, embed_dim, bias, **options)
        if add_bias_kv:
            self.bias_k = Parameter(empty(1, 1, embed_dim, **options))
            self.bias_v = Parameter(empty(1, 1, embed_dim, **options))
        else:
            self.bias_k = self.bias_v = None
        self.add_zero_attn = add_zero_attn
        self._reset_parameters()

    def _reset_parameters(self):
        for weight in (self.in_proj_weight, self.q_proj_weight, self.k_proj_weight,
                       self.v_proj_weight):
            if weight is not None:
                init.xavier_uniform_(weight)
        if self.in_proj_bias is not None:
            init.constant_(self.in_proj_bias, 0.0)
            init.constant_(self.out_proj.bias, 0.0)
        for extra in (self.bias_k, self.bias_v):
            if extra is not None:
                init.xavier_normal_(extra)

    def _projections(self):
        """The query, key and value weights and biases."""
        e = self.embed_dim
        if self._qkv_same_embed_dim:
            w = self.in_proj_weight
            weights = (w[:e], w[e:2 * e], w[2 * e:])
        else:
            weights = (self.q_proj_weight, self.k_proj_weight, self.v_proj_weight)
        b = self.in_proj_bias
        biases = (None,) * 3 if b is None else (b[:e], b[e:2 * e], b[2 * e:])
        return weights, biases

    def forward(self, query, key, value, key_padding_mask=None, need_weights=True,
                attn_mask=None, average_attn_weights=True, is_causal=False):
        """(output, weights), output shaped as `query`; weights (N, L, S), or (N, H, L, S)
        without averaging over heads, or None without need_weights."""
        if is_causal and attn_mask is None:
            raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the "
                               "Transformer module method `generate_square_subsequent_mask` to "
                               "create this mask. (kit.MultiheadAttention, as in PyTorch)")
        batched = query.ndim == 3
        if query.shape[-1] != self.embed_dim:
            raise AssertionError(f"was expecting embedding dimension of {self.embed_dim}, but "
                                 f"got {query.shape[-1]}")
        compared = slice(None) if self._qkv_same_embed_dim else slice(-1)
        if tuple(key.shape[compared]) != tuple(value.shape[compared]):
            raise AssertionError(f"key shape {tuple(key.shape)} does not match value shape "
                                 f"{tuple(value.shape)}")
        if not batched:  # (L, E): a batch of one
            query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
            if key_padding_mask is not None:
                key_padding_mask = key_padding_mask.unsqueeze(0)
        elif self.batch_first:
            query, key, value = (t.transpose(0, 1) for t in (query, key, value))
        out, weights = self._attend(query, key, value, key_padding_mask, need_weights,
                                    attn_mask)
        if need_weights and average_attn_weights:
            weights = weights.mean(1)
        if not batched:
            return out.squeeze(1), None if weights is None else weights.squeeze(0)
        return (out.transpose(0, 1) if self.batch_first else out), weights

    def _attend(self, query, key, value, key_padding_mask, need_weights, attn_mask):
        """Attention of (L, N, E) queries over (S, N, *) keys and values."""
        length, n, e = query.shape
        heads, head_dim = self.num_heads, self.head_dim
        mask = _additive(attn_mask, "attn_mask", query.dtype)  # (checked first, as PyTorch)
        padding = _additive(key_padding_mask, "key_padding_mask", query.dtype)
        if mask is not None and mask.ndim == 3:
            if tuple(mask.shape) != (n * heads, length, key.shape[0]):
                raise RuntimeError(f"The shape of the 3D attn_mask is torch.Size("
                                   f"{list(mask.shape)}), but should be "
                                   f"({n * heads}, {length}, {key.shape[0]}). "
                                   f"(kit.MultiheadAttention, as in PyTorch)")
            mask = mask.reshape(n, heads, length, -1)
        (wq, wk, wv), (bq, bk, bv) = self._projections()
        q, k, v = F.linear(query, wq, bq), F.linear(key, wk, bk), F.linear(value, wv, bv)
        if self.bias_k is not None:  # one more key and value, learned; the masks let it in
            k = cat([k, self.bias_k.expand(1, n, e)], 0)
            v = cat([v, self.bias_v.expand(1, n, e)], 0)
            mask, padding = _one_more_key(mask), _one_more_key(padding)
        # (S, N, E) -> (N, H, S, head_dim)
        q, k, v = (t.reshape(t.shape[0], n, heads, head_dim).permute(1, 2, 0, 3)
                   for t in (q, k, v))
        if self.add_zero_attn:  # and one more key and value of zeros
            zero = zeros(n, heads, 1, head_dim, dtype=q.dtype, device=q.device)
            k, v = cat([k, zero], 2), cat([v, zero], 2)
            mask, padding = _one_more_key(mask), _one_more_key(padding)
        if padding is not None:
            padding = padding.reshape(n, 1, 1, -1)
            mask = padding if mask is None else mask + padding
        dropout_p = self.dropout if self.training else 0.0
        if not need_weights:  # (PyTorch's scaled_dot_product_attention path)
            out, weights = F.scaled_dot_product_attention(q, k, v, mask, dropout_p), None
        else:  # q scaled first, then the scores, as PyTorch's path that returns the weights
            scores = matmul(q * math.sqrt(1.0 / head_dim), k.transpose(-2, -1))
            weights = F.softmax(scores if mask is None else scores + mask, -1)
            if dropout_p > 0:
                weights = F.dropout(weights, dropout_p)
            out = matmul(weights, v)
        out = out.permute(2, 0, 1, 3).reshape(length, n, e)
        return self.out_proj(out), weights


def _one_more_key(mask):
    """A mask over one more key (appended last, not hidden)."""
    if mask is None:
        return None
    return cat([mask, zeros(*mask.shape[:-1], 1, dtype=mask.dtype, device=mask.device)], -1)
