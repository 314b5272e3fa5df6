"""Context extension, measured: train tiny RoPE models at length L, then stretch them. Imports torch.

The experiment behind the book's page on context extension, and its command line::

    python -m posenc.experiments.context_extension train     # per seed: base model, then three fine-tunes
    python -m posenc.experiments.context_extension evaluate  # every method at 1x..8x L -> results
    python -m posenc.experiments.context_extension all       # both
    python -m posenc.experiments.context_extension compare A B   # two training runs side by side

For each seed (default :data:`DEFAULT_SEEDS`; the seed decides initial weights, batches and
validation sets):

1. **Train** :class:`~posenc.experiments.tiny_model.TinyRopeTransformer` on the passkey task
   (:mod:`posenc.experiments.passkey`) at ``L = train_length`` tokens with plain RoPE, and
   stop once accuracy on a fixed validation set reaches ``target_accuracy``.
2. **Extend without training**: evaluate the same weights at 1x, 2x, 4x and 8x L with each
   method of :func:`posenc.rope_scaling`. Static methods get ``factor = s = length / L``;
   ``"dynamic"`` is the paper's dynamic scaling, s = l' / L for the l' tokens read so far.
3. **Fine-tune** copies of the base model at 4x L for the same number of steps with
   ``"none"``, ``"linear"`` and ``"yarn"`` (s = 4), on identical batches; evaluate them at
   every length both with s = 4 and with s re-chosen as length / L.
4. **Entropy** of the attention rows that must find the needle, from the same forward passes.

Evaluation data are drawn chunk by chunk from ``np.random.default_rng([eval_seed, length,
chunk])``: every method and seed sees the same sequences, and a prefix of the chunks
reproduces the same numbers as the full run. Results keep per-chunk raw counts, so any
slice can be checked.
"""

from __future__ import annotations

import argparse
import copy
import csv
import hashlib
import json
import math
import sys
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from posenc.attention import attention_entropy, softmax
from posenc.experiments import baselines
from posenc.experiments.passkey import PasskeyBatch, PasskeyTask
from posenc.experiments.tiny_model import ModelConfig, RopeSpec, TinyRopeTransformer

#: The methods this experiment evaluates without further training, in table order: a
#: subset of every method ``posenc.rope_scaling`` knows (``posenc.scaling.METHODS``).
EVALUATED_METHODS = ("none", "linear", "ntk", "dynamic", "ntk_by_parts", "yarn")
#: The methods fine-tuned at ``finetune_multiple`` x L (``"none"`` is the control).
FINETUNE_METHODS = ("none", "linear", "yarn")
#: Evaluation lengths as multiples of the training length.
MULTIPLES = (1, 2, 4, 8)
#: The seeds the book's runs use (``train`` and ``evaluate`` default to them).
DEFAULT_SEEDS = (0, 1, 2, 3, 4)
#: The book's data, found from this file (src/posenc/experiments/ -> the repository root).
DEFAULT_DIR = (
    Path(__file__).resolve().parents[3] / "book" / "data" / "context_extension"
)
#: Measured on this project's 2-core machine; shown by ``--help``.
TRAIN_TIME_NOTE = "15 min measured for the five default seeds on a quiet 2-core machine, 33 min on a shared one"
EVAL_TIME_NOTE = "9 min measured for five seeds, 1 thread"
RESULTS_FILE = "results.json"
SUMMARY_FILE = "results.csv"
TRAIN_LOG_FILE = "train_log.json"


@dataclass(frozen=True)
class TrainConfig:
    """Everything that decides the base model and the fine-tunes (all seeded)."""

    seed: int = 0
    train_length: int = 128
    batch_size: int = 64
    learning_rate: float = 3e-3
    warmup_steps: int = 100
    weight_decay: float = 0.01
    target_accuracy: float = 0.98
    eval_every: int = 50
    val_sequences: int = 128
    max_steps: int = 6000
    finetune_multiple: int = 4
    finetune_steps: int = 100
    finetune_batch_size: int = 32
    finetune_learning_rate: float = 5e-4
    finetune_warmup_steps: int = 10
    finetune_eval_every: int = 20
    finetune_val_sequences: int = 64
    model: ModelConfig = field(default_factory=ModelConfig)
    task: PasskeyTask = field(default_factory=PasskeyTask)

    def __post_init__(self) -> None:
        if self.model.vocab_size != self.task.vocab_size:
            raise ValueError(
                f"model.vocab_size ({self.model.vocab_size}) must equal task.vocab_size ({self.task.vocab_size})"
            )

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> TrainConfig:
        data = dict(data)
        model, task = ModelConfig(**data.pop("model")), PasskeyTask(**data.pop("task"))
        return cls(model=model, task=task, **data)


@dataclass(frozen=True)
class EvalConfig:
    """How the evaluation draws its sequences: ``num_chunks`` chunks of ``chunk_size`` per length."""

    eval_seed: int = 1234
    chunk_size: int = 32
    num_chunks: int = 16
    multiples: tuple[int, ...] = MULTIPLES

    def to_dict(self) -> dict:
        return {**asdict(self), "multiples": list(self.multiples)}


# ------------------------------------------------------------------ specs, data, losses


def rope_spec(method: str, factor: float, train_length: int) -> RopeSpec:
    """The RoPE configuration of ``method`` stretched by ``factor`` = s for a model trained at L.

    ``original_max_position = train_length``, every other option at the defaults of
    :func:`posenc.rope_scaling` (beta_fast 32, beta_slow 1, YaRN's attention factor
    0.1 ln s + 1). ``"none"`` ignores ``factor`` (plain RoPE). ``"dynamic"`` is the paper's
    dynamic scaling, s = max(1, l' / L) for a model that has read l' tokens: in
    transformers' formula that is factor 1 with ``seq_len = l'``, so it ignores ``factor``
    too and :func:`answer_logits` hands each answer its own l'.
    """
    fixed = method in ("none", "dynamic")
    return RopeSpec(
        method=method,
        factor=1.0 if fixed else float(factor),
        original_max_position=train_length,
    )


def eval_batch(
    task: PasskeyTask, eval_config: EvalConfig, length: int, chunk: int
) -> PasskeyBatch:
    """Chunk ``chunk`` of the evaluation sequences of ``length`` tokens (same for every method)."""
    rng = np.random.default_rng([eval_config.eval_seed, length, chunk])
    return task.sample(rng, eval_config.chunk_size, length)


def answer_logits(
    model: TinyRopeTransformer,
    batch: PasskeyBatch,
    rope: RopeSpec,
    capture: list | None = None,
) -> torch.Tensor:
    """Logits (B, K, vocab) at the query markers of ``batch``, where the values must be predicted.

    For ``"dynamic"`` each query marker at position r is answered by a pass over the r + 1
    tokens read so far, with s = (r + 1) / L, as a model that rescales at every step does;
    ``capture`` is not supported there.
    """
    tokens = torch.from_numpy(batch.tokens)
    if rope.method != "dynamic":
        return model(tokens, rope, rows=batch.answer_positions, capture=capture)
    if capture is not None:
        raise ValueError(
            "capture is not supported for rope.method 'dynamic' (one pass per answer)"
        )
    return torch.cat(
        [
            model(tokens[:, : row + 1], rope, rows=[row])
            for row in batch.answer_positions.tolist()
        ],
        dim=1,
    )


def answer_loss(
    logits: torch.Tensor, batch: PasskeyBatch, reduction: str = "mean"
) -> torch.Tensor:
    """Cross-entropy (nats) of the expected values under ``logits`` (B, K, vocab)."""
    targets = torch.from_numpy(batch.targets)
    return F.cross_entropy(
        logits.reshape(-1, logits.shape[-1]), targets.reshape(-1), reduction=reduction
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
        if q.shape[-2] != len(
            rows
        ):  # a layer that computed every row: keep the answer rows
            q = q[..., rows, :]
        k = k.double().numpy()
        scores = q @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1])
        weights = softmax(np.where(allowed, scores, -np.inf))
        entropies.append(attention_entropy(weights))
    return np.stack(entropies)


# ------------------------------------------------------------------ training


def _set_lr(optimizer: torch.optim.Optimizer, lr: float) -> None:
    for group in optimizer.param_groups:
        group["lr"] = lr


def _accuracy_and_loss(
    model: TinyRopeTransformer, batch: PasskeyBatch, rope: RopeSpec, chunk: int = 64
) -> tuple[float, float]:
    correct, loss_sum, count = 0, 0.0, 0
    with torch.inference_mode():
        for start in range(0, batch.tokens.shape[0], chunk):
            part = PasskeyBatch(
                *(
                    array[start : start + chunk] if array.ndim == 2 else array
                    for array in (
                        batch.tokens,
                        batch.answer_positions,
                        batch.targets,
                        batch.needle_positions,
                        batch.distances,
                    )
                )
            )
            logits = answer_logits(model, part, rope)
            correct += int((logits.argmax(-1).numpy() == part.targets).sum())
            loss_sum += float(answer_loss(logits, part, "sum"))
            count += part.targets.size
    return correct / count, loss_sum / count


def parameter_digest(model: torch.nn.Module) -> str:
    """sha256 of every parameter's float32 bytes, in state-dict order: equal digests, equal weights."""
    digest = hashlib.sha256()
    for name, tensor in model.state_dict().items():
        digest.update(name.encode())
        digest.update(tensor.detach().contiguous().numpy().tobytes())
    return digest.hexdigest()


def _optimizer(model: torch.nn.Module, config: TrainConfig) -> torch.optim.Optimizer:
    return torch.optim.AdamW(
        model.parameters(), lr=0.0, betas=(0.9, 0.98), weight_decay=config.weight_decay
    )


def train_base(config: TrainConfig, log=print) -> tuple[TinyRopeTransformer, dict]:
    """Train from scratch at ``train_length`` with plain RoPE until validation accuracy >= target.

    Batches come from ``np.random.default_rng([seed, 1])``, the validation set from
    ``[seed, 2]``, the initial weights from ``torch.manual_seed(seed)``. Checks every
    ``eval_every`` steps; stops at the first check that reaches ``target_accuracy`` (or at
    ``max_steps``, recorded as not reached). Returns the model and a log dictionary.
    """
    torch.manual_seed(config.seed)
    model = TinyRopeTransformer(config.model)
    optimizer = _optimizer(model, config)
    rng = np.random.default_rng([config.seed, 1])
    val = config.task.sample(
        np.random.default_rng([config.seed, 2]),
        config.val_sequences,
        config.train_length,
    )
    rope = RopeSpec(original_max_position=config.train_length)
    curve, reached, start, cpu_start = (
        [],
        False,
        time.perf_counter(),
        time.process_time(),
    )
    step = 0
    for step in range(1, config.max_steps + 1):
        _set_lr(optimizer, config.learning_rate * min(1.0, step / config.warmup_steps))
        batch = config.task.sample(rng, config.batch_size, config.train_length)
        loss = answer_loss(answer_logits(model, batch, rope), batch)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        if step % config.eval_every == 0:
            accuracy, val_loss = _accuracy_and_loss(model, val, rope)
            curve.append(
                {
                    "step": step,
                    "train_loss": loss.item(),
                    "val_accuracy": accuracy,
                    "val_loss": val_loss,
                }
            )
            log(
                f"step {step:5d}  train loss {loss.item():.4f}  val accuracy {accuracy:.4f}  "
                f"({time.perf_counter() - start:.0f} s)"
            )
            if accuracy >= config.target_accuracy:
                reached = True
                break
    seconds = time.perf_counter() - start
    return model, {
        "steps": step,
        "reached_target": reached,
        "seconds": seconds,
        "cpu_seconds": time.process_time() - cpu_start,
        "curve": curve,
        "parameters": model.num_parameters(),
        "digest": parameter_digest(model),
    }


def finetune(
    base: TinyRopeTransformer, method: str, config: TrainConfig, log=print
) -> tuple[TinyRopeTransformer, dict]:
    """Fine-tune a copy of ``base`` at ``finetune_multiple`` x L with ``method`` (s = that multiple).

    Every method gets the same ``finetune_steps``, learning rate schedule and batches
    (``np.random.default_rng([seed, 3])``), and is checked every ``finetune_eval_every``
    steps (and at step 0) on one fixed validation set (``[seed, 4]``).
    """
    length = config.finetune_multiple * config.train_length
    rope = rope_spec(method, config.finetune_multiple, config.train_length)
    model = copy.deepcopy(base)
    optimizer = _optimizer(model, config)
    rng = np.random.default_rng([config.seed, 3])
    val = config.task.sample(
        np.random.default_rng([config.seed, 4]), config.finetune_val_sequences, length
    )
    accuracy, val_loss = _accuracy_and_loss(model, val, rope)
    curve = [{"step": 0, "val_accuracy": accuracy, "val_loss": val_loss}]
    start, cpu_start = time.perf_counter(), time.process_time()
    for step in range(1, config.finetune_steps + 1):
        _set_lr(
            optimizer,
            config.finetune_learning_rate
            * min(1.0, step / config.finetune_warmup_steps),
        )
        batch = config.task.sample(rng, config.finetune_batch_size, length)
        loss = answer_loss(answer_logits(model, batch, rope), batch)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        if step % config.finetune_eval_every == 0 or step == config.finetune_steps:
            accuracy, val_loss = _accuracy_and_loss(model, val, rope)
            curve.append({"step": step, "val_accuracy": accuracy, "val_loss": val_loss})
            log(f"fine-tune {method:6s} step {step:4d}  val accuracy {accuracy:.4f}")
    return model, {
        "method": method,
        "length": length,
        "factor": rope.factor,
        "seconds": time.perf_counter() - start,
        "cpu_seconds": time.process_time() - cpu_start,
        "curve": curve,
        "digest": parameter_digest(model),
    }


# ------------------------------------------------------------------ checkpoints


def checkpoint_path(directory: Path, name: str) -> Path:
    """``base.pt`` or ``finetune_<method>.pt`` in ``directory``."""
    return Path(directory) / f"{name}.pt"


def save_checkpoint(
    model: TinyRopeTransformer, path: Path, extra: dict | None = None
) -> None:
    """float32 weights and the model config; a few hundred kB for the default model."""
    torch.save(
        {
            "config": model.config.to_dict(),
            "state_dict": model.state_dict(),
            "extra": extra or {},
        },
        path,
    )


def load_checkpoint(path: Path) -> TinyRopeTransformer:
    """The model saved by :func:`save_checkpoint`, in eval mode (``weights_only`` loading)."""
    data = torch.load(Path(path), weights_only=True)
    model = TinyRopeTransformer(ModelConfig(**data["config"]))
    model.load_state_dict(data["state_dict"])
    return model.eval()


def train_all(directory: Path, config: TrainConfig = TrainConfig(), log=print) -> dict:
    """Train the base model and the fine-tunes; write checkpoints and ``train_log.json``."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    started, cpu_started = time.perf_counter(), time.process_time()
    base, base_log = train_base(config, log)
    save_checkpoint(base, checkpoint_path(directory, "base"))
    finetunes = {}
    for method in FINETUNE_METHODS:
        model, finetune_log = finetune(base, method, config, log)
        save_checkpoint(
            model, checkpoint_path(directory, f"finetune_{method}"), {"method": method}
        )
        finetunes[method] = finetune_log
    log_data = {
        "config": config.to_dict(),
        "torch_version": torch.__version__,
        "threads": torch.get_num_threads(),
        "base": base_log,
        "finetune": finetunes,
        "total_seconds": time.perf_counter() - started,
        "total_cpu_seconds": time.process_time() - cpu_started,
    }
    (directory / TRAIN_LOG_FILE).write_text(
        json.dumps(log_data, indent=1) + "\n", encoding="utf-8"
    )
    return log_data


def read_train_log(directory: Path) -> dict:
    return json.loads((Path(directory) / TRAIN_LOG_FILE).read_text(encoding="utf-8"))


# ------------------------------------------------------------------ evaluation


def evaluate_cell(
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
                entropy = answer_entropy(capture, batch)  # (layers, B, heads, K)
                counts["entropy_sum"] = [float(layer.sum()) for layer in entropy]
                counts["entropy_count"] = int(entropy[0].size)
            out.append(counts)
    return out


def run_cell(
    model: TinyRopeTransformer,
    cell: dict,
    train_config: TrainConfig,
    eval_config: EvalConfig,
    chunks: range | list[int],
    keep_margins: bool = False,
) -> list[dict]:
    """:func:`evaluate_cell` for one cell of the plan (its method, factor and length)."""
    rope = rope_spec(cell["method"], cell["factor"], train_config.train_length)
    return evaluate_cell(
        model,
        rope,
        train_config.task,
        eval_config,
        cell["length"],
        chunks,
        keep_margins,
    )


def evaluation_plan(train_config: TrainConfig, eval_config: EvalConfig) -> list[dict]:
    """Every (model, method, factor, length) cell of the experiment for one seed, in a fixed order.

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
                "factor": rope_spec(method, multiple, train_length).factor,
                "length": multiple * train_length,
            }
            for method in methods
        ]
    tuned = train_config.finetune_multiple
    for multiple in eval_config.multiples:
        for method in FINETUNE_METHODS:
            factors = sorted(
                {rope_spec(method, s, train_length).factor for s in (tuned, multiple)}
            )
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


def evaluate_all(
    directory: Path,
    eval_config: EvalConfig = EvalConfig(),
    *,
    chunks: range | list[int] | None = None,
    cells: list[dict] | None = None,
    log=print,
) -> dict:
    """Evaluate the checkpoints of one seed in ``directory`` on every cell of :func:`evaluation_plan`.

    ``chunks``: which chunks (default all ``num_chunks``); ``cells``: a subset of the plan.
    Returns the results dictionary that ``evaluate`` writes (see :func:`write_results`).
    """
    directory = Path(directory)
    train_config = TrainConfig.from_dict(read_train_log(directory)["config"])
    chunks = list(range(eval_config.num_chunks) if chunks is None else chunks)
    models: dict[str, TinyRopeTransformer] = {}
    results = []
    start = time.perf_counter()
    for cell in evaluation_plan(train_config, eval_config) if cells is None else cells:
        if cell["model"] not in models:
            models[cell["model"]] = load_checkpoint(
                checkpoint_path(directory, cell["model"])
            )
        counts = run_cell(
            models[cell["model"]], cell, train_config, eval_config, chunks
        )
        results.append({**cell, "chunks": counts})
        summary = summarize_cell(
            results[-1],
            train_config,
            _distances(train_config, eval_config, cell["length"], chunks),
        )
        log(
            f"seed {train_config.seed} {cell['model']:16s} {cell['method']:12s} s={cell['factor']:g} {cell['length']:5d}: "
            f"accuracy {summary['accuracy']:.4f}  beyond L {summary['accuracy_beyond']:.4f}  ({time.perf_counter() - start:.0f} s)"
        )
    return {
        "train_config": train_config.to_dict(),
        "eval_config": eval_config.to_dict(),
        "chunks": chunks,
        "torch_version": torch.__version__,
        "threads": torch.get_num_threads(),
        "cells": results,
    }


def _distances(
    train_config: TrainConfig, eval_config: EvalConfig, length: int, chunks: list[int]
) -> np.ndarray:
    return np.concatenate(
        [
            eval_batch(train_config.task, eval_config, length, c).distances.reshape(-1)
            for c in chunks
        ]
    )


def configs_of(results: dict) -> tuple[TrainConfig, EvalConfig]:
    """The training and evaluation configurations a results dictionary was made with."""
    eval_config = results["eval_config"]
    return TrainConfig.from_dict(results["train_config"]), EvalConfig(
        **{**eval_config, "multiples": tuple(eval_config["multiples"])}
    )


def cell_distances(results: dict, length: int) -> np.ndarray:
    """Distances (tokens) of every answer of a results cell at ``length``, in the order of ``correct``."""
    return _distances(*configs_of(results), length, results["chunks"])


def trained_distances(config: TrainConfig) -> tuple[int, int]:
    """The smallest and largest needle distance training at L can produce ("within L")."""
    return config.task.distance_range(config.train_length)


def cell_correct(cell: dict) -> np.ndarray:
    """Booleans, one per answer of ``cell``, in (chunk, sequence, query) order."""
    return np.array([c == "1" for chunk in cell["chunks"] for c in chunk["correct"]])


def summarize_cell(cell: dict, config: TrainConfig, distances: np.ndarray) -> dict:
    """Accuracy over all needles, beyond the distances training produced and within them,
    mean loss, and mean entropy per layer (NaN where not recorded)."""
    correct = cell_correct(cell)
    if correct.shape != distances.shape:
        raise ValueError(
            f"distances must have one entry per answer ({correct.size}), got {distances.shape}"
        )
    beyond = distances > trained_distances(config)[1]
    count = correct.size
    recorded = [chunk for chunk in cell["chunks"] if "entropy_sum" in chunk]
    entropy_count = sum(chunk["entropy_count"] for chunk in recorded)
    return {
        "seed": config.seed,
        "model": cell["model"],
        "method": cell["method"],
        "factor": cell["factor"],
        "length": cell["length"],
        "answers": int(count),
        "accuracy": float(correct.mean()),
        "answers_beyond": int(beyond.sum()),
        "accuracy_beyond": float(correct[beyond].mean())
        if beyond.any()
        else float("nan"),
        "accuracy_within": float(correct[~beyond].mean()),
        "loss": sum(chunk["loss_sum"] for chunk in cell["chunks"]) / count,
        **{
            f"entropy_layer{layer}": (
                sum(chunk["entropy_sum"][layer] for chunk in recorded) / entropy_count
                if recorded
                else float("nan")
            )
            for layer in range(config.model.num_layers)
        },
    }


def summary_table(results: dict) -> list[dict]:
    """One :func:`summarize_cell` row per cell of ``results`` (one seed)."""
    config = configs_of(results)[0]
    distances = {
        length: cell_distances(results, length)
        for length in {cell["length"] for cell in results["cells"]}
    }
    return [
        summarize_cell(cell, config, distances[cell["length"]])
        for cell in results["cells"]
    ]


def accuracy_by_distance(
    results: dict, cell: dict, bin_width: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(bin starts, answers per bin, accuracy per bin) of one cell, bins [k w, (k+1) w) in distance."""
    distances = cell_distances(results, cell["length"])
    correct = cell_correct(cell).astype(float)
    bins = distances // bin_width
    num_bins = cell["length"] // bin_width
    counts = np.bincount(bins, minlength=num_bins)[:num_bins]
    hits = np.bincount(bins, weights=correct, minlength=num_bins)[:num_bins]
    with np.errstate(invalid="ignore", divide="ignore"):
        return (
            np.arange(num_bins) * bin_width,
            counts,
            np.where(counts > 0, hits / np.maximum(counts, 1), np.nan),
        )


def find_cell(
    results: dict, model: str, method: str, length: int, factor: float | None = None
) -> dict:
    """The cell of ``results`` for (model, method, length) and, where a model was run with two
    factors, ``factor``; KeyError if it was not evaluated or is ambiguous."""
    found = [
        cell
        for cell in results["cells"]
        if (cell["model"], cell["method"], cell["length"]) == (model, method, length)
        and (factor is None or cell["factor"] == float(factor))
    ]
    if len(found) != 1:
        raise KeyError(
            f"{len(found)} cells for model={model!r}, method={method!r}, length={length}, factor={factor}"
        )
    return found[0]


def write_results(directory: Path, results: dict) -> None:
    """``results.json`` (raw per-chunk counts) of one seed in ``directory``."""
    (Path(directory) / RESULTS_FILE).write_text(
        json.dumps(results, indent=None, separators=(",", ":")) + "\n", encoding="utf-8"
    )


def read_results(directory: Path) -> dict:
    return json.loads((Path(directory) / RESULTS_FILE).read_text(encoding="utf-8"))


def baseline_accuracy(results: dict, length: int) -> dict[str, dict[str, float]]:
    """Every strategy of :mod:`posenc.experiments.baselines` on the evaluation sequences of
    ``results`` at ``length``: ``{strategy: {"all": accuracy, "beyond": on needles beyond the
    trained distances}}`` (expected accuracies, averaged over the answers)."""
    train_config, eval_config = configs_of(results)
    batches = [
        eval_batch(train_config.task, eval_config, length, chunk)
        for chunk in results["chunks"]
    ]
    beyond = (
        np.concatenate([batch.distances.reshape(-1) for batch in batches])
        > trained_distances(train_config)[1]
    )
    table = {}
    for name, strategy in baselines.STRATEGIES.items():
        scores = np.concatenate(
            [strategy(batch, train_config.task).reshape(-1) for batch in batches]
        )
        table[name] = {
            "all": float(scores.mean()),
            "beyond": float(scores[beyond].mean()) if beyond.any() else float("nan"),
        }
    return table


# ------------------------------------------------------------------ checking stored results on any processor

#: How far a fresh evaluation moves on another processor. torch picks its CPU kernels per
#: processor (``ATEN_CPU_CAPABILITY``) and splits sums differently with more threads.
#: ``scripts/measure_context_extension_drift.py`` evaluated :data:`RECHECK_CELLS` on chunk 0
#: of every stored seed with each kernel family of an AVX-512 machine (default, avx2,
#: avx512) and 1 and 2 threads; these are the largest changes it saw: relative, of a chunk's
#: summed loss and summed entropy; absolute, of any logit.
MEASURED_DRIFT = {"loss": 1.2e-5, "entropy": 1.2e-7, "logit": 3.5e-5}
#: Ten times the measured drift, for processors we could not try (arm64 among them).
LOSS_RTOL = 10 * MEASURED_DRIFT["loss"]
ENTROPY_RTOL = 10 * MEASURED_DRIFT["entropy"]
#: An answer whose two best logits are closer than this may flip on another processor, so
#: it is not required to agree: twice the tolerated logit drift (each side may move).
TIE_MARGIN = 2 * 10 * MEASURED_DRIFT["logit"]


def relative_change(new: object, old: object) -> float:
    """The largest |new / old - 1| over the entries of two sums (numbers or lists)."""
    return float(np.max(np.abs(np.asarray(new, dtype=float) / np.asarray(old) - 1)))


#: The cells chapter 6 evaluates afresh for every seed (and the drift script measures).
RECHECK_CELLS = (
    {"model": "base", "method": "none", "factor": 1.0, "length": 128},
    {"model": "base", "method": "dynamic", "factor": 1.0, "length": 512},
    {"model": "base", "method": "yarn", "factor": 8.0, "length": 1024},
    {"model": "finetune_yarn", "method": "yarn", "factor": 8.0, "length": 1024},
)


def recheck(
    directory: Path, results: dict, cells: list[dict], chunks: list[int]
) -> list[dict]:
    """Evaluate ``cells`` of one seed afresh on ``chunks`` and compare with the stored ``results``.

    Per cell: answers compared, near ties (fresh top-2 logit gap below :data:`TIE_MARGIN`),
    answers that disagree outside near ties, and the largest relative change of the summed
    loss and entropy, to be held against :data:`LOSS_RTOL` and :data:`ENTROPY_RTOL`.
    """
    train_config, eval_config = configs_of(results)
    models = {
        name: load_checkpoint(checkpoint_path(directory, name))
        for name in {cell["model"] for cell in cells}
    }
    report = []
    for cell in cells:
        stored = find_cell(
            results, cell["model"], cell["method"], cell["length"], cell["factor"]
        )
        fresh = run_cell(
            models[cell["model"]],
            cell,
            train_config,
            eval_config,
            chunks,
            keep_margins=True,
        )
        by_chunk = {chunk["chunk"]: chunk for chunk in stored["chunks"]}
        answers = ties = disagree = 0
        loss_change = entropy_change = 0.0
        for new in fresh:
            old = by_chunk[new["chunk"]]
            tie = new["margins"] < TIE_MARGIN
            differ = np.array([a != b for a, b in zip(old["correct"], new["correct"])])
            answers, ties, disagree = (
                answers + differ.size,
                ties + int(tie.sum()),
                disagree + int((differ & ~tie).sum()),
            )
            loss_change = max(
                loss_change, relative_change(new["loss_sum"], old["loss_sum"])
            )
            if "entropy_sum" in old:
                entropy_change = max(
                    entropy_change,
                    relative_change(new["entropy_sum"], old["entropy_sum"]),
                )
        report.append(
            {
                **cell,
                "answers": answers,
                "near_ties": ties,
                "disagree": disagree,
                "loss_change": loss_change,
                "entropy_change": entropy_change,
            }
        )
    return report


# ------------------------------------------------------------------ several seeds


def seed_dir(root: Path, seed: int) -> Path:
    """Where ``train`` keeps seed ``seed``: ``root/seed_<seed>``."""
    return Path(root) / f"seed_{seed}"


def seeds_in(root: Path) -> list[int]:
    """The seeds that have a training log under ``root``, in increasing order."""
    return sorted(
        int(path.parent.name.removeprefix("seed_"))
        for path in Path(root).glob(f"seed_*/{TRAIN_LOG_FILE}")
    )


def train_seeds(
    root: Path, seeds: list[int], config: TrainConfig = TrainConfig(), log=print
) -> list[dict]:
    """:func:`train_all` once per seed, each into :func:`seed_dir` (same settings, other seed)."""
    return [
        train_all(seed_dir(root, seed), replace(config, seed=seed), log)
        for seed in seeds
    ]


def read_all_results(root: Path) -> dict[int, dict]:
    """``{seed: results}`` for every evaluated seed under ``root``."""
    return {
        seed: read_results(seed_dir(root, seed))
        for seed in seeds_in(root)
        if (seed_dir(root, seed) / RESULTS_FILE).is_file()
    }


def write_summary(root: Path, results_by_seed: dict[int, dict]) -> None:
    """``results.csv`` under ``root``: one :func:`summarize_cell` row per seed and cell."""
    rows = [
        row
        for seed in sorted(results_by_seed)
        for row in summary_table(results_by_seed[seed])
    ]
    with open(Path(root) / SUMMARY_FILE, "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        for row in rows:
            writer.writerow(
                {
                    key: f"{value:.6f}" if isinstance(value, float) else value
                    for key, value in row.items()
                }
            )


def across_seeds(
    results_by_seed: dict[int, dict], column: str = "accuracy"
) -> dict[tuple, np.ndarray]:
    """``{(model, method, factor, length): values}``: one :func:`summarize_cell` ``column`` per
    seed, in increasing seed order, for every cell that every seed evaluated."""
    seeds = sorted(results_by_seed)
    tables = [
        {
            (r["model"], r["method"], r["factor"], r["length"]): r[column]
            for r in summary_table(results_by_seed[seed])
        }
        for seed in seeds
    ]
    common = [key for key in tables[0] if all(key in table for table in tables)]
    return {key: np.array([table[key] for table in tables]) for key in common}


def spread_table(
    rows: dict[str, list[np.ndarray]], columns: list[str], label_width: int = 16
) -> str:
    """A text table of per-seed values: for each row its mean per column, and under it the
    lowest and highest seed in brackets. ``rows``: label -> one array of seed values per column."""
    lines = [" " * label_width + "".join(f"{name:>12s}" for name in columns)]
    for label, values in rows.items():
        if len(values) != len(columns):
            raise ValueError(
                f"rows[{label!r}] must have one entry per column ({len(columns)}), got {len(values)}"
            )
        lines.append(
            f"{label:{label_width}s}" + "".join(f"{np.mean(v):12.2f}" for v in values)
        )
        lines.append(
            " " * label_width
            + "".join(f"{f'[{np.min(v):.2f}-{np.max(v):.2f}]':>12s}" for v in values)
        )
    return "\n".join(lines)


#: The rule every comparative claim of chapter 6 must pass: "A beats B" when A is ahead in
#: all seeds but at most this many (4 of 5 with five seeds).
ALLOWED_EXCEPTIONS = 1


def beats(first: np.ndarray, second: np.ndarray) -> bool:
    """Whether ``first`` is above ``second`` in all seeds but :data:`ALLOWED_EXCEPTIONS`.

    ``first`` and ``second``: one value per seed, same seed order (each seed's two numbers
    come from the same weights and the same evaluation sequences). Needs at least five seeds.
    """
    first, second = np.asarray(first, dtype=float), np.asarray(second, dtype=float)
    if first.shape != second.shape or first.ndim != 1:
        raise ValueError(
            f"first and second must be 1-d arrays of the same length, got {first.shape} and {second.shape}"
        )
    if first.size < 5:
        raise ValueError(f"first and second need at least 5 seeds, got {first.size}")
    return int(np.sum(first > second)) >= first.size - ALLOWED_EXCEPTIONS


# ------------------------------------------------------------------ comparing two runs


def compare_runs(first: Path, second: Path) -> dict:
    """What differs between two ``train`` runs of the same seeds, seed by seed: steps, seconds,
    weight digests, largest weight gap, and, if both were evaluated, how many answers differ."""
    seeds = sorted(set(seeds_in(first)) & set(seeds_in(second)))
    if not seeds:
        raise ValueError(
            f"first and second share no trained seed ({seeds_in(first)} against {seeds_in(second)})"
        )
    return {
        f"seed_{seed}": _compare_seed(seed_dir(first, seed), seed_dir(second, seed))
        for seed in seeds
    }


def _compare_seed(first: Path, second: Path) -> dict:
    logs = [read_train_log(first), read_train_log(second)]
    report = {
        "base_steps": [log["base"]["steps"] for log in logs],
        "total_seconds": [log["total_seconds"] for log in logs],
        "same_base_digest": logs[0]["base"]["digest"] == logs[1]["base"]["digest"],
        "finetune_digests_equal": {
            m: logs[0]["finetune"][m]["digest"] == logs[1]["finetune"][m]["digest"]
            for m in FINETUNE_METHODS
        },
        "largest_weight_difference": {},
    }
    for name in ["base", *(f"finetune_{m}" for m in FINETUNE_METHODS)]:
        paths = [checkpoint_path(d, name) for d in (first, second)]
        if all(path.is_file() for path in paths):
            a, b = (load_checkpoint(path).state_dict() for path in paths)
            report["largest_weight_difference"][name] = max(
                float((a[key] - b[key]).abs().max()) for key in a
            )
    if all((Path(d) / RESULTS_FILE).is_file() for d in (first, second)):
        results = [read_results(first), read_results(second)]
        pairs = list(zip(results[0]["cells"], results[1]["cells"]))
        if len(pairs) != len(results[1]["cells"]) or any(
            (x["model"], x["method"], x["factor"], x["length"])
            != (y["model"], y["method"], y["factor"], y["length"])
            for x, y in pairs
        ):
            raise ValueError("the two results files evaluate different cells")
        report["answers_compared"] = sum(
            len(c["correct"]) for x, _ in pairs for c in x["chunks"]
        )
        report["answers_that_differ"] = sum(
            sum(u != v for u, v in zip(cx["correct"], cy["correct"]))
            for x, y in pairs
            for cx, cy in zip(x["chunks"], y["chunks"])
        )
    return report


# ------------------------------------------------------------------ command line


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m posenc.experiments.context_extension",
        description="Train tiny RoPE models at length L (one per seed), then evaluate every RoPE scaling method at 1x-8x L.",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    for name, help_text in (
        (
            "train",
            f"train the base models and their fine-tunes, one per seed ({TRAIN_TIME_NOTE})",
        ),
        (
            "evaluate",
            f"evaluate every trained seed; write seed_*/results.json and results.csv ({EVAL_TIME_NOTE})",
        ),
        ("all", "train, then evaluate"),
    ):
        command = commands.add_parser(name, help=help_text, description=help_text)
        command.add_argument(
            "--dir",
            type=Path,
            default=DEFAULT_DIR,
            help=f"checkpoints and results (default {DEFAULT_DIR})",
        )
        command.add_argument(
            "--seeds",
            type=int,
            nargs="+",
            default=list(DEFAULT_SEEDS),
            help=f"seeds to train or evaluate (default {' '.join(map(str, DEFAULT_SEEDS))}, the book's runs)",
        )
        if name in ("train", "all"):
            command.add_argument(
                "--threads",
                type=int,
                default=2,
                help="torch threads for training (default 2)",
            )
        if name in ("evaluate", "all"):
            command.add_argument(
                "--chunks",
                type=int,
                default=EvalConfig.num_chunks,
                help=f"chunks of {EvalConfig.chunk_size} sequences per cell (default {EvalConfig.num_chunks})",
            )
            command.add_argument(
                "--eval-threads",
                type=int,
                default=1,
                help="torch threads for evaluation (default 1, as the book's notebook uses)",
            )
    compare = commands.add_parser(
        "compare",
        help="compare two training runs, seed by seed (bit-identical on one machine)",
    )
    compare.add_argument("first", type=Path)
    compare.add_argument("second", type=Path)
    compare.add_argument(
        "--out",
        type=Path,
        default=None,
        help="also write the comparison to this JSON file",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "compare":
        report = json.dumps(compare_runs(args.first, args.second), indent=1)
        print(report)
        if args.out is not None:
            args.out.write_text(report + "\n", encoding="utf-8")
        return 0
    if args.command in ("train", "all"):
        torch.set_num_threads(args.threads)
        start = time.perf_counter()
        logs = train_seeds(args.dir, args.seeds)
        steps = ", ".join(
            f"seed {log['config']['seed']}: {log['base']['steps']}" for log in logs
        )
        print(
            f"trained {len(logs)} seeds in {time.perf_counter() - start:.0f} s (base steps {steps}); wrote {args.dir}"
        )
    if args.command in ("evaluate", "all"):
        torch.set_num_threads(args.eval_threads)
        start = time.perf_counter()
        for seed in args.seeds:
            write_results(
                seed_dir(args.dir, seed),
                evaluate_all(
                    seed_dir(args.dir, seed), EvalConfig(num_chunks=args.chunks)
                ),
            )
        write_summary(args.dir, read_all_results(args.dir))
        print(
            f"evaluated in {time.perf_counter() - start:.0f} s; wrote {RESULTS_FILE} per seed and {args.dir / SUMMARY_FILE}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
