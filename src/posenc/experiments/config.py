"""The experiment's settings: the model, the two training phases, the evaluation plan. numpy only.

:class:`TrainConfig` decides the base model and its fine-tunes, :class:`EvalConfig` how the
evaluation draws its sequences, :func:`evaluation_plan` which settings (model, method,
factor s, length) one seed is evaluated on. Nothing here imports torch, so the analysis of
stored results (:mod:`posenc.experiments.analysis`) can read the configurations.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from posenc._validation import (
    check_even_positive_int,
    check_positive_float,
    check_positive_int,
)
from posenc.experiments.passkey import PasskeyBatch, PasskeyTask

#: The methods this experiment evaluates without further training, in table order: a
#: subset of every method ``posenc.rope_scaling`` knows (``posenc.scaling.METHODS``).
EVALUATED_METHODS = ("none", "linear", "ntk", "dynamic", "ntk_by_parts", "yarn")
#: The methods fine-tuned at ``finetune_multiple`` x L (``"none"`` is the control).
FINETUNE_METHODS = ("none", "linear", "yarn")
#: Evaluation lengths as multiples of the training length.
MULTIPLES = (1, 2, 4, 8)
#: The seeds the book's runs use (``train`` and ``evaluate`` default to them).
DEFAULT_SEEDS = (0, 1, 2, 3, 4)
#: The command line's default folder, relative to the current working directory: run it
#: from the repository's root to write the book's data.
DEFAULT_DIR = Path("book") / "data" / "context_extension"
RESULTS_FILE = "results.json"
SUMMARY_FILE = "results.csv"
TRAIN_LOG_FILE = "train_log.json"
#: The key of the evaluated settings in ``results.json``. Kept as "cells", the name the
#: stored files were written with (a setting is one (model, method, factor, length)).
SETTINGS_KEY = "cells"


@dataclass(frozen=True)
class ModelConfig:
    """Sizes of the model. ``head_dim = d_model / num_heads`` must be even (RoPE pairs)."""

    vocab_size: int = 136
    d_model: int = 64
    num_heads: int = 4
    num_layers: int = 2
    mlp_ratio: int = 4
    rope_base: float = 500.0

    def __post_init__(self) -> None:
        for name in ("vocab_size", "d_model", "num_heads", "num_layers", "mlp_ratio"):
            check_positive_int(getattr(self, name), name)
        check_positive_float(self.rope_base, "rope_base")
        if self.d_model % self.num_heads:
            raise ValueError(
                f"d_model ({self.d_model}) must be divisible by num_heads ({self.num_heads})"
            )
        check_even_positive_int(
            self.d_model // self.num_heads, "head_dim (d_model / num_heads)"
        )

    @property
    def head_dim(self) -> int:
        return self.d_model // self.num_heads

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class Phase:
    """One training phase: AdamW with linear warm-up to ``learning_rate``, then constant.

    ``steps``: the most optimizer steps; ``eval_every``: steps between checks on a fixed
    validation set of ``val_sequences`` sequences (also checked at step 0 and at the last
    step); ``target_accuracy``: stop at the first check that reaches it (None: run every
    step).
    """

    steps: int
    batch_size: int
    learning_rate: float
    warmup_steps: int
    eval_every: int
    val_sequences: int
    target_accuracy: float | None = None

    def __post_init__(self) -> None:
        for name in ("steps", "batch_size", "warmup_steps", "eval_every"):
            check_positive_int(getattr(self, name), name)
        check_positive_int(self.val_sequences, "val_sequences")
        check_positive_float(self.learning_rate, "learning_rate")
        if self.target_accuracy is not None and not 0 < self.target_accuracy <= 1:
            raise ValueError(
                f"target_accuracy must be in (0, 1] or None, got {self.target_accuracy}"
            )

    def learning_rate_at(self, step: int) -> float:
        """The learning rate of step ``step`` (1-based): lr min(1, step / warmup)."""
        return self.learning_rate * min(1.0, step / self.warmup_steps)


BASE_PHASE = Phase(
    steps=6000,
    batch_size=64,
    learning_rate=3e-3,
    warmup_steps=100,
    eval_every=50,
    val_sequences=128,
    target_accuracy=0.98,
)
FINETUNE_PHASE = Phase(
    steps=100,
    batch_size=32,
    learning_rate=5e-4,
    warmup_steps=10,
    eval_every=20,
    val_sequences=64,
)

#: How the flat configurations of the stored train_log.json and results.json files name
#: the phases' settings: (old key, phase, field).
_FLAT_KEYS = (
    ("max_steps", "base", "steps"),
    ("batch_size", "base", "batch_size"),
    ("learning_rate", "base", "learning_rate"),
    ("warmup_steps", "base", "warmup_steps"),
    ("eval_every", "base", "eval_every"),
    ("val_sequences", "base", "val_sequences"),
    ("target_accuracy", "base", "target_accuracy"),
    ("finetune_steps", "finetune", "steps"),
    ("finetune_batch_size", "finetune", "batch_size"),
    ("finetune_learning_rate", "finetune", "learning_rate"),
    ("finetune_warmup_steps", "finetune", "warmup_steps"),
    ("finetune_eval_every", "finetune", "eval_every"),
    ("finetune_val_sequences", "finetune", "val_sequences"),
)


@dataclass(frozen=True)
class TrainConfig:
    """Everything that decides the base model and the fine-tunes (all seeded).

    ``base`` trains from scratch at ``train_length`` = L; ``finetune`` continues a copy of
    the base model at ``finetune_multiple`` x L, once per method of
    :data:`FINETUNE_METHODS`. Both use AdamW with ``weight_decay``.
    """

    seed: int = 0
    train_length: int = 128
    weight_decay: float = 0.01
    base: Phase = BASE_PHASE
    finetune_multiple: int = 4
    finetune: Phase = FINETUNE_PHASE
    model: ModelConfig = field(default_factory=ModelConfig)
    task: PasskeyTask = field(default_factory=PasskeyTask)

    def __post_init__(self) -> None:
        if self.model.vocab_size != self.task.vocab_size:
            raise ValueError(
                f"model.vocab_size ({self.model.vocab_size}) must equal task.vocab_size ({self.task.vocab_size})"
            )

    @property
    def finetune_length(self) -> int:
        return self.finetune_multiple * self.train_length

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> TrainConfig:
        """The configuration :meth:`to_dict` wrote, or the flat form of the stored files
        (``max_steps``, ``batch_size``, ..., ``finetune_steps``, ...: one key per setting)."""
        data = dict(data)
        phases = {
            name: dict(data.pop(name)) for name in ("base", "finetune") if name in data
        }
        for key, phase, name in _FLAT_KEYS:
            if key in data:
                phases.setdefault(phase, {})[name] = data.pop(key)
        return cls(
            model=ModelConfig(**data.pop("model")),
            task=PasskeyTask(**data.pop("task")),
            **{name: Phase(**values) for name, values in phases.items()},
            **data,
        )


@dataclass(frozen=True)
class EvalConfig:
    """How the evaluation draws its sequences: ``num_chunks`` chunks of ``chunk_size`` per length."""

    eval_seed: int = 1234
    chunk_size: int = 32
    num_chunks: int = 16
    multiples: tuple[int, ...] = MULTIPLES

    def to_dict(self) -> dict:
        return {**asdict(self), "multiples": list(self.multiples)}

    @classmethod
    def from_dict(cls, data: dict) -> EvalConfig:
        return cls(**{**data, "multiples": tuple(data["multiples"])})


def applied_factor(method: str, factor: float) -> float:
    """The factor s a setting runs ``method`` with: 1 for ``"none"`` (plain RoPE) and for
    ``"dynamic"`` (s = max(1, l' / L) for the l' tokens read, chosen per answer), else
    ``factor``."""
    return 1.0 if method in ("none", "dynamic") else float(factor)


def setting_key(
    method: str,
    length: int,
    train_length: int,
    model: str = "base",
    factor: float | None = None,
) -> tuple[str, str, float, int]:
    """``(model, method, factor, length)``, the key of one evaluated setting in the tables of
    :func:`~posenc.experiments.analysis.across_seeds`. The base model at L runs plain RoPE;
    s defaults to length / L, and :func:`applied_factor` gives the one stored."""
    if model == "base" and length == train_length:
        method = "none"
    s = length // train_length if factor is None else factor
    return model, method, applied_factor(method, s), length


def eval_batch(
    task: PasskeyTask, eval_config: EvalConfig, length: int, chunk: int
) -> PasskeyBatch:
    """Chunk ``chunk`` of the evaluation sequences of ``length`` tokens (same for every
    method): drawn from ``np.random.default_rng([eval_seed, length, chunk])``."""
    rng = np.random.default_rng([eval_config.eval_seed, length, chunk])
    return task.sample(rng, eval_config.chunk_size, length)


def evaluation_plan(train_config: TrainConfig, eval_config: EvalConfig) -> list[dict]:
    """Every (model, method, factor, length) setting of the experiment for one seed, in a
    fixed order.

    The base model at 1x L once (every method equals plain RoPE at s = 1), at the other
    multiples with every method and s = multiple. Each fine-tuned model at every multiple
    with its method twice: with the s it was tuned with, and with s re-chosen as the
    multiple (once where the two agree; ``"none"`` once).
    """
    train_length = train_config.train_length
    plan = []
    for multiple in eval_config.multiples:
        methods = ("none",) if multiple == 1 else EVALUATED_METHODS
        plan += [
            {
                "model": "base",
                "method": method,
                "factor": applied_factor(method, multiple),
                "length": multiple * train_length,
            }
            for method in methods
        ]
    tuned = train_config.finetune_multiple
    for multiple in eval_config.multiples:
        for method in FINETUNE_METHODS:
            factors = sorted({applied_factor(method, s) for s in (tuned, multiple)})
            plan += [
                {
                    "model": f"finetune_{method}",
                    "method": method,
                    "factor": factor,
                    "length": multiple * train_length,
                }
                for factor in factors
            ]
    return plan


def seed_dir(root: Path, seed: int) -> Path:
    """Where ``train`` keeps seed ``seed``: ``root/seed_<seed>``."""
    return Path(root) / f"seed_{seed}"
