"""T5's relative position buckets (Raffel et al., JMLR 2020, sec. 2.1).

T5 adds to each attention logit a learned scalar b[bucket(k - q)], one table per layer
(shared by the layers) with one column per head. The bucket of a relative position
r = k - q (key position minus query position, transformers' ``memory_position -
context_position``) is:

* bidirectional (the encoder): half the buckets, B = num_buckets / 2, for r <= 0, the
  other half, offset by B, for r > 0; then n = |r|;
* unidirectional (the decoder): n = max(-r, 0), so every key after the query falls in
  bucket 0 with r = 0 (the causal mask removes them anyway), and B = num_buckets;
* within the B buckets, the first E = B // 2 are exact: bucket n for n < E; the rest
  grow logarithmically up to ``max_distance`` M,

      bucket(n) = min(E + floor(ln(n / E) / ln(M / E) * (B - E)), B - 1),  n >= E,

  so every n >= M shares the last bucket.

The buckets are those of transformers' ``T5Attention._relative_position_bucket``
(5.24), which computes the logarithm in float32: this module does the same arithmetic
in numpy float32, and ``tests/golden/t5_buckets_transformers.npz`` holds transformers'
own buckets on a grid of relative positions and options. Where transformers computes
nonsense this module refuses, naming the argument: an odd ``num_buckets`` when
bidirectional (its ``//`` leaves bucket num_buckets - 1 unused), too few buckets for
one exact bucket (E = 0 divides by ln(M / 0)), and ``max_distance`` <= E (a logarithm
of a number <= 1 in the denominator).
"""

from __future__ import annotations

import math

import numpy as np

from posenc._validation import check_bool, check_positive_int, is_torch_tensor


def _as_int_array_any_shape(value: object, name: str) -> np.ndarray:
    """``value`` as an int64 array of any shape (a Python int gives a 0-d array).

    Floats (even whole ones), booleans, strings and torch tensors are a TypeError.
    """
    if is_torch_tensor(value):
        raise TypeError(
            f"{name} must be a numpy array of integers, got a torch tensor; "
            "call .numpy() first"
        )
    if isinstance(value, (str, bytes)):
        raise TypeError(f"{name} must hold integers, got {type(value).__name__}")
    array = np.asarray(value)
    if array.size == 0 and not isinstance(value, np.ndarray):
        array = array.astype(np.int64)  # an empty list has no integer dtype of its own
    if array.dtype == bool or not np.issubdtype(array.dtype, np.integer):
        raise TypeError(f"{name} must hold integers, got dtype {array.dtype}")
    return array.astype(np.int64, copy=False)


def t5_relative_position_bucket(
    relative_position: object,
    *,
    bidirectional: bool = True,
    num_buckets: int = 32,
    max_distance: int = 128,
) -> np.ndarray:
    """T5's bucket of each relative position, int64, the shape of ``relative_position``.

    ``relative_position``: integers r = key position - query position, any shape (a
    (query, key) grid of them gives the bucket of each logit); ``bidirectional``: True
    (the encoder: separate buckets for keys before and after the query) or False (the
    decoder); ``num_buckets``: how many buckets (even when bidirectional); ``max_distance``:
    the distance M from which every position shares the last bucket. The buckets lie
    in 0 .. num_buckets - 1; the module docstring gives the rule. Agrees with
    transformers' ``T5Attention._relative_position_bucket`` for every relative position.
    """
    position = _as_int_array_any_shape(relative_position, "relative_position")
    bidirectional = check_bool(bidirectional, "bidirectional")
    num_buckets = check_positive_int(num_buckets, "num_buckets")
    max_distance = check_positive_int(max_distance, "max_distance")
    if bidirectional and num_buckets % 2:
        raise ValueError(
            f"num_buckets must be even when bidirectional (half for each direction), "
            f"got {num_buckets}; transformers' num_buckets // 2 leaves the last unused"
        )
    half = num_buckets // 2 if bidirectional else num_buckets
    max_exact = half // 2
    if max_exact < 1:
        least = 4 if bidirectional else 2
        raise ValueError(
            f"num_buckets must be at least {least} "
            f"({'bidirectional' if bidirectional else 'unidirectional'}: one exact "
            f"bucket at least), got {num_buckets}"
        )
    if max_distance <= max_exact:
        raise ValueError(
            f"max_distance must exceed the {max_exact} exact buckets' range "
            f"(num_buckets {num_buckets}), got {max_distance}"
        )
    buckets = np.zeros(position.shape, dtype=np.int64)
    if bidirectional:
        buckets += (position > 0) * half
        distance = np.abs(position)
    else:
        distance = -np.minimum(position, 0)
    large = distance >= max_exact
    # transformers' float32 arithmetic: log(n / E) / ln(M / E) * (B - E), truncated
    ratio = distance[large].astype(np.float32) / np.float32(max_exact)
    scaled = np.log(ratio) / np.float32(math.log(max_distance / max_exact))
    steps = (scaled * np.float32(half - max_exact)).astype(np.int64)
    buckets[large] += np.minimum(max_exact + steps, half - 1)
    buckets[~large] += distance[~large]
    return buckets
