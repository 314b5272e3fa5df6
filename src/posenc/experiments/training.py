"""Training the experiment's models: the base model at L, then its fine-tunes. Imports torch.

One loop, :func:`train_phase`, runs both phases of :class:`~posenc.experiments.config.TrainConfig`:

1. :func:`train_base` trains :class:`~posenc.experiments.tiny_model.TinyRopeTransformer` from
   scratch on the passkey task at ``L = train_length`` with plain RoPE and stops once
   accuracy on a fixed validation set reaches the base phase's ``target_accuracy``;
2. :func:`finetune` continues a copy at ``finetune_multiple`` x L with one method at
   s = that multiple, every method on identical batches for the same number of steps.

The same loop trains :func:`train_language_model`, chapter 6's model predicting every next
byte of the King James Bible (issue 23; :mod:`posenc.experiments.corpus`), the task
deciding the loss (:func:`batch_loss`).

Randomness: initial weights from ``torch.manual_seed(seed)``; batches and validation sets
from ``np.random.default_rng([seed, stream])``, streams 1 and 2 for the base phase, 3 and 4
for the fine-tunes.
"""

from __future__ import annotations

import copy
import hashlib
import json
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from posenc.experiments.config import (
    FINETUNE_METHODS,
    TRAIN_LOG_FILE,
    Phase,
    TrainConfig,
    applied_factor,
    seed_dir,
)
from posenc.experiments.corpus import (
    VOCAB_SIZE,
    TextBatch,
    TextTask,
    byte_tokens,
    evaluation_windows,
)
from posenc.experiments.encodings import PositionEncoding
from posenc.experiments.language_model import (
    next_token_accuracy_and_loss,
    next_token_logits,
    next_token_loss,
)
from posenc.experiments.passkey import PasskeyBatch, PasskeyTask
from posenc.experiments.tiny_model import ModelConfig, RopeSpec, TinyRopeTransformer


def rope_spec(method: str, factor: float, train_length: int) -> RopeSpec:
    """The RoPE configuration of ``method`` stretched by ``factor`` = s for a model trained at L.

    ``original_max_position = train_length``, every other option at the defaults of
    :func:`posenc.rope_scaling` (beta_fast 32, beta_slow 1, YaRN's attention factor
    0.1 ln s + 1). ``"none"`` ignores ``factor`` (plain RoPE). ``"dynamic"`` is
    dynamic NTK, s = max(1, l' / L) for a model that has read l' tokens: in
    transformers' formula that is factor 1 with ``seq_len = l'``, so it ignores ``factor``
    too and :func:`answer_logits` hands each answer its own l'.
    """
    return RopeSpec(
        method=method,
        factor=applied_factor(method, factor),
        original_max_position=train_length,
    )


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


def accuracy_and_loss(
    model: TinyRopeTransformer, batch: PasskeyBatch, rope: RopeSpec, chunk: int = 64
) -> tuple[float, float]:
    """Share of right answers and mean loss (nats) on ``batch``, ``chunk`` sequences a pass."""
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


def batch_loss(
    model: TinyRopeTransformer, batch: PasskeyBatch | TextBatch, rope: RopeSpec
) -> torch.Tensor:
    """The training loss (nats): the answers' for a passkey batch, every next byte's for text."""
    if isinstance(batch, TextBatch):
        return next_token_loss(next_token_logits(model, batch, rope), batch)
    return answer_loss(answer_logits(model, batch, rope), batch)


def batch_scores(
    model: TinyRopeTransformer, batch: PasskeyBatch | TextBatch, rope: RopeSpec
) -> tuple[float, float]:
    """Accuracy and mean loss (nats) on a validation batch: answers, or next bytes."""
    if isinstance(batch, TextBatch):
        return next_token_accuracy_and_loss(model, batch, rope)
    return accuracy_and_loss(model, batch, rope)


def parameter_digest(model: torch.nn.Module) -> str:
    """sha256 of every parameter's float32 bytes, in state-dict order: equal digests, equal weights."""
    digest = hashlib.sha256()
    for name, tensor in model.state_dict().items():
        digest.update(name.encode())
        digest.update(tensor.detach().contiguous().numpy().tobytes())
    return digest.hexdigest()


def train_phase(
    model: TinyRopeTransformer,
    phase: Phase,
    *,
    rope: RopeSpec,
    length: int,
    task: PasskeyTask | TextTask,
    weight_decay: float,
    streams: tuple[list[int], list[int]],
    log=print,
    label: str = "",
    val: PasskeyBatch | TextBatch | None = None,
    on_check: Callable[[int], None] | None = None,
) -> dict:
    """Train ``model`` in place for one ``phase`` on sequences of ``length`` tokens.

    AdamW (betas 0.9, 0.98), gradients clipped to norm 1, batches from
    ``np.random.default_rng(streams[0])``, one validation set (``val``, or else
    ``phase.val_sequences`` drawn from the task with ``streams[1]``), checked at step 0,
    every ``eval_every`` steps and at the last step. The task decides the loss: the
    passkey answers, or every next byte of a text window (:func:`batch_loss`). Returns
    ``steps`` (the last step run), ``reached_target`` (None without a target),
    ``seconds``, ``cpu_seconds`` and the ``curve`` of checks. ``on_check(step)``, if
    given, runs at every check too.
    """
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=0.0, betas=(0.9, 0.98), weight_decay=weight_decay
    )
    rng = np.random.default_rng(streams[0])
    if val is None:
        val = task.sample(
            np.random.default_rng(streams[1]), phase.val_sequences, length
        )
    accuracy, val_loss = batch_scores(model, val, rope)
    curve = [{"step": 0, "val_accuracy": accuracy, "val_loss": val_loss}]
    if on_check is not None:
        on_check(0)
    target = phase.target_accuracy
    reached = None if target is None else False
    start, cpu_start = time.perf_counter(), time.process_time()
    step = 0
    for step in range(1, phase.steps + 1):
        for group in optimizer.param_groups:
            group["lr"] = phase.learning_rate_at(step)
        batch = task.sample(rng, phase.batch_size, length)
        loss = batch_loss(model, batch, rope)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        if step % phase.eval_every == 0 or step == phase.steps:
            accuracy, val_loss = batch_scores(model, val, rope)
            curve.append(
                {
                    "step": step,
                    "train_loss": loss.item(),
                    "val_accuracy": accuracy,
                    "val_loss": val_loss,
                }
            )
            log(
                f"{label}step {step:5d}  train loss {loss.item():.4f}  val accuracy "
                f"{accuracy:.4f}  ({time.perf_counter() - start:.0f} s)"
            )
            if on_check is not None:
                on_check(step)
            if target is not None and accuracy >= target:
                reached = True
                break
    return {
        "steps": step,
        "reached_target": reached,
        "seconds": time.perf_counter() - start,
        "cpu_seconds": time.process_time() - cpu_start,
        "curve": curve,
    }


def train_base(
    config: TrainConfig, log=print, encoding: PositionEncoding | None = None
) -> tuple[TinyRopeTransformer, dict]:
    """Train from scratch at ``train_length`` with plain RoPE (phase ``config.base``).

    ``encoding``: another position signal (default chapter 6's RoPE). Returns the
    model and its log: :func:`train_phase`'s, the parameter count and the weights'
    :func:`parameter_digest`.
    """
    torch.manual_seed(config.seed)
    model = TinyRopeTransformer(config.model, encoding)
    phase_log = train_phase(
        model,
        config.base,
        rope=RopeSpec(original_max_position=config.train_length),
        length=config.train_length,
        task=config.task,
        weight_decay=config.weight_decay,
        streams=([config.seed, 1], [config.seed, 2]),
        log=log,
    )
    return model, {
        **phase_log,
        "parameters": model.num_parameters(),
        "digest": parameter_digest(model),
    }


def train_language_model(
    model_config: ModelConfig,
    phase: Phase,
    *,
    parts: dict[str, bytes],
    length: int,
    seed: int,
    weight_decay: float = 0.01,
    log=print,
    encoding: PositionEncoding | None = None,
) -> tuple[TinyRopeTransformer, dict]:
    """A byte-level language model trained from scratch at ``length`` with plain RoPE
    (or ``encoding``'s position signal).

    ``parts``: the corpus split (:func:`posenc.experiments.corpus.load_split`). Batches
    are random windows of the train part (``np.random.default_rng([seed, 1])``); the
    validation set is ``phase.val_sequences`` windows spread over the validation part.
    Returns the model and :func:`train_phase`'s log with the parameter count and digest.
    """
    if model_config.vocab_size != VOCAB_SIZE:
        raise ValueError(
            f"model_config.vocab_size must be {VOCAB_SIZE} (bytes), "
            f"got {model_config.vocab_size}"
        )
    torch.manual_seed(seed)
    model = TinyRopeTransformer(model_config, encoding)
    phase_log = train_phase(
        model,
        phase,
        rope=RopeSpec(original_max_position=length),
        length=length,
        task=TextTask(byte_tokens(parts["train"])),
        weight_decay=weight_decay,
        streams=([seed, 1], [seed, 2]),
        log=log,
        val=evaluation_windows(
            byte_tokens(parts["validation"]), length, phase.val_sequences
        ),
    )
    return model, {
        **phase_log,
        "parameters": model.num_parameters(),
        "digest": parameter_digest(model),
    }


def finetune(
    base: TinyRopeTransformer, method: str, config: TrainConfig, log=print
) -> tuple[TinyRopeTransformer, dict]:
    """Fine-tune a copy of ``base`` at ``finetune_multiple`` x L with ``method`` (s = that
    multiple; phase ``config.finetune``). Every method gets the same steps, schedule,
    batches and validation set."""
    rope = rope_spec(method, config.finetune_multiple, config.train_length)
    model = copy.deepcopy(base)
    phase_log = train_phase(
        model,
        config.finetune,
        rope=rope,
        length=config.finetune_length,
        task=config.task,
        weight_decay=config.weight_decay,
        streams=([config.seed, 3], [config.seed, 4]),
        log=log,
        label=f"fine-tune {method:6s} ",
    )
    return model, {
        "method": method,
        "length": config.finetune_length,
        "factor": rope.factor,
        **phase_log,
        "digest": parameter_digest(model),
    }


# ------------------------------------------------------------------ checkpoints


def checkpoint_path(directory: Path, name: str) -> Path:
    """``base.pt`` or ``finetune_<method>.pt`` in ``directory``."""
    return Path(directory) / f"{name}.pt"


def save_checkpoint(
    model: TinyRopeTransformer,
    path: Path,
    extra: dict | None = None,
    dtype: torch.dtype = torch.float32,
) -> None:
    """The weights in ``dtype`` (float32: a few hundred kB for the default model) and the
    model config. :func:`load_checkpoint` reads either back in float32. A model with
    another position signal than chapter 6's RoPE also stores its ``encoding``
    (chapter 6's checkpoints hold the same keys as before)."""
    data = {
        "config": model.config.to_dict(),
        "state_dict": {k: v.to(dtype) for k, v in model.state_dict().items()},
        "extra": extra or {},
    }
    if model.encoding != PositionEncoding():
        data["encoding"] = model.encoding.to_dict()
    torch.save(data, path)


def load_checkpoint(path: Path) -> TinyRopeTransformer:
    """The model saved by :func:`save_checkpoint`, in eval mode (``weights_only`` loading)."""
    data = torch.load(Path(path), weights_only=True)
    encoding = data.get("encoding")
    model = TinyRopeTransformer(
        ModelConfig(**data["config"]),
        None if encoding is None else PositionEncoding.from_dict(encoding),
    )
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
    return write_train_log(
        directory / TRAIN_LOG_FILE,
        {"config": config.to_dict()},
        base_log,
        finetunes,
        (started, cpu_started),
    )


def run_record(head: dict, settings: list, started: float) -> dict:
    """One evaluation run as stored in ``results.json``: ``head`` (what was scored and
    its configurations), torch's version and threads, the wall seconds since ``started``
    (``time.perf_counter()`` at the start) and the scored ``settings``."""
    return {
        **head,
        "torch_version": torch.__version__,
        "threads": torch.get_num_threads(),
        "seconds": time.perf_counter() - started,
        "settings": settings,
    }


def write_train_log(
    path: Path,
    head: dict,
    base_log: dict,
    finetunes: dict,
    started: tuple[float, float],
) -> dict:
    """Write one seed's training log: ``head`` (its configuration), torch's version and
    threads, both phases' logs and the wall and CPU seconds since ``started``
    (``(time.perf_counter(), time.process_time())`` at the start)."""
    log_data = {
        **head,
        "torch_version": torch.__version__,
        "threads": torch.get_num_threads(),
        "base": base_log,
        "finetune": finetunes,
        "total_seconds": time.perf_counter() - started[0],
        "total_cpu_seconds": time.process_time() - started[1],
    }
    Path(path).write_text(json.dumps(log_data, indent=1) + "\n", encoding="utf-8")
    return log_data


def train_seeds(
    root: Path, seeds: list[int], config: TrainConfig = TrainConfig(), log=print
) -> list[dict]:
    """:func:`train_all` once per seed, each into :func:`seed_dir` (same settings, other seed)."""
    return [
        train_all(seed_dir(root, seed), replace(config, seed=seed), log)
        for seed in seeds
    ]
