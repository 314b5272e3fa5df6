""" "Other roads" on the real-text corpus: one encoding and seed, trained and scored. Imports torch.

:func:`train_text_road` is "Real text"'s base model
(:func:`~posenc.experiments.training.train_language_model`, the same configuration and
batches) with another position signal, then, for the RoPE family, its fine-tunes
(:func:`~posenc.experiments.text_runs.finetune_text`, with the fine-tuning-cost curve)
with each extension method. Checkpoints are float16, read back in float32.
:func:`evaluate_text_road` scores every setting of
:func:`~posenc.experiments.roads_config.road_plan` under both protocols of "Real text"
(:func:`~posenc.experiments.text_evaluation.score_setting`): per-window losses in nats,
and the loss by position at the longest length.
"""

from __future__ import annotations

import json
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch

from posenc.experiments.corpus import byte_tokens, load_split
from posenc.experiments.roads_config import (
    RESULTS,
    TEXT_CONFIG,
    TEXT_EVAL,
    TRAIN_LOG,
    checkpoint_dir,
    finetuned_methods,
    is_reused,
    road_encoding,
    road_plan,
    run_dir,
)
from posenc.experiments.text_config import protocol_windows
from posenc.experiments.text_evaluation import score_setting, stored_entry
from posenc.experiments.text_runs import curve_windows, finetune_text, train_text_base
from posenc.experiments.training import (
    load_checkpoint,
    run_record,
    save_checkpoint,
    write_train_log,
)


def train_text_road(
    root: Path,
    name: str,
    seed: int,
    config=TEXT_CONFIG,
    eval_config=TEXT_EVAL,
    log=print,
) -> dict:
    """Train encoding ``name`` with ``seed``: ``base.pt``, ``finetune_<method>.pt`` and
    ``train_log.json`` in :func:`~posenc.experiments.roads_config.run_dir`."""
    if is_reused("text", name):
        raise ValueError(
            f"encoding {name!r} is not trained here: its runs are Real text's "
            "(REUSED_ROPE)"
        )
    directory = run_dir(root, "text", name, seed)
    directory.mkdir(parents=True, exist_ok=True)
    started = (time.perf_counter(), time.process_time())
    config = replace(config, seed=seed)
    encoding = road_encoding(name, config.model, config.train_length)
    parts = load_split()
    base, base_log = train_text_base(config, parts, log, encoding)
    save_checkpoint(base, directory / "base.pt", dtype=torch.float16)
    finetunes = {}
    methods = finetuned_methods("text", name, seed)
    windows = curve_windows(config, eval_config, parts) if methods else None
    for method in methods:
        model, finetunes[method] = finetune_text(
            base, method, config, parts, windows, log
        )
        save_checkpoint(model, directory / f"finetune_{method}.pt", dtype=torch.float16)
    return write_train_log(
        directory / TRAIN_LOG,
        {
            "task": "text",
            "encoding": name,
            "position_encoding": encoding.to_dict(),
            "config": config.to_dict(),
            "eval_config": eval_config.to_dict(),
        },
        base_log,
        finetunes,
        started,
    )


def evaluate_text_road(
    root: Path,
    name: str,
    seed: int,
    config=TEXT_CONFIG,
    eval_config=TEXT_EVAL,
    log=print,
) -> dict:
    """Every setting of ``road_plan("text", name)`` for one seed; writes and returns
    ``results.json`` in :func:`~posenc.experiments.roads_config.run_dir`."""
    config = replace(config, seed=seed)
    source = checkpoint_dir(root, "text", name, seed)
    directory = run_dir(root, "text", name, seed)
    directory.mkdir(parents=True, exist_ok=True)
    test = byte_tokens(load_split()["test"])
    longest = max(eval_config.multiples)
    windows: dict = {}
    models: dict = {}
    settings = []
    started = time.perf_counter()
    for setting in road_plan(
        "text", name, eval_config.multiples, config.finetune_multiple, seed
    ):
        multiple = setting["multiple"]
        if multiple not in windows:
            windows[multiple] = protocol_windows(test, config, eval_config, multiple)
        if setting["model"] not in models:
            models[setting["model"]] = load_checkpoint(
                source / f"{setting['model']}.pt"
            )
        scores = score_setting(
            models[setting["model"]], setting, windows[multiple], config
        )
        entry = stored_entry(setting, scores, longest)
        settings.append(entry)
        log(
            f"text {name} seed {seed} {setting['model']:15s} {setting['method']:6s} "
            f"{multiple:2d}L: whole {np.mean(entry['whole_window']):.4f}, fixed "
            f"{np.mean(entry['fixed_target']):.4f} nats  "
            f"({time.perf_counter() - started:.0f} s)"
        )
    results = run_record(
        {
            "task": "text",
            "encoding": name,
            "checkpoints": str(source),
            "config": config.to_dict(),
            "eval_config": eval_config.to_dict(),
        },
        settings,
        started,
    )
    (directory / RESULTS).write_text(json.dumps(results) + "\n", encoding="utf-8")
    return results
