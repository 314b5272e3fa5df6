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


def bits(nats: float) -> float:
    """nats -> bits (per byte, for a byte model)."""
    return nats / math.log(2)
