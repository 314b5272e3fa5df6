"""Checking stored results on any processor: evaluate a few settings afresh. Imports torch.

torch picks its CPU kernels per processor (``ATEN_CPU_CAPABILITY``) and splits sums
differently with more threads, so a fresh evaluation moves a little from the stored one.
:func:`recheck` measures how far, against tolerances set from measured drift.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from posenc.experiments.analysis import configs_of, find_setting
from posenc.experiments.evaluation import run_setting
from posenc.experiments.training import checkpoint_path, load_checkpoint

#: How far a fresh evaluation moves on another processor.
#: ``scripts/measure_context_extension_drift.py`` evaluated :data:`RECHECK_SETTINGS` on
#: chunk 0 of every stored seed with each kernel family of an AVX-512 machine (default,
#: avx2, avx512) and 1 and 2 threads; these are the largest changes it saw: relative, of a
#: chunk's summed loss and summed entropy; absolute, of any logit.
MEASURED_DRIFT = {"loss": 1.2e-5, "entropy": 1.2e-7, "logit": 3.5e-5}
#: Ten times the measured drift, for processors we could not try (arm64 among them).
LOSS_RTOL = 10 * MEASURED_DRIFT["loss"]
ENTROPY_RTOL = 10 * MEASURED_DRIFT["entropy"]
#: An answer whose two best logits are closer than this may flip on another processor, so
#: it is not required to agree: twice the tolerated logit drift (each side may move).
TIE_MARGIN = 2 * 10 * MEASURED_DRIFT["logit"]

#: The settings chapter 6 evaluates afresh for every seed (and the drift script measures).
RECHECK_SETTINGS = (
    {"model": "base", "method": "none", "factor": 1.0, "length": 128},
    {"model": "base", "method": "dynamic", "factor": 1.0, "length": 512},
    {"model": "base", "method": "yarn", "factor": 8.0, "length": 1024},
    {"model": "finetune_yarn", "method": "yarn", "factor": 8.0, "length": 1024},
)


def relative_change(new: object, old: object) -> float:
    """The largest |new / old - 1| over the entries of two sums (numbers or lists)."""
    return float(np.max(np.abs(np.asarray(new, dtype=float) / np.asarray(old) - 1)))


def recheck(
    directory: Path, results: dict, settings: list[dict], chunks: list[int]
) -> list[dict]:
    """Evaluate ``settings`` of one seed afresh on ``chunks`` and compare with the stored
    ``results``.

    Per setting: answers compared, near ties (fresh top-2 logit gap below
    :data:`TIE_MARGIN`), answers that disagree outside near ties, and the largest relative
    change of the summed loss and entropy, to be held against :data:`LOSS_RTOL` and
    :data:`ENTROPY_RTOL`.
    """
    train_config, eval_config = configs_of(results)
    models = {
        name: load_checkpoint(checkpoint_path(directory, name))
        for name in {setting["model"] for setting in settings}
    }
    report = []
    for setting in settings:
        stored = find_setting(
            results,
            setting["model"],
            setting["method"],
            setting["length"],
            setting["factor"],
        )
        fresh = run_setting(
            models[setting["model"]],
            setting,
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
            answers += differ.size
            ties += int(tie.sum())
            disagree += int((differ & ~tie).sum())
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
                **setting,
                "answers": answers,
                "near_ties": ties,
                "disagree": disagree,
                "loss_change": loss_change,
                "entropy_change": entropy_change,
            }
        )
    return report
