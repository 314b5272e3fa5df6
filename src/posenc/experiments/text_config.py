"""The real-text experiment's settings: model, training, evaluation plan. numpy only.

Chapter 6's model (:class:`~posenc.experiments.config.ModelConfig`), made a byte-level
language model of the King James Bible (:mod:`posenc.experiments.corpus`): trained at
L = ``train_length`` bytes with plain RoPE, then fine-tuned at ``finetune_multiple`` x L
with Position Interpolation and with YaRN on the same budget. Every method of chapter 5 is
then scored on the test part at 1L .. 16L under two protocols (:class:`TextEvalConfig`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from posenc._validation import check_positive_int
from posenc.experiments.config import ModelConfig, Phase
from posenc.experiments.corpus import (
    VOCAB_SIZE,
    TextBatch,
    evaluation_windows,
    fixed_target_windows,
)

#: Every method of chapter 5 scored without further training, in table order.
TEXT_METHODS = ("none", "linear", "ntk", "dynamic", "ntk_by_parts", "yarn", "llama3")
#: The methods fine-tuned at ``finetune_multiple`` x L, on identical batches.
TEXT_FINETUNE_METHODS = ("linear", "yarn")
#: Evaluation lengths as multiples of L.
TEXT_MULTIPLES = (1, 2, 4, 8, 16)
#: The seeds of the book's runs.
TEXT_SEEDS = (0, 1, 2, 3, 4)
#: Where ``train`` and ``evaluate`` keep the runs, relative to the current directory.
TEXT_DIR = Path("book") / "data" / "real_text"
TEXT_TRAIN_LOG = "train_log.json"
TEXT_RESULTS = "results.json"
#: Llama 3.1's published options (besides factor and the original context).
LLAMA3_OPTIONS = (("low_freq_factor", 1.0), ("high_freq_factor", 4.0))

TEXT_MODEL = ModelConfig(
    vocab_size=VOCAB_SIZE, d_model=96, num_heads=3, num_layers=3, rope_base=500.0
)
TEXT_BASE_PHASE = Phase(
    steps=1000,
    batch_size=32,
    learning_rate=3e-3,
    warmup_steps=100,
    eval_every=100,
    val_sequences=64,
)
#: Same bytes per step as the base phase (8 windows of 4L = 32 windows of L).
TEXT_FINETUNE_PHASE = Phase(
    steps=200,
    batch_size=8,
    learning_rate=1e-3,
    warmup_steps=10,
    eval_every=25,
    val_sequences=16,
)


@dataclass(frozen=True)
class TextConfig:
    """Everything that decides one seed's base model and its fine-tunes.

    The fine-tuning-cost curve scores the test windows of ``finetune_multiple`` x L (the
    whole-window protocol's, :func:`whole_window_count`) at every check of the fine-tune.
    """

    seed: int = 0
    train_length: int = 128
    weight_decay: float = 0.01
    base: Phase = TEXT_BASE_PHASE
    finetune_multiple: int = 4
    finetune: Phase = TEXT_FINETUNE_PHASE
    model: ModelConfig = TEXT_MODEL

    def __post_init__(self) -> None:
        check_positive_int(self.train_length, "train_length")
        check_positive_int(self.finetune_multiple, "finetune_multiple")
        if self.model.vocab_size != VOCAB_SIZE:
            raise ValueError(
                f"model.vocab_size must be {VOCAB_SIZE} (bytes), got {self.model.vocab_size}"
            )

    @property
    def finetune_length(self) -> int:
        return self.finetune_multiple * self.train_length

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> TextConfig:
        data = dict(data)
        return cls(
            model=ModelConfig(**data.pop("model")),
            base=Phase(**data.pop("base")),
            finetune=Phase(**data.pop("finetune")),
            **data,
        )


@dataclass(frozen=True)
class TextEvalConfig:
    """How much of the test part each protocol scores.

    Whole-window: at each length, consecutive windows spread over the test part holding
    ``whole_window_bytes`` scored bytes in all (:func:`whole_window_count` windows).
    Fixed-target: ``fixed_target_count`` windows whose last L bytes are scored at every
    length, behind a prefix that grows to the longest length.
    """

    whole_window_bytes: int = 65536
    fixed_target_count: int = 64
    multiples: tuple[int, ...] = TEXT_MULTIPLES

    def __post_init__(self) -> None:
        check_positive_int(self.whole_window_bytes, "whole_window_bytes")
        check_positive_int(self.fixed_target_count, "fixed_target_count")
        for multiple in self.multiples:
            check_positive_int(multiple, "multiples")

    def whole_window_count(self, length: int) -> int:
        """Windows of ``length`` bytes the whole-window protocol scores at that length."""
        check_positive_int(length, "length")
        return max(2, self.whole_window_bytes // length)

    def to_dict(self) -> dict:
        return {**asdict(self), "multiples": list(self.multiples)}

    @classmethod
    def from_dict(cls, data: dict) -> TextEvalConfig:
        return cls(**{**data, "multiples": tuple(data["multiples"])})


def text_options(method: str) -> tuple[tuple[str, object], ...]:
    """The options a method runs with beyond factor and L: Llama 3.1's published pair,
    every other method at :func:`posenc.rope_scaling`'s defaults."""
    return LLAMA3_OPTIONS if method == "llama3" else ()


def text_plan(config: TextConfig, eval_config: TextEvalConfig) -> list[dict]:
    """Every (model, method, factor, multiple) setting of one seed, in a fixed order."""
    plan = []
    for multiple in eval_config.multiples:
        methods = ("none",) if multiple == 1 else TEXT_METHODS
        plan += [
            {
                "model": "base",
                "method": method,
                "factor": float(multiple),
                "multiple": multiple,
            }
            for method in methods
        ]
    for method in TEXT_FINETUNE_METHODS:
        plan += [
            {
                "model": f"finetune_{method}",
                "method": method,
                "factor": float(config.finetune_multiple),
                "multiple": multiple,
            }
            for multiple in eval_config.multiples
        ]
    return plan


def protocol_windows(
    test: np.ndarray, config: TextConfig, eval_config: TextEvalConfig, multiple: int
) -> tuple[TextBatch, TextBatch]:
    """The (whole-window, fixed-target) windows of ``multiple`` x L bytes."""
    length = multiple * config.train_length
    longest = max(eval_config.multiples) * config.train_length
    return (
        evaluation_windows(test, length, eval_config.whole_window_count(length)),
        fixed_target_windows(
            test,
            length,
            config.train_length,
            longest,
            eval_config.fixed_target_count,
            stride=(len(test) - longest - 1) // eval_config.fixed_target_count,
        ),
    )
