"""Scaled dot-product attention in numpy (Vaswani et al. 2017, eq. 1).

Shapes follow the row convention of the papers' code: a sequence of ``n`` vectors of
size ``d`` is an array of shape ``(..., n, d)``, one token per row. Leading batch
dimensions must match exactly; nothing is broadcast.
"""

from __future__ import annotations

import numpy as np

from posenc._validation import as_float_array, check_positive_int


def softmax(scores: np.ndarray, axis: int = -1) -> np.ndarray:
    """Numerically stable softmax along ``axis``.

    Computes exp(s - max s) / sum exp(s - max s). ``scores`` may hold -inf
    (a masked entry) as long as every slice along ``axis`` keeps a finite
    entry; NaN and +inf are a ``ValueError``.
    """
    scores = np.asarray(scores, dtype=np.float64)
    if np.any(np.isnan(scores)) or np.any(scores == np.inf):
        raise ValueError("scores must not contain NaN or +inf")
    largest = np.max(scores, axis=axis, keepdims=True)
    if np.any(largest == -np.inf):
        raise ValueError(
            "scores: every slice along axis needs a finite entry "
            "(a row is fully masked)"
        )
    exps = np.exp(scores - largest)
    return exps / np.sum(exps, axis=axis, keepdims=True)


def causal_mask(num_positions: int) -> np.ndarray:
    """Boolean (n, n) mask, True where query m may see key n: n <= m."""
    num_positions = check_positive_int(num_positions, "num_positions")
    return np.tril(np.ones((num_positions, num_positions), dtype=bool))


def _check_qkv(
    query: object, key: object, value: object
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Float64 copies of query, key, value after checking their shapes."""
    named = {"query": query, "key": key, "value": value}
    query, key, value = (as_float_array(v, n) for n, v in named.items())
    for name, array in (("query", query), ("key", key), ("value", value)):
        if array.ndim < 2:
            raise ValueError(
                f"{name} must have shape (..., seq, dim) with at least 2 "
                f"dimensions, got shape {array.shape}"
            )
    shapes = f"{query.shape}, {key.shape}, {value.shape}"
    if not (query.ndim == key.ndim == value.ndim):
        raise ValueError(
            "query, key and value must have the same number of "
            f"dimensions, got shapes {shapes}"
        )
    if not (query.shape[:-2] == key.shape[:-2] == value.shape[:-2]):
        raise ValueError(
            "query, key and value must have the same leading (batch) "
            f"dimensions, got shapes {shapes}"
        )
    if key.shape[-1] != query.shape[-1]:
        raise ValueError(
            f"key must have the same last dimension d_k as query "
            f"({query.shape[-1]}), got shape {key.shape}"
        )
    if value.shape[-2] != key.shape[-2]:
        raise ValueError(
            f"value must have as many rows as key ({key.shape[-2]}), "
            f"got shape {value.shape}"
        )
    if min(query.shape[-2], key.shape[-2], query.shape[-1]) == 0:
        raise ValueError(
            "query and key must have at least one position and one feature"
        )
    return query, key, value


def _allowed_keys(
    mask: object, causal: object, num_queries: int, num_keys: int
) -> np.ndarray:
    """Boolean (n_q, n_k): which keys each query may see."""
    if not isinstance(causal, bool):
        raise TypeError(f"causal must be a bool, got {causal!r}")
    allowed = np.ones((num_queries, num_keys), dtype=bool)
    if mask is not None:
        mask = np.asarray(mask)
        if mask.dtype != bool:
            raise TypeError(
                "mask must be a boolean array (True = may attend), "
                f"got dtype {mask.dtype}"
            )
        if mask.shape != (num_queries, num_keys):
            raise ValueError(
                "mask must have shape (n_q, n_k) = "
                f"{(num_queries, num_keys)}, got {mask.shape}"
            )
        allowed &= mask
    if causal:
        if num_queries != num_keys:
            raise ValueError(
                "causal=True needs as many queries as keys, "
                f"got {num_queries} and {num_keys}"
            )
        allowed &= causal_mask(num_queries)
    if not np.all(allowed.any(axis=-1)):
        rows = np.flatnonzero(~allowed.any(axis=-1)).tolist()
        raise ValueError(f"mask leaves query rows {rows} with no key to attend to")
    return allowed


def scaled_dot_product_attention(
    query: np.ndarray,
    key: np.ndarray,
    value: np.ndarray,
    *,
    mask: np.ndarray | None = None,
    causal: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """softmax(Q Kᵀ / sqrt(d_k)) V (Vaswani et al. eq. 1) and the weights.

    query (..., n_q, d_k), key (..., n_k, d_k), value (..., n_k, d_v),
    same leading dims. mask: optional boolean (n_q, n_k), True where a
    query may attend to a key. causal: query m sees keys 0..m only.
    Returns outputs (..., n_q, d_v) and weights (..., n_q, n_k).
    """
    query, key, value = _check_qkv(query, key, value)
    allowed = _allowed_keys(mask, causal, query.shape[-2], key.shape[-2])
    scores = query @ np.swapaxes(key, -1, -2) / np.sqrt(query.shape[-1])
    weights = softmax(np.where(allowed, scores, -np.inf), axis=-1)
    return weights @ value, weights


def self_attention(
    tokens: np.ndarray,
    w_query: np.ndarray,
    w_key: np.ndarray,
    w_value: np.ndarray,
    *,
    causal: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """One attention head over a sequence: Q = X W_q, K = X W_k, V = X W_v.

    tokens: (..., n, d_model); w_query, w_key: (d_model, d_k);
    w_value: (d_model, d_v).
    Returns scaled_dot_product_attention(Q, K, V, causal=causal).
    """
    tokens = as_float_array(tokens, "tokens")
    if tokens.ndim < 2:
        raise ValueError(
            f"tokens must have shape (..., seq, d_model), got {tokens.shape}"
        )
    d_model = tokens.shape[-1]
    named = {"w_query": w_query, "w_key": w_key, "w_value": w_value}
    projections = []
    for name, weight in named.items():
        weight = as_float_array(weight, name)
        if weight.ndim != 2 or weight.shape[0] != d_model:
            raise ValueError(
                f"{name} must have shape (d_model={d_model}, d_out), got {weight.shape}"
            )
        projections.append(tokens @ weight)
    query, key, value = projections
    return scaled_dot_product_attention(query, key, value, causal=causal)


def attention_entropy(weights: np.ndarray, axis: int = -1) -> np.ndarray:
    """Shannon entropy H = -sum_j p_j ln p_j of attention weights along ``axis``, in nats.

    ``weights``: (..., n_k) rows of a softmax (non-negative, each summing to 1 within 1e-9),
    e.g. the second output of :func:`scaled_dot_product_attention`. Returns shape (...,):
    0 for a one-hot row, ln n_k for a uniform one. Zero weights contribute 0 (p ln p -> 0).
    """
    weights = as_float_array(weights, "weights")
    if weights.ndim == 0:
        raise ValueError("weights must have at least one axis")
    if np.any(weights < 0):
        raise ValueError("weights must be non-negative")
    if not np.allclose(weights.sum(axis=axis), 1.0, rtol=0, atol=1e-9):
        raise ValueError("weights must sum to 1 along axis (rows of a softmax)")
    safe = np.where(weights > 0, weights, 1.0)
    return -np.sum(weights * np.log(safe), axis=axis)
