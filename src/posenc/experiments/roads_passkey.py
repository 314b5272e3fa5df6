""" "Other roads" on chapter 6's passkey task: one encoding and seed, trained and scored. Imports torch.

:func:`train_passkey_road` is chapter 6's base phase
(:func:`~posenc.experiments.training.train_base`, the same configuration, batches and
stopping rule) with another position signal, then, for the RoPE family, chapter 6's
fine-tune (:func:`~posenc.experiments.training.finetune`) with each extension method.
Checkpoints are float16; :func:`evaluate_passkey_road` reads them back in float32
and scores every setting of
:func:`~posenc.experiments.roads_config.road_plan` on chapter 6's evaluation sequences,
keeping per chunk which answers were right and the summed loss, so accuracy by
distance can be recomputed (:func:`~posenc.experiments.analysis.answer_distances`).
"""

from __future__ import annotations

import json
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch

from posenc.experiments.analysis import answer_distances
from posenc.experiments.config import eval_batch
from posenc.experiments.roads_config import (
    PASSKEY_CONFIG,
    PASSKEY_EVAL,
    RESULTS,
    TRAIN_LOG,
    checkpoint_dir,
    finetuned_methods,
    road_encoding,
    road_plan,
    run_dir,
)
from posenc.experiments.training import (
    answer_logits,
    answer_loss,
    finetune,
    load_checkpoint,
    rope_spec,
    run_record,
    save_checkpoint,
    train_base,
    write_train_log,
)


def train_passkey_road(
    root: Path, name: str, seed: int, config=PASSKEY_CONFIG, log=print
) -> dict:
    """Train encoding ``name`` with ``seed``: ``base.pt``, ``finetune_<method>.pt`` and
    ``train_log.json`` in :func:`~posenc.experiments.roads_config.run_dir`."""
    directory = run_dir(root, "passkey", name, seed)
    directory.mkdir(parents=True, exist_ok=True)
    started = (time.perf_counter(), time.process_time())
    config = replace(config, seed=seed)
    encoding = road_encoding(name, config.model, config.train_length)
    base, base_log = train_base(config, log, encoding)
    save_checkpoint(base, directory / "base.pt", dtype=torch.float16)
    finetunes = {}
    for method in finetuned_methods("passkey", name, seed):
        model, finetunes[method] = finetune(base, method, config, log)
        save_checkpoint(model, directory / f"finetune_{method}.pt", dtype=torch.float16)
    return write_train_log(
        directory / TRAIN_LOG,
        {
            "task": "passkey",
            "encoding": name,
            "position_encoding": encoding.to_dict(),
            "config": config.to_dict(),
        },
        base_log,
        finetunes,
        started,
    )


def score_passkey_setting(
    model, setting: dict, config, eval_config, chunks
) -> list[dict]:
    """Per chunk: which answers were right ('0'/'1', (sequence, query) order) and the
    summed loss (nats)."""
    rope = rope_spec(setting["method"], setting["factor"], config.train_length)
    length = setting["multiple"] * config.train_length
    out = []
    with torch.inference_mode():
        for chunk in chunks:
            batch = eval_batch(config.task, eval_config, length, chunk)
            logits = answer_logits(model, batch, rope)
            correct = (logits.argmax(-1).numpy() == batch.targets).reshape(-1)
            out.append(
                {
                    "chunk": chunk,
                    "correct": "".join("1" if c else "0" for c in correct),
                    "loss_sum": float(answer_loss(logits, batch, "sum")),
                }
            )
    return out


def evaluate_passkey_road(
    root: Path,
    name: str,
    seed: int,
    config=PASSKEY_CONFIG,
    eval_config=PASSKEY_EVAL,
    log=print,
) -> dict:
    """Every setting of ``road_plan("passkey", name)`` for one seed; writes and returns
    ``results.json`` in :func:`~posenc.experiments.roads_config.run_dir`."""
    config = replace(config, seed=seed)
    source = checkpoint_dir(root, "passkey", name, seed)
    directory = run_dir(root, "passkey", name, seed)
    directory.mkdir(parents=True, exist_ok=True)
    chunks = list(range(eval_config.num_chunks))
    models: dict = {}
    settings = []
    started = time.perf_counter()
    for setting in road_plan(
        "passkey", name, eval_config.multiples, config.finetune_multiple, seed
    ):
        if setting["model"] not in models:
            models[setting["model"]] = load_checkpoint(
                source / f"{setting['model']}.pt"
            )
        counts = score_passkey_setting(
            models[setting["model"]], setting, config, eval_config, chunks
        )
        settings.append({**setting, "chunks": counts})
        correct = np.array([c == "1" for chunk in counts for c in chunk["correct"]])
        distances = answer_distances(
            config, eval_config, setting["multiple"] * config.train_length, chunks
        )
        beyond = distances > config.train_length
        log(
            f"passkey {name} seed {seed} {setting['model']:14s} {setting['method']:6s} "
            f"{setting['multiple']:2d}L: accuracy {correct.mean():.4f}"
            + (f", beyond L {correct[beyond].mean():.4f}" if beyond.any() else "")
            + f"  ({time.perf_counter() - started:.0f} s)"
        )
    results = run_record(
        {
            "task": "passkey",
            "encoding": name,
            "checkpoints": str(source),
            "config": config.to_dict(),
            "eval_config": eval_config.to_dict(),
        },
        settings,
        started,
    )
    (directory / RESULTS).write_text(
        json.dumps(results, separators=(",", ":")) + "\n", encoding="utf-8"
    )
    return results
