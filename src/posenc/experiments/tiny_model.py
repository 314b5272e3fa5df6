"""A tiny causal transformer whose only position signal is RoPE. Imports torch.

Pre-norm blocks (RMSNorm, multi-head attention, a GELU MLP), no absolute positions, no
biases in attention. Queries and keys are rotated by a
:class:`~posenc.torch_rope.RotaryEmbedding` built for each forward pass from whatever
``(inv_freq, attention_factor)`` the :class:`RopeSpec` gives, that is from
:func:`posenc.rope_scaling`; its (cos, sin) tables are computed once per forward and reused
by every layer. So every context-extension method runs on the same weights without
touching the model. A :class:`RopeSpec` names a method and its options and
produces those two arguments for a given sequence length.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from posenc._validation import as_int_array
from posenc.experiments.config import ModelConfig
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
    """Causal multi-head self-attention with RoPE on queries and keys."""

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
        rope: RotaryEmbedding,
        tables: Tables,
        rows: np.ndarray | None = None,
        capture: list | None = None,
    ) -> torch.Tensor:
        """x: (batch, seq, d_model) -> (batch, seq, d_model), or (batch, len(rows), d_model) with ``rows``.

        ``tables``: (cos, sin) of positions 0 .. seq-1 from ``rope.tables``, computed once
        per forward for every layer. ``rows`` (sorted positions): compute the output only
        for these queries; keys and values still cover the whole sequence and the causal
        mask is applied by position.
        """
        d_model = x.shape[-1]
        w_q, w_kv = self.qkv.weight[:d_model], self.qkv.weight[d_model:]
        x_q = x if rows is None else x[:, torch.from_numpy(rows)]
        q = self._heads(F.linear(x_q, w_q))
        k, v = (self._heads(part) for part in F.linear(x, w_kv).chunk(2, dim=-1))
        cos, sin = tables
        index = None if rows is None else torch.from_numpy(rows).to(cos.device)
        q_tables = tables if index is None else (cos[index], sin[index])
        q = rope.rotate(q, tables=q_tables)
        k = rope.rotate(k, tables=tables)
        if capture is not None:
            capture.append((q.detach(), k.detach()))
        if rows is None:
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

    def forward(self, x, rope, tables, rows=None, capture=None):
        residual = x if rows is None else x[:, torch.from_numpy(rows)]
        x = residual + self.attention(self.norm1(x), rope, tables, rows, capture)
        return x + self.mlp(self.norm2(x))


class TinyRopeTransformer(nn.Module):
    """Token embedding, ``num_layers`` blocks, a final RMSNorm and an unembedding.

    ``forward(tokens, rope)``: tokens (batch, seq) int64 -> logits (batch, seq, vocab_size).
    ``rope`` (a :class:`RopeSpec`, default plain RoPE) decides the frequencies and the
    attention factor; positions are 0 .. seq - 1. With ``capture`` (a list), each layer
    appends its rotated (q, k), shape (batch, heads, seq, head_dim), for inspection.
    """

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.config = config
        self.embed = nn.Embedding(config.vocab_size, config.d_model)
        self.blocks = nn.ModuleList(Block(config) for _ in range(config.num_layers))
        self.norm = nn.RMSNorm(config.d_model)
        self.unembed = nn.Linear(config.d_model, config.vocab_size, bias=False)

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
        x = self.embed(tokens)
        rotary = self.rotary_embedding(rope, seq, tokens.device)
        tables = rotary.tables(seq=seq, dtype=x.dtype)  # once, for every layer
        for index, block in enumerate(self.blocks):
            last = index == len(self.blocks) - 1
            x = block(x, rotary, tables, rows if last else None, capture)
        return self.unembed(self.norm(x))

    def rotary_embedding(
        self, rope: RopeSpec, seq: int, device: torch.device | None = None
    ) -> RotaryEmbedding:
        """The RoPE of ``rope`` for sequences of ``seq`` tokens, its cache covering them."""
        inv_freq, attention_factor = rope.frequencies(
            self.config.head_dim, self.config.rope_base, seq
        )
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
