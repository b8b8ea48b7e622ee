"""torch.nn.functional.scaled_dot_product_attention: softmax(q k^T * scale + mask) v, a composite
of kit's primitives (the module: kit/nn/multihead_attention.py). A row that its mask hides
entirely gives zeros (and no gradient), as PyTorch 2.13's CPU kernel gives, not the NaN of a
softmax over -inf alone. Compared with PyTorch in
tests/test_nn_more_api.py.

>>> import kit
>>> from kit.nn import functional as F
>>> q = kit.ones(1, 2, 4)
>>> F.scaled_dot_product_attention(q, q, kit.tensor([[[1.0], [3.0]]])).shape
(1, 2, 1)
"""

from __future__ import annotations

import math

import numpy as np

from kit._creation import ones
from kit.nn.functional_more import _torch_name
from kit.ops.composite import softmax
from kit.ops.elementwise import where
from kit.ops.linalg import matmul

__all__ = ["scaled_dot_product_attention"]


def _check(query, key, value, attn_mask, dropout_p, is_causal):
    if is_causal and attn_mask is not None:
        raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be set "
                           "when is_causal=True (kit.scaled_dot_product_attention, as in "
                           "PyTorch). Fix: fold the causal mask into attn_mask, or drop it")
    if not query.dtype == key.dtype == value.dtype:
        raise RuntimeError(f"Expected query, key, and value to have the same dtype, but got "
                           f"query.dtype: {query.dtype} key.dtype: {key.dtype} and value.dtype: "
                           f"{value.dtype} instead. (kit.scaled_dot_product_attention, as in "
                           f"PyTorch). Fix: convert them to one dtype")
    if query.dtype.kind != "f":
        raise RuntimeError(f"expected scalar type Float but found {_torch_name(query.dtype)} "
                           f"(kit.scaled_dot_product_attention, as in PyTorch). Fix: "
                           f"query.float(), key.float(), value.float()")
    if attn_mask is not None and not (attn_mask.dtype.kind == "b" or attn_mask.dtype in (
            query.dtype, np.float32)):
        raise RuntimeError(f"Expected attn_mask dtype to be bool or float or to match query "
                           f"dtype, but got attn_mask.dtype: {attn_mask.dtype} and query.dtype: "
                           f"{query.dtype} instead. (kit.scaled_dot_product_attention, as in "
                           f"PyTorch). Fix: a bool mask (True: attend) or an additive float mask")
    if not 0 <= dropout_p <= 1:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {dropout_p} "
                         f"(kit.scaled_dot_product_attention)")


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0,
                                 is_causal=False, scale=None, enable_gqa=False):
    """softmax(query key^T * scale + mask) value over (..., L, E), (..., S, E), (..., S, Ev).

    attn_mask: bool (True where a query may attend) or float (added to the scores); is_causal
    hides the keys after each query; scale defaults to 1 / sqrt(E); dropout_p drops attention
    weights (kit's random numbers, not PyTorch's: the same in distribution, not in value);
    enable_gqa repeats each key and value head for its group of query heads.
    """
    _check(query, key, value, attn_mask, dropout_p, is_causal)
    if enable_gqa and key.ndim >= 3 and key.shape[-3] != query.shape[-3]:
        repeats = query.shape[-3] // key.shape[-3]
        key = key.repeat_interleave(repeats, -3)
        value = value.repeat_interleave(repeats, -3)
    scale = 1 / math.sqrt(query.shape[-1]) if scale is None else scale
    scores = matmul(query, key.transpose(-2, -1)) * scale
    if is_causal:
        attn_mask = ones(query.shape[-2], key.shape[-2], dtype="bool",
                         device=query.device).tril()
    if attn_mask is not None and attn_mask.dtype.kind == "b":
        scores = where(attn_mask, scores, -math.inf)
    elif attn_mask is not None:
        scores = scores + attn_mask
    # NOTE: a row hidden entirely sees 0s (softmax over -inf alone is NaN, its gradient too)
    # and its weights are then 0, so its output is 0, as PyTorch's CPU kernel gives
    hidden = (scores == -math.inf).all(-1, keepdim=True)
    weights = where(hidden, 0.0, softmax(where(hidden, 0.0, scores), -1))
    if dropout_p > 0:
        from kit.nn.functional import dropout  # (here: kit.nn.functional imports this file)

        weights = dropout(weights, dropout_p)
    return matmul(weights, value)

