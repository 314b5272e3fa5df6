"""ALiBi: attention with linear biases (Press, Smith and Lewis, ICLR 2022).

ALiBi adds no position code to the tokens. Each head h adds a bias to its attention
logits that falls linearly with the distance from the query to the key,

    logit(q, k) = q . k / sqrt(d) - m_h * (q - k),

with a fixed slope m_h per head (no learned parameter). For n heads, n a power of two,
the slopes are the geometric sequence that starts at 2**(-8/n) and has that ratio:

    m_h = 2**(-8 h / n),  h = 1 .. n,

so the last is 2**-8. For another n the paper's code (``get_slopes`` in
github.com/ofirpress/attention_with_linear_biases, fairseq/models/transformer.py, and
``_get_alibi_slopes`` behind transformers' BLOOM ``build_alibi_tensor``) takes the c
slopes of the largest power of two c < n and then the first n - c of the odd-numbered
slopes of 2c heads, 2**(-8 k / (2c)) for k = 1, 3, 5, ...: they fall between the first
ones. Everything is numpy float64.
"""

from __future__ import annotations

import numpy as np

from posenc._validation import as_int_array, check_positive_int


def _geometric_slopes(num_heads: int) -> np.ndarray:
    """2**(-8 h / n) for h = 1 .. n: the paper's slopes for a power of two n, (n,)."""
    return 2.0 ** (-8.0 * np.arange(1, num_heads + 1) / num_heads)


def alibi_slopes(num_heads: int) -> np.ndarray:
    """The slope m_h of each head, (num_heads,), float64, largest first.

    ``num_heads``: a positive integer n. For a power of two n, m_h = 2**(-8 h / n),
    h = 1 .. n. Otherwise, with c the largest power of two below n: the c slopes of c
    heads, then 2**(-8 k / (2c)) for the odd k = 1, 3, ..., 2(n - c) - 1 (the paper's
    rule, as in its code and transformers' BLOOM; the module docstring says where).
    """
    num_heads = check_positive_int(num_heads, "num_heads")
    closest = 1 << (num_heads.bit_length() - 1)  # the largest power of two <= n
    slopes = _geometric_slopes(closest)
    if closest == num_heads:
        return slopes
    between = _geometric_slopes(2 * closest)[0::2][: num_heads - closest]
    return np.concatenate([slopes, between])


def alibi_bias(
    num_heads: int, query_positions: object, key_positions: object
) -> np.ndarray:
    """ALiBi's bias on the attention logits, (num_heads, len(query), len(key)), float64.

    Entry [h, i, j] = -m_h * (q_i - k_j), m_h from :func:`alibi_slopes`, for query
    positions q (``query_positions``) and key positions k (``key_positions``), each a
    1-D sequence of integers. It depends on q - k only; a key j positions back costs
    m_h * j. A key after its query (k > q) gets a positive bias: the paper's decoder
    removes those with its causal mask (:func:`posenc.causal_mask`), and so must a
    caller. Add it to q . k / sqrt(d) before the softmax.
    """
    slopes = alibi_slopes(num_heads)
    queries = as_int_array(query_positions, "query_positions")
    keys = as_int_array(key_positions, "key_positions")
    # m_h * (k - q) = -m_h * (q - k), written so that q = k gives +0.0, not -0.0
    offset = (keys[None, :] - queries[:, None]).astype(np.float64)
    return slopes[:, None, None] * offset[None, :, :]
