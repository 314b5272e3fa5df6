"""Evaluating the experiment's models on every setting of the plan. Imports torch.

A setting is one (model, method, factor s, length) of
:func:`~posenc.experiments.config.evaluation_plan`. Static methods run with
``factor = s = length / L``; ``"dynamic"`` is dynamic NTK, s = l' / L for
the l' tokens read so far. Evaluation data are drawn chunk by chunk from
``np.random.default_rng([eval_seed, length, chunk])``
(:func:`~posenc.experiments.config.eval_batch`): every method and seed sees the same
sequences, and a prefix of the chunks reproduces the same numbers as the full run. Results
keep per-chunk raw counts, so any slice can be checked
(:mod:`posenc.experiments.analysis` reads them).
"""

from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np
import torch

from posenc.attention import attention_entropy, softmax
from posenc.experiments.analysis import (
    answer_distances,
    read_train_log,
    summarize_setting,
)
from posenc.experiments.config import (
    SETTINGS_KEY,
    EvalConfig,
    TrainConfig,
    eval_batch,
    evaluation_plan,
)
from posenc.experiments.passkey import PasskeyBatch, PasskeyTask
from posenc.experiments.tiny_model import RopeSpec, TinyRopeTransformer
from posenc.experiments.training import (
    answer_logits,
    answer_loss,
    checkpoint_path,
    load_checkpoint,
    rope_spec,
)


def answer_entropy(capture: list, batch: PasskeyBatch) -> np.ndarray:
    """Attention entropy (nats) of each head at the query-marker rows, per layer: (layers, B, heads, K).

    ``capture``: what the model recorded, one (q, k) per layer, rotated (so YaRN's attention
    factor is included). The weights are recomputed in float64 with :func:`posenc.softmax`
    and measured with :func:`posenc.attention.attention_entropy`; causal mask by position.
    """
    rows = batch.answer_positions
    length = batch.tokens.shape[1]
    allowed = np.arange(length)[None, :] <= rows[:, None]  # (K, length)
    entropies = []
    for q, k in capture:
        q = q.double().numpy()
        # a layer that computed every row: keep the answer rows
        if q.shape[-2] != len(rows):
            q = q[..., rows, :]
        k = k.double().numpy()
        scores = q @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1])
        weights = softmax(np.where(allowed, scores, -np.inf))
        entropies.append(attention_entropy(weights))
    return np.stack(entropies)


def evaluate_setting(
    model: TinyRopeTransformer,
    rope: RopeSpec,
    task: PasskeyTask,
    eval_config: EvalConfig,
    length: int,
    chunks: range | list[int],
    keep_margins: bool = False,
) -> list[dict]:
    """Raw counts per chunk: which answers were right (a '0'/'1' string, in (sequence, query)
    order), the summed loss (nats) and the summed attention entropy per layer (nats; not
    recorded for ``"dynamic"``, whose answers come from separate passes). With
    ``keep_margins``, also each answer's gap between its two largest logits (not stored)."""
    out = []
    with torch.inference_mode():
        for chunk in chunks:
            batch = eval_batch(task, eval_config, length, chunk)
            capture: list | None = None if rope.method == "dynamic" else []
            logits = answer_logits(model, batch, rope, capture)
            correct = (logits.argmax(-1).numpy() == batch.targets).reshape(-1)
            counts = {
                "chunk": chunk,
                "correct": "".join("1" if c else "0" for c in correct),
                "loss_sum": float(answer_loss(logits, batch, "sum")),
            }
            if keep_margins:
                top2 = logits.double().topk(2, dim=-1).values
                counts["margins"] = (top2[..., 0] - top2[..., 1]).reshape(-1).numpy()
            if capture is not None:
                # (layers, B, heads, K)
                entropy = answer_entropy(capture, batch)
                counts["entropy_sum"] = [float(layer.sum()) for layer in entropy]
                counts["entropy_count"] = int(entropy[0].size)
            out.append(counts)
    return out


def run_setting(
    model: TinyRopeTransformer,
    setting: dict,
    train_config: TrainConfig,
    eval_config: EvalConfig,
    chunks: range | list[int],
    keep_margins: bool = False,
) -> list[dict]:
    """:func:`evaluate_setting` for one setting of the plan (its method, factor and length)."""
    rope = rope_spec(setting["method"], setting["factor"], train_config.train_length)
    return evaluate_setting(
        model,
        rope,
        train_config.task,
        eval_config,
        setting["length"],
        chunks,
        keep_margins,
    )


def evaluate_all(
    directory: Path,
    eval_config: EvalConfig = EvalConfig(),
    *,
    chunks: range | list[int] | None = None,
    settings: list[dict] | None = None,
    log=print,
) -> dict:
    """Evaluate the checkpoints of one seed in ``directory`` on every setting of
    :func:`~posenc.experiments.config.evaluation_plan`.

    ``chunks``: which chunks (default all ``num_chunks``); ``settings``: a subset of the
    plan. Returns the results dictionary that ``evaluate`` writes
    (:func:`~posenc.experiments.analysis.write_results`).
    """
    directory = Path(directory)
    train_config = TrainConfig.from_dict(read_train_log(directory)["config"])
    chunks = list(range(eval_config.num_chunks) if chunks is None else chunks)
    models: dict[str, TinyRopeTransformer] = {}
    results = []
    start = time.perf_counter()
    plan = evaluation_plan(train_config, eval_config) if settings is None else settings
    for setting in plan:
        if setting["model"] not in models:
            models[setting["model"]] = load_checkpoint(
                checkpoint_path(directory, setting["model"])
            )
        counts = run_setting(
            models[setting["model"]], setting, train_config, eval_config, chunks
        )
        results.append({**setting, "chunks": counts})
        distances = answer_distances(
            train_config, eval_config, setting["length"], chunks
        )
        summary = summarize_setting(results[-1], train_config, distances)
        log(
            f"seed {train_config.seed} {setting['model']:16s} {setting['method']:12s} "
            f"s={setting['factor']:g} {setting['length']:5d}: accuracy "
            f"{summary['accuracy']:.4f}  beyond L {summary['accuracy_beyond']:.4f}  "
            f"({time.perf_counter() - start:.0f} s)"
        )
    return {
        "train_config": train_config.to_dict(),
        "eval_config": eval_config.to_dict(),
        "chunks": chunks,
        "torch_version": torch.__version__,
        "threads": torch.get_num_threads(),
        SETTINGS_KEY: results,
    }
