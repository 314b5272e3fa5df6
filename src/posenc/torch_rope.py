"""A torch ``nn.Module`` for RoPE with a cos/sin cache, as models use it. Imports torch.

``posenc.rope`` holds the formula; this module only caches what :func:`posenc.rope.rope_angles`
computes (in float64) and applies :func:`posenc.rope.rotate_pairs`. Import it by name:
``from posenc.torch_rope import RotaryEmbedding``.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from posenc._validation import (
    as_int_array,
    check_even_positive_int,
    check_positive_float,
    check_positive_int,
    is_torch_tensor,
)
from posenc.rope import _resolve_inv_freq, rope_angles, rotate_pairs
from posenc.rotation import check_layout, cos_sin


class RotaryEmbedding(nn.Module):
    """Rotates queries and keys of shape (batch, heads, seq, dim) by their positions.

    ``cos_cached`` and ``sin_cached`` (float64, shape (cached_positions, dim/2), not saved
    in the state dict) hold attention_factor * cos(m theta_i) and ... * sin(m theta_i) for
    m = 0 .. cached_positions - 1. A call with a larger position grows the cache to the
    next power of two that covers it. Results equal :func:`posenc.apply_rope` with the same
    ``inv_freq``, ``attention_factor`` and ``layout``.
    """

    cos_cached: torch.Tensor
    sin_cached: torch.Tensor

    def __init__(
        self,
        dim: int,
        base: float = 10000.0,
        *,
        inv_freq: object = None,
        attention_factor: float = 1.0,
        layout: str = "interleaved",
        max_positions: int = 2048,
    ) -> None:
        super().__init__()
        self.dim = check_even_positive_int(dim, "dim")
        self.layout = check_layout(layout)
        self.attention_factor = check_positive_float(
            attention_factor, "attention_factor"
        )
        self.inv_freq = _resolve_inv_freq(
            self.dim, inv_freq, check_positive_float(base, "base")
        )  # numpy float64
        self.register_buffer(
            "cos_cached",
            torch.empty(0, self.dim // 2, dtype=torch.float64),
            persistent=False,
        )
        self.register_buffer(
            "sin_cached",
            torch.empty(0, self.dim // 2, dtype=torch.float64),
            persistent=False,
        )
        self._grow(check_positive_int(max_positions, "max_positions"))

    @property
    def cached_positions(self) -> int:
        """How many positions (0 .. n-1) the cache covers now."""
        return int(self.cos_cached.shape[0])

    def _grow(self, num_positions: int) -> None:
        angles = rope_angles(
            np.arange(num_positions), self.inv_freq
        )  # float64, formed before any cast
        device = self.cos_cached.device
        cos, sin = cos_sin(angles, self.attention_factor)
        self.cos_cached = torch.from_numpy(cos).to(device)
        self.sin_cached = torch.from_numpy(sin).to(device)

    def rotate(self, x: torch.Tensor, positions: object = None) -> torch.Tensor:
        """Rotate one tensor of shape (..., seq, dim); positions default to 0 .. seq-1.

        Tensor subclasses are rotated as :func:`posenc.apply_rope` rotates them.
        """
        if not is_torch_tensor(x) or not x.dtype.is_floating_point:
            raise TypeError(
                f"x must be a floating-point torch tensor, got {type(x).__name__}"
            )
        if x.ndim < 2 or x.shape[-1] != self.dim:
            raise ValueError(
                f"x must have shape (..., seq, {self.dim}), got {tuple(x.shape)}"
            )
        seq = x.shape[-2]
        positions = (
            np.arange(seq)
            if positions is None
            else as_int_array(positions, "positions")
        )
        if positions.shape[0] != seq:
            raise ValueError(
                f"positions must have length seq = {seq}, got {positions.shape[0]}"
            )
        if positions.size and positions.min() < 0:
            raise ValueError("positions must be >= 0 for the cache")
        if positions.size and positions.max() >= self.cached_positions:
            self._grow(
                1 << int(positions.max()).bit_length()
            )  # next power of two above the largest position
        index = torch.from_numpy(positions).to(self.cos_cached.device)
        cos = self.cos_cached[index].to(dtype=x.dtype, device=x.device)
        sin = self.sin_cached[index].to(dtype=x.dtype, device=x.device)
        return rotate_pairs(x, cos, sin, self.layout)

    def forward(
        self, q: torch.Tensor, k: torch.Tensor, positions: object = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Rotate q (batch, heads, seq, dim) and k (batch, kv_heads, seq, dim) at the same positions."""
        return self.rotate(q, positions), self.rotate(k, positions)

    def extra_repr(self) -> str:
        return f"dim={self.dim}, layout={self.layout!r}, cached_positions={self.cached_positions}"
