"""Context extension, measured: train a tiny RoPE model at length L, then stretch it. Imports torch.

The experiment behind the book's page on context extension, and its command line::

    python -m posenc.experiments.context_extension train     # base model, then three fine-tunes
    python -m posenc.experiments.context_extension evaluate  # every method at 1x..8x L -> results
    python -m posenc.experiments.context_extension all       # both
    python -m posenc.experiments.context_extension compare A B   # two training runs side by side

1. **Train** :class:`~posenc.experiments.tiny_model.TinyRopeTransformer` on the passkey task
   (:mod:`posenc.experiments.passkey`) at ``L = train_length`` tokens with plain RoPE, and
   stop once accuracy on a fixed validation set reaches ``target_accuracy``.
2. **Extend without training**: evaluate the same weights at 1x, 2x, 4x and 8x L with each
   method of :func:`posenc.rope_scaling`. Static methods get ``factor = s = length / L``;
   ``"dynamic"`` gets the same factor and ``seq_len = length`` (transformers' dynamic NTK in
   one forward pass over the whole sequence, scale s*s - s + 1).
3. **Fine-tune** copies of the base model at 4x L for the same number of steps with
   ``"none"``, ``"linear"`` and ``"yarn"`` (s = 4), on identical batches.
4. **Entropy** of the attention rows that must find the needle, from the same forward passes.

Evaluation data are drawn chunk by chunk from ``np.random.default_rng([eval_seed, length,
chunk])``: every method sees the same sequences, and a prefix of the chunks reproduces the
same numbers as the full run. Results keep per-chunk raw counts, so any slice can be checked.
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
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from posenc.attention import attention_entropy, softmax
from posenc.experiments.passkey import PasskeyBatch, PasskeyTask
from posenc.experiments.tiny_model import ModelConfig, RopeSpec, TinyRopeTransformer

#: The methods evaluated without further training, in table order.
METHODS = ("none", "linear", "ntk", "dynamic", "ntk_by_parts", "yarn")
#: The methods fine-tuned at ``finetune_multiple`` x L (``"none"`` is the control).
FINETUNE_METHODS = ("none", "linear", "yarn")
#: Evaluation lengths as multiples of the training length.
MULTIPLES = (1, 2, 4, 8)
DEFAULT_DIR = Path("book/data/context_extension")
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
            raise ValueError(f"model.vocab_size ({self.model.vocab_size}) must equal task.vocab_size ({self.task.vocab_size})")

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
    0.1 ln s + 1). ``"none"`` ignores ``factor`` (plain RoPE). ``"dynamic"`` receives
    ``seq_len`` = the length of each sequence from the model's forward pass. Without
    training the experiment uses s = length / L; a fine-tuned model keeps the s it was tuned with.
    """
    return RopeSpec(method=method, factor=1.0 if method == "none" else float(factor), original_max_position=train_length)


def eval_batch(task: PasskeyTask, eval_config: EvalConfig, length: int, chunk: int) -> PasskeyBatch:
    """Chunk ``chunk`` of the evaluation sequences of ``length`` tokens (same for every method)."""
    rng = np.random.default_rng([eval_config.eval_seed, length, chunk])
    return task.sample(rng, eval_config.chunk_size, length)


def answer_logits(model: TinyRopeTransformer, batch: PasskeyBatch, rope: RopeSpec, capture: list | None = None) -> torch.Tensor:
    """Logits (B, K, vocab) at the query markers of ``batch``, where the values must be predicted."""
    tokens = torch.from_numpy(batch.tokens)
    return model(tokens, rope, rows=batch.answer_positions, capture=capture)


def answer_loss(logits: torch.Tensor, batch: PasskeyBatch, reduction: str = "mean") -> torch.Tensor:
    """Cross-entropy (nats) of the expected values under ``logits`` (B, K, vocab)."""
    targets = torch.from_numpy(batch.targets)
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1), reduction=reduction)


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
        if q.shape[-2] != len(rows):  # a layer that computed every row: keep the answer rows
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


def _accuracy_and_loss(model: TinyRopeTransformer, batch: PasskeyBatch, rope: RopeSpec, chunk: int = 64) -> tuple[float, float]:
    correct, loss_sum, count = 0, 0.0, 0
    with torch.inference_mode():
        for start in range(0, batch.tokens.shape[0], chunk):
            part = PasskeyBatch(*(array[start : start + chunk] if array.ndim == 2 else array for array in (
                batch.tokens, batch.answer_positions, batch.targets, batch.needle_positions, batch.distances)))
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
    return torch.optim.AdamW(model.parameters(), lr=0.0, betas=(0.9, 0.98), weight_decay=config.weight_decay)


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
    val = config.task.sample(np.random.default_rng([config.seed, 2]), config.val_sequences, config.train_length)
    rope = RopeSpec(original_max_position=config.train_length)
    curve, reached, start, cpu_start = [], False, time.perf_counter(), time.process_time()
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
            curve.append({"step": step, "train_loss": loss.item(), "val_accuracy": accuracy, "val_loss": val_loss})
            log(f"step {step:5d}  train loss {loss.item():.4f}  val accuracy {accuracy:.4f}  "
                f"({time.perf_counter() - start:.0f} s)")
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


def finetune(base: TinyRopeTransformer, method: str, config: TrainConfig, log=print) -> tuple[TinyRopeTransformer, dict]:
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
    val = config.task.sample(np.random.default_rng([config.seed, 4]), config.finetune_val_sequences, length)
    accuracy, val_loss = _accuracy_and_loss(model, val, rope)
    curve = [{"step": 0, "val_accuracy": accuracy, "val_loss": val_loss}]
    start, cpu_start = time.perf_counter(), time.process_time()
    for step in range(1, config.finetune_steps + 1):
        _set_lr(optimizer, config.finetune_learning_rate * min(1.0, step / config.finetune_warmup_steps))
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


def save_checkpoint(model: TinyRopeTransformer, path: Path, extra: dict | None = None) -> None:
    """float32 weights and the model config; a few hundred kB for the default model."""
    torch.save({"config": model.config.to_dict(), "state_dict": model.state_dict(), "extra": extra or {}}, path)


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
        save_checkpoint(model, checkpoint_path(directory, f"finetune_{method}"), {"method": method})
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
    (directory / TRAIN_LOG_FILE).write_text(json.dumps(log_data, indent=1) + "\n", encoding="utf-8")
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
) -> list[dict]:
    """Raw counts per chunk: which answers were right (a '0'/'1' string, in (sequence, query)
    order), the summed loss (nats) and the summed attention entropy per layer (nats)."""
    out = []
    with torch.inference_mode():
        for chunk in chunks:
            batch = eval_batch(task, eval_config, length, chunk)
            capture: list = []
            logits = answer_logits(model, batch, rope, capture)
            correct = (logits.argmax(-1).numpy() == batch.targets).reshape(-1)
            entropy = answer_entropy(capture, batch)  # (layers, B, heads, K)
            out.append({
                "chunk": chunk,
                "correct": "".join("1" if c else "0" for c in correct),
                "loss_sum": float(answer_loss(logits, batch, "sum")),
                "entropy_sum": [float(layer.sum()) for layer in entropy],
                "entropy_count": int(entropy[0].size),
            })
    return out


def evaluation_plan(train_config: TrainConfig, eval_config: EvalConfig) -> list[dict]:
    """Every (model, method, length) cell of the experiment, in a fixed order.

    The base model at 1x L once (every method equals plain RoPE at s = 1), at the other
    multiples with every method and s = multiple; each fine-tuned model with its method and
    the s it was tuned with, at 1x, its fine-tune length and 8x (if those are in ``multiples``).
    """
    train_length = train_config.train_length
    plan = []
    for multiple in eval_config.multiples:
        methods = ("none",) if multiple == 1 else METHODS
        plan += [{"model": "base", "method": method, "factor": 1.0 if method == "none" else float(multiple),
                  "length": multiple * train_length} for method in methods]
    tuned = train_config.finetune_multiple
    for multiple in (m for m in eval_config.multiples if m in (1, tuned, max(eval_config.multiples))):
        plan += [{"model": f"finetune_{method}", "method": method, "factor": 1.0 if method == "none" else float(tuned),
                  "length": multiple * train_length} for method in FINETUNE_METHODS]
    return plan


def evaluate_all(
    directory: Path,
    eval_config: EvalConfig = EvalConfig(),
    *,
    chunks: range | list[int] | None = None,
    cells: list[dict] | None = None,
    log=print,
) -> dict:
    """Evaluate the checkpoints in ``directory`` on every cell of :func:`evaluation_plan`.

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
            models[cell["model"]] = load_checkpoint(checkpoint_path(directory, cell["model"]))
        rope = rope_spec(cell["method"], cell["factor"], train_config.train_length)
        counts = evaluate_cell(models[cell["model"]], rope, train_config.task, eval_config, cell["length"], chunks)
        results.append({**cell, "chunks": counts})
        summary = summarize_cell(results[-1], train_config.train_length, _distances(train_config, eval_config, cell["length"], chunks))
        log(f"{cell['model']:16s} {cell['method']:12s} {cell['length']:5d}: accuracy {summary['accuracy']:.4f}  "
            f"beyond L {summary['accuracy_beyond']:.4f}  ({time.perf_counter() - start:.0f} s)")
    return {
        "train_config": train_config.to_dict(),
        "eval_config": eval_config.to_dict(),
        "chunks": chunks,
        "torch_version": torch.__version__,
        "threads": torch.get_num_threads(),
        "cells": results,
    }


def _distances(train_config: TrainConfig, eval_config: EvalConfig, length: int, chunks: list[int]) -> np.ndarray:
    return np.concatenate([eval_batch(train_config.task, eval_config, length, c).distances.reshape(-1) for c in chunks])


def cell_distances(results: dict, length: int) -> np.ndarray:
    """Distances (tokens) of every answer of a results cell at ``length``, in the order of ``correct``."""
    return _distances(TrainConfig.from_dict(results["train_config"]), EvalConfig(**{
        **results["eval_config"], "multiples": tuple(results["eval_config"]["multiples"])}), length, results["chunks"])


def summarize_cell(cell: dict, train_length: int, distances: np.ndarray) -> dict:
    """Accuracy, accuracy on needles at distance >= L (and < L), mean loss and entropy per layer."""
    correct = np.array([c == "1" for chunk in cell["chunks"] for c in chunk["correct"]])
    if correct.shape != distances.shape:
        raise ValueError(f"distances must have one entry per answer ({correct.size}), got {distances.shape}")
    beyond = distances >= train_length
    count = correct.size
    entropy_count = sum(chunk["entropy_count"] for chunk in cell["chunks"])
    layers = len(cell["chunks"][0]["entropy_sum"])
    return {
        "model": cell["model"],
        "method": cell["method"],
        "length": cell["length"],
        "factor": cell["factor"],
        "answers": int(count),
        "accuracy": float(correct.mean()),
        "answers_beyond": int(beyond.sum()),
        "accuracy_beyond": float(correct[beyond].mean()) if beyond.any() else float("nan"),
        "accuracy_within": float(correct[~beyond].mean()),
        "loss": sum(chunk["loss_sum"] for chunk in cell["chunks"]) / count,
        **{f"entropy_layer{layer}": sum(chunk["entropy_sum"][layer] for chunk in cell["chunks"]) / entropy_count
           for layer in range(layers)},
    }


def summary_table(results: dict) -> list[dict]:
    """One :func:`summarize_cell` row per cell of ``results``."""
    train_length = results["train_config"]["train_length"]
    distances = {length: cell_distances(results, length) for length in {cell["length"] for cell in results["cells"]}}
    return [summarize_cell(cell, train_length, distances[cell["length"]]) for cell in results["cells"]]


def accuracy_by_distance(results: dict, cell: dict, bin_width: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(bin starts, answers per bin, accuracy per bin) of one cell, bins [k w, (k+1) w) in distance."""
    distances = cell_distances(results, cell["length"])
    correct = np.array([c == "1" for chunk in cell["chunks"] for c in chunk["correct"]], dtype=float)
    bins = distances // bin_width
    num_bins = cell["length"] // bin_width
    counts = np.bincount(bins, minlength=num_bins)[:num_bins]
    hits = np.bincount(bins, weights=correct, minlength=num_bins)[:num_bins]
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.arange(num_bins) * bin_width, counts, np.where(counts > 0, hits / np.maximum(counts, 1), np.nan)


def find_cell(results: dict, model: str, method: str, length: int) -> dict:
    """The cell of ``results`` for (model, method, length); KeyError if it was not evaluated."""
    for cell in results["cells"]:
        if (cell["model"], cell["method"], cell["length"]) == (model, method, length):
            return cell
    raise KeyError(f"no cell for model={model!r}, method={method!r}, length={length}")


def write_results(directory: Path, results: dict) -> None:
    """``results.json`` (raw per-chunk counts) and ``results.csv`` (the summary table)."""
    directory = Path(directory)
    (directory / RESULTS_FILE).write_text(json.dumps(results, indent=None, separators=(",", ":")) + "\n", encoding="utf-8")
    rows = summary_table(results)
    with open(directory / SUMMARY_FILE, "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        for row in rows:
            writer.writerow({key: f"{value:.6f}" if isinstance(value, float) else value for key, value in row.items()})


def read_results(directory: Path) -> dict:
    return json.loads((Path(directory) / RESULTS_FILE).read_text(encoding="utf-8"))


# ------------------------------------------------------------------ comparing two runs


def compare_runs(first: Path, second: Path) -> dict:
    """What differs between two ``train`` runs: steps, seconds, weight digests, largest weight gap,
    and, if both directories were evaluated, how many answers and how much accuracy differ."""
    logs = [read_train_log(first), read_train_log(second)]
    report = {
        "base_steps": [log["base"]["steps"] for log in logs],
        "base_seconds": [log["base"]["seconds"] for log in logs],
        "total_seconds": [log["total_seconds"] for log in logs],
        "total_cpu_seconds": [log["total_cpu_seconds"] for log in logs],
        "finetune_digests_equal": {m: logs[0]["finetune"][m]["digest"] == logs[1]["finetune"][m]["digest"]
                                   for m in FINETUNE_METHODS},
        "same_base_digest": logs[0]["base"]["digest"] == logs[1]["base"]["digest"],
        "models": {},
    }
    for name in ["base", *(f"finetune_{m}" for m in FINETUNE_METHODS)]:
        a, b = (load_checkpoint(checkpoint_path(d, name)).state_dict() for d in (first, second))
        report["models"][name] = max(float((a[key] - b[key]).abs().max()) for key in a)
    if all((Path(d) / RESULTS_FILE).is_file() for d in (first, second)):
        results = [read_results(first), read_results(second)]
        pairs = list(zip(results[0]["cells"], results[1]["cells"]))
        if len(pairs) != len(results[1]["cells"]) or any(
            (x["model"], x["method"], x["length"]) != (y["model"], y["method"], y["length"]) for x, y in pairs
        ):
            raise ValueError("the two results files evaluate different cells")
        report["answers_compared"] = sum(len(c["correct"]) for x, _ in pairs for c in x["chunks"])
        report["answers_that_differ"] = sum(
            sum(u != v for u, v in zip(cx["correct"], cy["correct"])) for x, y in pairs for cx, cy in zip(x["chunks"], y["chunks"])
        )
        report["largest_accuracy_difference"] = max(
            abs(r0["accuracy"] - r1["accuracy"]) for r0, r1 in zip(summary_table(results[0]), summary_table(results[1]))
        )
    return report


# ------------------------------------------------------------------ command line


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m posenc.experiments.context_extension",
        description="Train a tiny RoPE model at length L, then evaluate every RoPE scaling method at 1x-8x L.",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    for name, help_text in (("train", "train the base model and the fine-tunes (8 to 18 minutes measured on a shared 2-core machine)"),
                            ("evaluate", "evaluate the checkpoints; write results.json and results.csv"),
                            ("all", "train, then evaluate")):
        command = commands.add_parser(name, help=help_text)
        command.add_argument("--dir", type=Path, default=DEFAULT_DIR, help=f"checkpoints and results (default {DEFAULT_DIR})")
        if name in ("train", "all"):
            command.add_argument("--seed", type=int, default=TrainConfig.seed)
            command.add_argument("--threads", type=int, default=2, help="torch threads for training (default 2)")
        if name in ("evaluate", "all"):
            command.add_argument("--chunks", type=int, default=EvalConfig.num_chunks,
                                 help=f"chunks of {EvalConfig.chunk_size} sequences per cell (default {EvalConfig.num_chunks})")
            command.add_argument("--eval-threads", type=int, default=1,
                                 help="torch threads for evaluation (default 1, as the book's notebook uses)")
    compare = commands.add_parser("compare", help="compare two training runs")
    compare.add_argument("first", type=Path)
    compare.add_argument("second", type=Path)
    compare.add_argument("--out", type=Path, default=None, help="also write the comparison to this JSON file")
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
        log = train_all(args.dir, TrainConfig(seed=args.seed))
        print(f"trained in {log['total_seconds']:.0f} s ({log['base']['steps']} base steps); wrote {args.dir}")
    if args.command in ("evaluate", "all"):
        torch.set_num_threads(args.eval_threads)
        start = time.perf_counter()
        results = evaluate_all(args.dir, EvalConfig(num_chunks=args.chunks))
        write_results(args.dir, results)
        print(f"evaluated in {time.perf_counter() - start:.0f} s; wrote {args.dir / RESULTS_FILE} and {SUMMARY_FILE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
