""" "Other roads"' portable re-check: a sample of stored settings scored afresh. Imports torch.

The page is drawn from stored results; this scores a sample of them again from the
committed seed-0 checkpoints (:data:`~posenc.experiments.roads_config.CHECKPOINT_SEEDS`)
on whatever processor runs it, so a reader's machine confirms them. One setting per
kind of position signal, each at 16L, the longest and most drift-prone length: passkey
chunk 0 (32 sequences, 128 answers), and the first text window of each protocol.
Answers whose two best logits are within :data:`TIE_MARGIN` may flip and need not agree.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch

from posenc.experiments.config import EvalConfig, TrainConfig, eval_batch
from posenc.experiments.recheck import relative_change
from posenc.experiments.roads_config import RESULTS, checkpoint_dir, run_dir
from posenc.experiments.text_evaluation import recheck_text
from posenc.experiments.training import (
    answer_logits,
    answer_loss,
    load_checkpoint,
    rope_spec,
)

#: The sample: (task, encoding), each base model as trained, at 16L.
RECHECK_SAMPLE = (
    ("passkey", "alibi"),
    ("passkey", "nope"),
    ("passkey", "p_rope"),
    ("passkey", "sinusoidal"),
    ("text", "t5"),
    ("text", "learned"),
    ("text", "hybrid"),
)
RECHECK_MULTIPLE = 16
#: The largest changes ``scripts/measure_roads_drift.py`` saw over the kernel families
#: (default, avx2, avx512) and 1 and 2 threads, every encoding's base model at 16L:
#: relative, of a passkey chunk's summed loss (6.45e-7); absolute, of any answer logit
#: between two runs (8.01e-5), and of a text window's loss against the stored one
#: (9.96e-7 nats, the stored rounding included).
ROADS_MEASURED_DRIFT = {"loss": 6.5e-7, "logit": 8.1e-5, "text": 1.0e-6}
#: Ten times the measured drift, for processors not tried here.
ROADS_LOSS_RTOL = 10 * ROADS_MEASURED_DRIFT["loss"]
ROADS_TEXT_TOLERANCE = 10 * ROADS_MEASURED_DRIFT["text"]
TIE_MARGIN = 2 * 10 * ROADS_MEASURED_DRIFT["logit"]


def _results(root: Path, task: str, name: str, seed: int) -> dict:
    return json.loads((run_dir(root, task, name, seed) / RESULTS).read_text("utf-8"))


def recheck_passkey_road(root: Path, name: str, seed: int = 0) -> dict:
    """Chunk 0 of ``name``'s base model at 16L, fresh against stored: answers, near
    ties, disagreements outside them, the summed loss's relative change, and the
    largest top-2 logit gap seen (for the drift script)."""
    results = _results(root, "passkey", name, seed)
    config = TrainConfig.from_dict(results["config"])
    eval_config = EvalConfig.from_dict(results["eval_config"])
    (stored,) = [
        s
        for s in results["settings"]
        if (s["model"], s["method"], s["multiple"])
        == ("base", "none", RECHECK_MULTIPLE)
    ]
    model = load_checkpoint(checkpoint_dir(root, "passkey", name, seed) / "base.pt")
    batch = eval_batch(
        config.task, eval_config, RECHECK_MULTIPLE * config.train_length, 0
    )
    with torch.inference_mode():
        logits = answer_logits(
            model, batch, rope_spec("none", 1.0, config.train_length)
        )
        loss = float(answer_loss(logits, batch, "sum"))
    top = torch.topk(logits, 2, dim=-1).values
    margins = (top[..., 0] - top[..., 1]).reshape(-1).numpy()
    correct = (logits.argmax(-1).numpy() == batch.targets).reshape(-1)
    old = stored["chunks"][0]
    differ = np.array([c == "1" for c in old["correct"]]) != correct
    return {
        "task": "passkey",
        "encoding": name,
        "answers": int(correct.size),
        "near_ties": int((margins < TIE_MARGIN).sum()),
        "disagree": int((differ & (margins >= TIE_MARGIN)).sum()),
        "loss_change": relative_change(loss, old["loss_sum"]),
        "logits": logits.reshape(-1, logits.shape[-1]).numpy(),
    }


def recheck_text_road(root: Path, name: str, seed: int = 0) -> dict:
    """The first window of each protocol of ``name``'s base model at 16L: the largest
    |fresh - stored| loss (nats)."""
    results = _results(root, "text", name, seed)
    setting = {
        "model": "base",
        "method": "none",
        "factor": 1.0,
        "multiple": RECHECK_MULTIPLE,
    }
    (row,) = recheck_text(
        checkpoint_dir(root, "text", name, seed),
        results,
        windows=1,
        settings=(setting,),
    )
    return {"task": "text", "encoding": name, "change": row["change"]}


def recheck_roads(root: Path, sample=RECHECK_SAMPLE, seed: int = 0) -> list[dict]:
    """:func:`recheck_passkey_road` or :func:`recheck_text_road` for each of ``sample``."""
    return [
        recheck_passkey_road(root, name, seed)
        if task == "passkey"
        else recheck_text_road(root, name, seed)
        for task, name in sample
    ]
