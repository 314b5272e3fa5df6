"""Chapter 6's model as a byte-level language model on the corpus. Imports torch.

The model is :class:`~posenc.experiments.tiny_model.TinyRopeTransformer` with
``vocab_size`` = :data:`~posenc.experiments.corpus.VOCAB_SIZE` (256): it already returns
logits at every position, so predicting the next byte needs no change to it, only a loss
over every position of a :class:`~posenc.experiments.corpus.TextBatch` (inputs the first
L tokens of each window, targets the last L). Losses are in nats; bits per byte are
nats / ln 2.
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F

from posenc.experiments.corpus import TextBatch
from posenc.experiments.tiny_model import RopeSpec, TinyRopeTransformer


def next_token_logits(
    model: TinyRopeTransformer, batch: TextBatch, rope: RopeSpec
) -> torch.Tensor:
    """Logits (B, L, vocab) of the byte after each input position of ``batch``."""
    if rope.method == "dynamic":
        raise ValueError(
            "rope.method 'dynamic' needs one pass per position; not supported here yet"
        )
    return model(torch.from_numpy(np.ascontiguousarray(batch.inputs)), rope)


def next_token_loss(
    logits: torch.Tensor, batch: TextBatch, reduction: str = "mean"
) -> torch.Tensor:
    """Cross-entropy (nats) of every target byte under ``logits`` (B, L, vocab).

    ``reduction`` "none" keeps the shape (B, L): the loss at each position.
    """
    targets = torch.from_numpy(np.ascontiguousarray(batch.targets))
    loss = F.cross_entropy(
        logits.reshape(-1, logits.shape[-1]), targets.reshape(-1), reduction=reduction
    )
    return loss.view(targets.shape) if reduction == "none" else loss


def _chunks(batch: TextBatch, chunk: int):
    for start in range(0, batch.tokens.shape[0], chunk):
        yield TextBatch(batch.tokens[start : start + chunk])


def next_token_accuracy_and_loss(
    model: TinyRopeTransformer, batch: TextBatch, rope: RopeSpec, chunk: int = 64
) -> tuple[float, float]:
    """Share of target bytes that are the argmax, and the mean loss (nats), over ``batch``."""
    correct, loss_sum, count = 0, 0.0, 0
    with torch.inference_mode():
        for part in _chunks(batch, chunk):
            logits = next_token_logits(model, part, rope)
            correct += int((logits.argmax(-1).numpy() == part.targets).sum())
            loss_sum += float(next_token_loss(logits, part, "sum"))
            count += part.targets.size
    return correct / count, loss_sum / count


def loss_by_position(
    model: TinyRopeTransformer, batch: TextBatch, rope: RopeSpec, chunk: int = 16
) -> np.ndarray:
    """Mean loss (nats) at each position 0 .. L-1 over the windows of ``batch``, (L,) float64.

    Position p predicts the byte after input p, having read p + 1 bytes.
    """
    total = np.zeros(batch.inputs.shape[1])
    with torch.inference_mode():
        for part in _chunks(batch, chunk):
            losses = next_token_loss(next_token_logits(model, part, rope), part, "none")
            total += losses.double().sum(0).numpy()
    return total / batch.tokens.shape[0]


def target_losses(
    model: TinyRopeTransformer,
    batch: TextBatch,
    rope: RopeSpec,
    scored: int | None = None,
    chunk: int = 16,
) -> np.ndarray:
    """Loss (nats) of each of the last ``scored`` targets (default all L) of every window,
    shape (B, scored), float64.

    ``"dynamic"`` (s = max(1, l' / L) once l' bytes are read) is scored in blocks of
    L = ``rope.original_max_position`` targets from the window's start: block k's targets
    come from one pass over the inputs up to the block's end, so they share the s of its
    last target. Every other method is one pass per window.
    """
    length = batch.inputs.shape[1]
    scored = length if scored is None else scored
    if not isinstance(scored, int) or not 0 < scored <= length:
        raise ValueError(f"scored must be an int in 1 .. {length}, got {scored!r}")
    first = length - scored
    if rope.method == "dynamic":
        block = rope.original_max_position
        edges = [*range(0, length, block), length]
        spans = [
            (max(first, low), high)
            for low, high in zip(edges[:-1], edges[1:])
            if high > first
        ]
    else:
        spans = [(first, length)]
    out = np.empty((batch.tokens.shape[0], scored))
    with torch.inference_mode():
        for low, high in spans:
            rows = np.arange(low, high)
            for start in range(0, batch.tokens.shape[0], chunk):
                part = batch.tokens[start : start + chunk]
                inputs = torch.from_numpy(np.ascontiguousarray(part[:, :high]))
                logits = model(inputs, rope, rows=rows)
                targets = torch.from_numpy(np.ascontiguousarray(part[:, rows + 1]))
                losses = F.cross_entropy(
                    logits.reshape(-1, logits.shape[-1]),
                    targets.reshape(-1),
                    reduction="none",
                )
                out[start : start + chunk, low - first : high - first] = (
                    losses.view(targets.shape).double().numpy()
                )
    return out


def bits(nats: float) -> float:
    """nats -> bits (per byte, for a byte model)."""
    return nats / math.log(2)
