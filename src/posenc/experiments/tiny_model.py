"""A tiny causal transformer, by default with RoPE as its only position signal. Imports torch.

Pre-norm blocks (RMSNorm, multi-head attention, a GELU MLP), no absolute positions, no
biases in attention. Queries and keys are rotated by a
:class:`~posenc.torch_rope.RotaryEmbedding` built for each forward pass from whatever
``(inv_freq, attention_factor)`` the :class:`RopeSpec` gives, that is from
:func:`posenc.rope_scaling`; its (cos, sin) tables are computed once per forward and reused
by every layer. So every context-extension method runs on the same weights without
touching the model. A :class:`RopeSpec` names a method and its options and
produces those two arguments for a given sequence length.

The same model takes the other position signals of "Other roads" through a
:class:`~posenc.experiments.encodings.PositionEncoding` (NoPE, learned or sinusoidal
absolute positions, p-RoPE, RoPE in some layers only, ALiBi, T5's bias;
:mod:`posenc.experiments.positions` holds their torch side). Without one it is
chapter 6's model, parameter for parameter and operation for operation.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from posenc._validation import as_int_array
from posenc.experiments.config import ModelConfig
from posenc.experiments.encodings import PositionEncoding
from posenc.experiments.positions import (
    LearnedPositions,
    T5Bias,
    alibi_logit_bias,
    sinusoidal_positions,
    with_causal_mask,
)
from posenc.scaling import METHODS, SCALING_METHODS, rope_scaling
from posenc.torch_rope import RotaryEmbedding, Tables

LAYOUT = "half"  # pairs (x[i], x[i + dim/2]), as GPT-NeoX and Hugging Face LLaMA


@dataclass(frozen=True)
class RopeSpec:
    """A RoPE scaling method and its options, as passed to :func:`posenc.rope_scaling`.

    ``factor`` is s (1 for ``"none"``), ``original_max_position`` the training length L.
    ``"dynamic"`` (and ``"longrope"``, which switches to its long factors past L) gets
    ``seq_len`` = the length of the sequence it is applied to, as transformers does in a
    full forward pass. ``options``: the method's extra options
    (beta_fast, beta_slow, ... ) as a tuple of (name, value) pairs, so the spec is hashable.
    """

    method: str = "none"
    factor: float = 1.0
    original_max_position: int = 128
    options: tuple[tuple[str, object], ...] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise ValueError(f"method must be one of {METHODS}, got {self.method!r}")

    def frequencies(
        self, head_dim: int, base: float, seq_len: int
    ) -> tuple[np.ndarray, float]:
        """``(inv_freq, attention_factor)`` for sequences of ``seq_len`` tokens."""
        return rope_scaling(
            self.method,
            head_dim,
            base=base,
            factor=self.factor,
            original_max_position=self.original_max_position,
            seq_len=seq_len if SCALING_METHODS[self.method].reads_seq_len else None,
            **dict(self.options),
        )

    def label(self) -> str:
        return (
            self.method
            if self.method == "none"
            else f"{self.method} (s={self.factor:g})"
        )


class Attention(nn.Module):
    """Causal multi-head self-attention with RoPE on queries and keys (or without, or
    with a bias on the logits)."""

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.num_heads, self.head_dim = config.num_heads, config.head_dim
        self.qkv = nn.Linear(config.d_model, 3 * config.d_model, bias=False)
        self.out = nn.Linear(config.d_model, config.d_model, bias=False)

    def _heads(self, x: torch.Tensor) -> torch.Tensor:
        batch, seq, _ = x.shape
        return x.view(batch, seq, self.num_heads, self.head_dim).transpose(1, 2)

    def forward(
        self,
        x: torch.Tensor,
        rope: RotaryEmbedding | None,
        tables: Tables | None,
        rows: np.ndarray | None = None,
        capture: list | None = None,
        bias: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """x: (batch, seq, d_model) -> (batch, seq, d_model), or (batch, len(rows), d_model) with ``rows``.

        ``tables``: (cos, sin) of positions 0 .. seq-1 from ``rope.tables``, computed once
        per forward for every layer. ``rows`` (sorted positions): compute the output only
        for these queries; keys and values still cover the whole sequence and the causal
        mask is applied by position. ``rope`` None: queries and keys are not rotated.
        ``bias`` (heads, seq, seq): added to the logits, -inf already where a key follows
        its query (:func:`~posenc.experiments.positions.with_causal_mask`).
        """
        d_model = x.shape[-1]
        w_q, w_kv = self.qkv.weight[:d_model], self.qkv.weight[d_model:]
        x_q = x if rows is None else x[:, torch.from_numpy(rows)]
        q = self._heads(F.linear(x_q, w_q))
        k, v = (self._heads(part) for part in F.linear(x, w_kv).chunk(2, dim=-1))
        if rope is not None:
            cos, sin = tables
            index = None if rows is None else torch.from_numpy(rows).to(cos.device)
            q_tables = tables if index is None else (cos[index], sin[index])
            q = rope.rotate(q, tables=q_tables)
            k = rope.rotate(k, tables=tables)
        if capture is not None:
            capture.append((q.detach(), k.detach()))
        if bias is not None:
            mask = bias if rows is None else bias[:, torch.from_numpy(rows)]
            # 4-D (1, heads, queries, keys): a 3-D mask sends CPU attention to its
            # slow path (measured 14x slower at 2048 tokens), a 4-D one to its fused kernel
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask[None])
        elif rows is None:
            y = F.scaled_dot_product_attention(
                q, k, v, is_causal=True
            )  # softmax(q k^T / sqrt(head_dim)) v
        else:
            positions = np.arange(x.shape[1])
            allowed = torch.from_numpy(
                positions[None, :] <= rows[:, None]
            )  # key n visible to query m iff n <= m
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed)
        batch, _, num_queries, _ = y.shape
        return self.out(y.transpose(1, 2).reshape(batch, num_queries, -1))


class Block(nn.Module):
    """x + attention(norm(x)), then x + mlp(norm(x)); with ``rows``, only those positions come out."""

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.norm1 = nn.RMSNorm(config.d_model)
        self.attention = Attention(config)
        self.norm2 = nn.RMSNorm(config.d_model)
        hidden = config.mlp_ratio * config.d_model
        self.mlp = nn.Sequential(
            nn.Linear(config.d_model, hidden),
            nn.GELU(),
            nn.Linear(hidden, config.d_model),
        )

    def forward(self, x, rope, tables, rows=None, capture=None, bias=None):
        residual = x if rows is None else x[:, torch.from_numpy(rows)]
        x = residual + self.attention(self.norm1(x), rope, tables, rows, capture, bias)
        return x + self.mlp(self.norm2(x))


class TinyRopeTransformer(nn.Module):
    """Token embedding, ``num_layers`` blocks, a final RMSNorm and an unembedding.

    ``forward(tokens, rope)``: tokens (batch, seq) int64 -> logits (batch, seq, vocab_size).
    ``rope`` (a :class:`RopeSpec`, default plain RoPE) decides the frequencies and the
    attention factor; positions are 0 .. seq - 1. With ``capture`` (a list), each layer
    appends its rotated (q, k), shape (batch, heads, seq, head_dim), for inspection
    (without the logits' bias of ALiBi or T5).

    ``encoding`` (default: RoPE in every layer, chapter 6's model): the position signal.
    Its parameters (learned positions, T5's table) are created after chapter 6's, so
    the default model draws the same initial weights from the same seed.
    """

    def __init__(
        self, config: ModelConfig, encoding: PositionEncoding | None = None
    ) -> None:
        super().__init__()
        encoding = PositionEncoding() if encoding is None else encoding
        if not isinstance(encoding, PositionEncoding):
            raise TypeError(
                f"encoding must be a PositionEncoding, got {type(encoding).__name__}"
            )
        encoding.check_layers(config.num_layers)
        self.config, self.encoding = config, encoding
        self.embed = nn.Embedding(config.vocab_size, config.d_model)
        self.blocks = nn.ModuleList(Block(config) for _ in range(config.num_layers))
        self.norm = nn.RMSNorm(config.d_model)
        self.unembed = nn.Linear(config.d_model, config.vocab_size, bias=False)
        if encoding.kind == "learned":
            self.positions = LearnedPositions(encoding.max_positions, config.d_model)
        if encoding.kind == "t5":
            self.relative_bias = T5Bias(
                config.num_heads,
                config.d_model,
                encoding.num_buckets,
                encoding.max_distance,
            )
        self._rotating = [encoding.rotates(index) for index in range(config.num_layers)]

    def forward(
        self,
        tokens: torch.Tensor,
        rope: RopeSpec | None = None,
        *,
        rows: object = None,
        capture: list | None = None,
    ) -> torch.Tensor:
        """Logits (batch, seq, vocab_size), or (batch, len(rows), vocab_size) with ``rows``.

        ``rows``: sorted distinct positions whose logits are wanted; the last layer then
        computes queries, the MLP and the unembedding only there (same numbers, less work).
        """
        if (
            not isinstance(tokens, torch.Tensor)
            or tokens.dtype != torch.int64
            or tokens.ndim != 2
        ):
            raise TypeError(
                f"tokens must be an int64 tensor of shape (batch, seq), got {getattr(tokens, 'dtype', type(tokens))}"
            )
        seq = tokens.shape[1]
        if rows is not None:
            rows = as_int_array(rows, "rows")
            if (
                rows.size == 0
                or rows.min() < 0
                or rows.max() >= seq
                or np.any(np.diff(rows) <= 0)
            ):
                raise ValueError(
                    f"rows must be sorted distinct positions in 0 .. {seq - 1}, got {rows.tolist()}"
                )
        rope = RopeSpec() if rope is None else rope
        if not isinstance(rope, RopeSpec):
            raise TypeError(f"rope must be a RopeSpec, got {type(rope).__name__}")
        if not any(self._rotating) and rope.method != "none":
            raise ValueError(
                f"rope.method must be 'none' for a model without RoPE (encoding "
                f"{self.encoding.kind!r}), got {rope.method!r}"
            )
        x = self.embed(tokens)
        x = self._add_positions(x, seq)
        rotary = tables = None
        if any(self._rotating):
            rotary = self.rotary_embedding(rope, seq, tokens.device)
            tables = rotary.tables(seq=seq, dtype=x.dtype)  # once, for every layer
        bias = self._logit_bias(seq, tokens.device)  # once, for every layer
        for index, block in enumerate(self.blocks):
            last = index == len(self.blocks) - 1
            layer_rope = rotary if self._rotating[index] else None
            x = block(x, layer_rope, tables, rows if last else None, capture, bias)
        return self.unembed(self.norm(x))

    def _add_positions(self, x: torch.Tensor, seq: int) -> torch.Tensor:
        """The token embeddings plus an absolute position code, if the encoding has one."""
        kind = self.encoding.kind
        if kind == "learned":
            return x + self.positions(seq)
        if kind == "sinusoidal":
            return x + sinusoidal_positions(
                seq,
                self.config.d_model,
                self.encoding.sinusoidal_base,
                device=x.device,
                dtype=x.dtype,
            )
        return x

    def _logit_bias(self, seq: int, device) -> torch.Tensor | None:
        """ALiBi's or T5's bias with the causal mask, (heads, seq, seq), or None."""
        if self.encoding.kind == "alibi":
            bias = alibi_logit_bias(self.config.num_heads, seq, device)
        elif self.encoding.kind == "t5":
            bias = self.relative_bias(seq)
        else:
            return None
        return with_causal_mask(bias)

    def rotary_embedding(
        self, rope: RopeSpec, seq: int, device: torch.device | None = None
    ) -> RotaryEmbedding:
        """The RoPE of ``rope`` for sequences of ``seq`` tokens, its cache covering them.

        For p-RoPE (``encoding.partial_rotary_factor`` p) the pairs that
        ``rope_scaling("proportional", ..., partial_rotary_factor=p)`` leaves unrotated
        get frequency 0 under every method too.
        """
        inv_freq, attention_factor = rope.frequencies(
            self.config.head_dim, self.config.rope_base, seq
        )
        share = self.encoding.partial_rotary_factor
        if share is not None:
            rotated, _ = rope_scaling(
                "proportional",
                self.config.head_dim,
                base=self.config.rope_base,
                partial_rotary_factor=share,
            )
            inv_freq = np.where(rotated > 0, inv_freq, 0.0)
        return RotaryEmbedding(
            self.config.head_dim,
            inv_freq=inv_freq,
            attention_factor=attention_factor,
            layout=LAYOUT,
            max_positions=max(seq, 1),
            device=device,
        )

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())
