"""The tiny model's position signals other than RoPE, in torch. Imports torch.

Each takes its formula from the core and only moves it onto tensors:

* :func:`alibi_logit_bias`: ALiBi's -m_h (q - k), slopes from
  :func:`posenc.alibi_slopes`, the offsets k - q formed in float32 on the device (exact:
  integers below 2**24 times the slopes, powers of two for 1, 2, 3, 4, 6 or 8 heads,
  equal :func:`posenc.alibi_bias` bit for bit there);
* :func:`t5_bucket_grid`: the bucket of every (query, key) pair, from
  :func:`posenc.t5_relative_position_bucket` of each relative position k - q (computed
  once per length in numpy, then indexed on the device: the same integers);
* :class:`T5Bias`: T5's learned (bucket, head) table looked up on that grid;
* :class:`LearnedPositions`: a learned vector per absolute position, the last reused
  past the table (:mod:`posenc.experiments.encodings` says why);
* :func:`sinusoidal_positions`: :func:`posenc.sinusoidal_encoding`, float32 on the device.

:func:`with_causal_mask` turns a bias into the float mask scaled_dot_product_attention
adds to its logits: -inf where a key comes after its query.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import nn

from posenc._validation import check_positive_int
from posenc.alibi import alibi_slopes
from posenc.sinusoidal import sinusoidal_encoding
from posenc.t5_bias import t5_relative_position_bucket


def _offsets(seq: int, device) -> torch.Tensor:
    """(seq, seq) float32 grid of k - q for queries and keys 0 .. seq - 1."""
    positions = torch.arange(seq, device=device, dtype=torch.float32)
    return positions[None, :] - positions[:, None]


def alibi_logit_bias(
    num_heads: int, seq: int, device: torch.device | str | None = None
) -> torch.Tensor:
    """ALiBi's bias of every head for queries and keys 0 .. seq - 1, (heads, seq, seq)
    float32: entry [h, q, k] = m_h (k - q) = -m_h (q - k), m_h = ``alibi_slopes``."""
    seq = check_positive_int(seq, "seq")
    slopes = torch.tensor(alibi_slopes(num_heads), dtype=torch.float32, device=device)
    return slopes[:, None, None] * _offsets(seq, device)[None]


def t5_bucket_grid(
    seq: int,
    *,
    num_buckets: int = 32,
    max_distance: int = 128,
    device: torch.device | str | None = None,
) -> torch.Tensor:
    """T5's unidirectional bucket of every (query q, key k) pair of positions 0 .. seq - 1,
    (seq, seq) int64: ``t5_relative_position_bucket(k - q, bidirectional=False)``."""
    seq = check_positive_int(seq, "seq")
    relative = np.arange(-(seq - 1), seq)  # every k - q that occurs, in order
    buckets = torch.from_numpy(
        t5_relative_position_bucket(
            relative,
            bidirectional=False,
            num_buckets=num_buckets,
            max_distance=max_distance,
        )
    ).to(device)
    positions = torch.arange(seq, device=device)
    return buckets[positions[None, :] - positions[:, None] + seq - 1]


class T5Bias(nn.Module):
    """T5's relative bias: one learned scalar per (bucket, head), shared by the layers.

    ``forward(seq)`` -> (heads, seq, seq), entry [h, q, k] = table[bucket(k - q), h].
    Initialised as transformers' T5 initialises it: normal, std ``d_model ** -0.5``.
    """

    def __init__(
        self, num_heads: int, d_model: int, num_buckets: int, max_distance: int
    ) -> None:
        super().__init__()
        self.num_buckets, self.max_distance = num_buckets, max_distance
        self.table = nn.Embedding(num_buckets, num_heads)
        nn.init.normal_(self.table.weight, std=d_model**-0.5)

    def forward(self, seq: int) -> torch.Tensor:
        grid = t5_bucket_grid(
            seq,
            num_buckets=self.num_buckets,
            max_distance=self.max_distance,
            device=self.table.weight.device,
        )
        return self.table(grid).permute(2, 0, 1)


class LearnedPositions(nn.Module):
    """A learned vector per position 0 .. max_positions - 1 (normal, std 0.02, as GPT-2).

    ``forward(seq)`` -> (seq, d_model); positions >= max_positions get the last vector.
    """

    def __init__(self, max_positions: int, d_model: int) -> None:
        super().__init__()
        self.max_positions = check_positive_int(max_positions, "max_positions")
        self.table = nn.Embedding(max_positions, d_model)
        nn.init.normal_(self.table.weight, std=0.02)

    def forward(self, seq: int) -> torch.Tensor:
        positions = torch.arange(seq, device=self.table.weight.device)
        return self.table(positions.clamp(max=self.max_positions - 1))


def sinusoidal_positions(
    seq: int,
    d_model: int,
    base: float = 10000.0,
    device: torch.device | str | None = None,
    dtype: torch.dtype = torch.float32,
) -> torch.Tensor:
    """Chapter 2's encoding of positions 0 .. seq - 1, (seq, d_model), in ``dtype``."""
    table = sinusoidal_encoding(seq, d_model, base)  # float64, numpy
    return torch.from_numpy(table).to(device=device, dtype=dtype)


def with_causal_mask(bias: torch.Tensor) -> torch.Tensor:
    """``bias`` (..., seq, seq) with -inf where the key comes after the query."""
    seq = bias.shape[-1]
    future = torch.ones(seq, seq, dtype=torch.bool, device=bias.device).triu(1)
    return bias.masked_fill(future, -math.inf)
