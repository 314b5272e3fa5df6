"""A torch ``nn.Module`` for RoPE, as models use it. Imports torch.

``posenc.rope`` holds the formula; this module computes the tables once per forward for all
layers (:meth:`RotaryEmbedding.tables`, like transformers' ``position_embeddings``), caches
them for the positions 0 .. n-1, and rotates with :func:`posenc.rope.rotate_pairs`. Import
it by name: ``from posenc.torch_rope import RotaryEmbedding``.

Dtype policy (:mod:`posenc.rotation`): the frequencies and the cache are held in float64
(float32 on a device without float64) on the module's device. They follow the module to a
device (``.to(device)``, ``.cuda()``, ``.to("meta")``) but never to a dtype:
``module.half()`` or ``.to(torch.bfloat16)`` leave the angles at full precision, and the
tables are cast to the input's dtype last, when a layer asks for them. A learned ``inv_freq``
(an ``nn.Parameter``) is a parameter like any other: its angles are formed in float64 from
whatever dtype it has, and nothing of it is cached.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from posenc._validation import (
    as_int_positions,
    check_even_positive_int,
    check_non_negative_int,
    check_positive_float,
    check_positive_int,
    is_torch_tensor,
)
from posenc.rope import (
    broadcast_tables,
    check_rotary_dim,
    resolve_inv_freq,
    rotate_pairs,
)
from posenc.rotation import angle_dtype, check_layout, cos_sin, rope_angles

Tables = tuple[torch.Tensor, torch.Tensor]


class RotaryEmbedding(nn.Module):
    """Rotates queries and keys of shape (batch, heads, seq, dim) by their positions.

    ``dim``: the head dimension (x's last); ``rotary_dim`` (default ``dim``): how many
    leading features are rotated, the rest pass through; ``inv_freq``: (rotary_dim/2,)
    frequencies, default ``rope_inv_freq(rotary_dim, base)``; ``device``: where the
    frequencies and the cache are built (they move with the module). ``cos_cached`` and
    ``sin_cached`` (float64, shape (cached_positions, rotary_dim/2), not in the state
    dict) hold attention_factor * cos(m theta_i) and ... * sin(m theta_i) for m = 0 ..
    cached_positions - 1; a call with a larger integer position grows the cache to the
    next power of two that covers it. Tensor positions, (seq,) or (batch, seq) on the
    input's device, are never read on the host: their tables are computed on the device.
    Results equal :func:`posenc.apply_rope` with the same ``inv_freq``,
    ``attention_factor``, ``layout`` and ``rotary_dim``.
    """

    def __init__(
        self,
        dim: int,
        base: float = 10000.0,
        *,
        inv_freq: object = None,
        attention_factor: float = 1.0,
        layout: str = "interleaved",
        max_positions: int = 2048,
        rotary_dim: int | None = None,
        device: torch.device | str | None = None,
    ) -> None:
        super().__init__()
        self.dim = check_even_positive_int(dim, "dim")
        self.rotary_dim = check_rotary_dim(rotary_dim, self.dim)
        self.layout = check_layout(layout)
        self.attention_factor = check_positive_float(
            attention_factor, "attention_factor"
        )
        theta = resolve_inv_freq(
            self.rotary_dim,
            inv_freq,
            check_positive_float(base, "base"),
            keep_tensor=True,
        )
        self.learned = is_torch_tensor(theta) and theta.requires_grad
        # an empty buffer that follows the module's device (its dtype does not matter)
        self.register_buffer(
            "device_anchor", torch.empty(0, device=device), persistent=False
        )
        if self.learned:
            self.learned_inv_freq = theta  # an nn.Parameter registers itself
            self._theta = None
        else:
            self._theta = (
                theta.detach().cpu().double().numpy()
                if is_torch_tensor(theta)
                else theta
            )
        self._place(check_positive_int(max_positions, "max_positions"))

    @property
    def device(self) -> torch.device:
        """The device the frequencies and the cache live on: the module's."""
        return self.device_anchor.device

    @property
    def inv_freq(self) -> torch.Tensor:
        """The (rotary_dim/2,) frequencies: float64 (float32 without) on the module's
        device, or the learned parameter as it is."""
        if self.learned:
            return self.learned_inv_freq
        self._follow_the_module()
        return self._inv_freq

    @property
    def cos_cached(self) -> torch.Tensor:
        self._follow_the_module()
        return self._cos

    @property
    def sin_cached(self) -> torch.Tensor:
        self._follow_the_module()
        return self._sin

    @property
    def cached_positions(self) -> int:
        """How many positions (0 .. n-1) the cache covers now."""
        return int(self._cos.shape[0])

    def _follow_the_module(self) -> None:
        """After the module moved (``.to(device)``, ``.cuda()``, ``.to("meta")``: its
        device anchor did), rebuild the frequencies and the cache there, in angle
        precision. Casts (``.half()``) do not reach them: they are not buffers."""
        if self._cos.device != self.device:
            self._place(self.cached_positions)

    def _place(self, num_positions: int) -> None:
        """Frequencies and a cache of ``num_positions`` in angle precision on self.device."""
        device, half = self.device, self.rotary_dim // 2
        if self.learned:  # nothing to cache: the frequencies change as they learn
            self._cos = self._sin = torch.empty(
                0, half, device=device, dtype=angle_dtype(device)
            )
            return
        self._inv_freq = torch.from_numpy(self._theta).to(
            device=device, dtype=angle_dtype(device)
        )
        positions = torch.arange(num_positions, device=device)
        self._cos, self._sin = cos_sin(
            rope_angles(positions, self._inv_freq), self.attention_factor
        )

    def tables(
        self,
        positions: object = None,
        *,
        seq: int | None = None,
        dtype: torch.dtype = torch.float32,
    ) -> Tables:
        """(cos, sin) at the positions, cast to ``dtype`` last: what every layer reuses.

        ``positions``: None (0 .. seq-1, from the cache), a torch integer tensor of shape
        (seq,) or (batch, seq) (computed on its device, no host copy), or integers >= 0
        given on the host (read from the cache, grown as needed). Returns tables of shape
        (seq, rotary_dim/2), or (batch, seq, rotary_dim/2) for (batch, seq) positions.
        """
        self._follow_the_module()
        if is_torch_tensor(positions):
            return self._device_tables(positions, dtype)
        if positions is None:
            if seq is None:
                raise ValueError("seq must be given when positions is None")
            seq = check_non_negative_int(seq, "seq")
            if self.learned:
                return self._device_tables(torch.arange(seq, device=self.device), dtype)
            self._cover(seq - 1)
            return self.cos_cached[:seq].to(dtype), self.sin_cached[:seq].to(dtype)
        positions = as_int_positions(positions)
        if positions.size and positions.min() < 0:
            raise ValueError("positions must be >= 0 for the cache")
        if self.learned:
            index = torch.from_numpy(positions).to(self.device)
            return self._device_tables(index, dtype)
        if positions.size:
            self._cover(int(positions.max()))
        index = torch.from_numpy(positions).to(self.device)
        return self.cos_cached[index].to(dtype), self.sin_cached[index].to(dtype)

    def _cover(self, largest: int) -> None:
        """Grow the cache to the next power of two above ``largest`` if it ends before."""
        if largest >= self.cached_positions:
            self._place(1 << largest.bit_length())

    def _device_tables(self, positions: torch.Tensor, dtype: torch.dtype) -> Tables:
        kind = positions.dtype
        if kind.is_floating_point or kind.is_complex or kind == torch.bool:
            raise TypeError(
                f"positions must hold integers, got a tensor of dtype {kind}"
            )
        if positions.ndim not in (1, 2):
            raise ValueError(
                "positions must have shape (seq,) or (batch, seq), "
                f"got {tuple(positions.shape)}"
            )
        cos, sin = cos_sin(rope_angles(positions, self.inv_freq), self.attention_factor)
        return cos.to(dtype), sin.to(dtype)

    def rotate(
        self,
        x: torch.Tensor,
        positions: object = None,
        *,
        tables: Tables | None = None,
    ) -> torch.Tensor:
        """Rotate one tensor of shape (..., seq, dim); positions default to 0 .. seq-1.

        ``tables``: (cos, sin) from :meth:`tables`, computed once and reused by every
        layer; without them they are computed for ``positions`` here. Tensor subclasses
        are rotated as :func:`posenc.apply_rope` rotates them.
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
        if tables is None:
            _check_length(positions, seq)
            tables = self.tables(positions, seq=seq, dtype=x.dtype)
        cos, sin = (t.to(device=x.device, dtype=x.dtype) for t in tables)
        if cos.shape[-2] != seq:
            raise ValueError(
                f"tables must have one row per position: x has seq = {seq}, "
                f"the tables have {cos.shape[-2]}"
            )
        cos, sin = broadcast_tables(cos, sin, x.ndim)
        return rotate_pairs(x, cos, sin, self.layout, self.rotary_dim)

    def forward(
        self,
        q: torch.Tensor,
        k: torch.Tensor,
        positions: object = None,
        *,
        tables: Tables | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Rotate q (batch, heads, seq, dim) and k (batch, kv_heads, seq, dim) at the same
        positions, from one pair of tables."""
        if tables is None and is_torch_tensor(q):
            _check_length(positions, q.shape[-2])
            tables = self.tables(positions, seq=q.shape[-2], dtype=q.dtype)
        return self.rotate(q, positions, tables=tables), self.rotate(
            k, positions, tables=tables
        )

    def extra_repr(self) -> str:
        partial = (
            "" if self.rotary_dim == self.dim else f", rotary_dim={self.rotary_dim}"
        )
        return (
            f"dim={self.dim}{partial}, layout={self.layout!r}, "
            f"cached_positions={self.cached_positions}"
        )


def _check_length(positions: object, seq: int) -> None:
    """positions, if given, must have one entry per row (its last axis)."""
    if positions is None:
        return
    shape = tuple(
        positions.shape if is_torch_tensor(positions) else np.shape(positions)
    )
    if shape and shape[-1] != seq:
        raise ValueError(f"positions must have length seq = {seq}, got {shape[-1]}")
