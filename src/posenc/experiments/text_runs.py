"""Training the real-text experiment: one seed's base model and its two fine-tunes. Imports torch.

:func:`train_text_seed` trains the byte-level model at L with plain RoPE
(:func:`~posenc.experiments.training.train_language_model`), then fine-tunes a copy at
``finetune_multiple`` x L once with Position Interpolation and once with YaRN (s = that
multiple), on identical batches and schedules. At every check of a fine-tune it scores the
test windows of that length, window by window: the fine-tuning-cost curve.

Checkpoints are stored in float16 (half the bytes, :func:`~posenc.experiments.training.save_checkpoint`); the evaluation reads those weights back in float32.
"""

from __future__ import annotations

import copy
import time
from dataclasses import replace
from pathlib import Path

import torch

from posenc.experiments.config import seed_dir
from posenc.experiments.corpus import (
    TextTask,
    byte_tokens,
    evaluation_windows,
    load_split,
)
from posenc.experiments.language_model import target_losses
from posenc.experiments.text_config import (
    TEXT_FINETUNE_METHODS,
    TEXT_TRAIN_LOG,
    TextConfig,
    TextEvalConfig,
    text_options,
)
from posenc.experiments.tiny_model import RopeSpec, TinyRopeTransformer
from posenc.experiments.training import (
    parameter_digest,
    rope_spec,
    save_checkpoint,
    train_language_model,
    train_phase,
    write_train_log,
)


def text_rope(method: str, factor: float, train_length: int) -> RopeSpec:
    """Chapter 6's :func:`~posenc.experiments.training.rope_spec`, with Llama 3.1's
    published options for ``"llama3"``."""
    return replace(
        rope_spec(method, factor, train_length), options=text_options(method)
    )


def finetune_text(
    base: TinyRopeTransformer,
    method: str,
    config: TextConfig,
    parts: dict[str, bytes],
    curve_windows,
    log=print,
) -> tuple[TinyRopeTransformer, dict]:
    """A copy of ``base`` fine-tuned at ``finetune_multiple`` x L with ``method``.

    Batches from ``np.random.default_rng([seed, 3])`` for every method. The log adds
    ``cost_curve``: at each check, the step and the mean loss (nats) of every window of
    ``curve_windows``.
    """
    rope = text_rope(method, config.finetune_multiple, config.train_length)
    model = copy.deepcopy(base)
    curve = []

    def score(step: int) -> None:
        losses = target_losses(model, curve_windows, rope).mean(axis=1)
        curve.append({"step": step, "window_losses": losses.tolist()})

    phase_log = train_phase(
        model,
        config.finetune,
        rope=rope,
        length=config.finetune_length,
        task=TextTask(byte_tokens(parts["train"])),
        weight_decay=config.weight_decay,
        streams=([config.seed, 3], [config.seed, 4]),
        log=log,
        label=f"fine-tune {method:6s} ",
        val=evaluation_windows(
            byte_tokens(parts["validation"]),
            config.finetune_length,
            config.finetune.val_sequences,
        ),
        on_check=score,
    )
    return model, {
        "method": method,
        "length": config.finetune_length,
        "factor": rope.factor,
        **phase_log,
        "cost_curve": curve,
        "digest": parameter_digest(model),
    }


def curve_windows(config: TextConfig, eval_config: TextEvalConfig, parts):
    """The test windows the cost curve scores: the whole-window protocol's at the fine-tuned length."""
    length = config.finetune_length
    return evaluation_windows(
        byte_tokens(parts["test"]), length, eval_config.whole_window_count(length)
    )


def train_text_base(config: TextConfig, parts: dict, log=print, encoding=None):
    """The base phase of ``config`` (its model, steps, seed and weight decay) on the
    corpus ``parts``: (model, its training log). ``encoding``: the position signal
    (default RoPE, chapter 6's model)."""
    return train_language_model(
        config.model,
        config.base,
        parts=parts,
        length=config.train_length,
        seed=config.seed,
        weight_decay=config.weight_decay,
        log=log,
        encoding=encoding,
    )


def train_text_seed(
    directory: Path,
    config: TextConfig = TextConfig(),
    eval_config: TextEvalConfig = TextEvalConfig(),
    log=print,
) -> dict:
    """Train one seed: ``base.pt``, ``finetune_<method>.pt`` and ``train_log.json``."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    started, cpu_started = time.perf_counter(), time.process_time()
    parts = load_split()
    base, base_log = train_text_base(config, parts, log)
    save_checkpoint(base, directory / "base.pt", dtype=torch.float16)
    windows = curve_windows(config, eval_config, parts)
    finetunes = {}
    for method in TEXT_FINETUNE_METHODS:
        model, finetune_log = finetune_text(base, method, config, parts, windows, log)
        save_checkpoint(model, directory / f"finetune_{method}.pt", dtype=torch.float16)
        finetunes[method] = finetune_log
    return write_train_log(
        directory / TEXT_TRAIN_LOG,
        {"config": config.to_dict(), "eval_config": eval_config.to_dict()},
        base_log,
        finetunes,
        (started, cpu_started),
    )


def train_text_seeds(root: Path, seeds: list[int], log=print) -> list[dict]:
    """:func:`train_text_seed` for each seed, into ``root/seed_<seed>``."""
    return [
        train_text_seed(seed_dir(root, seed), TextConfig(seed=seed), log=log)
        for seed in seeds
    ]
