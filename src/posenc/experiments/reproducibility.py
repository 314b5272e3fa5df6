"""Comparing two training runs of the same seeds, seed by seed. Imports torch."""

from __future__ import annotations

from pathlib import Path

from posenc.experiments.analysis import (
    read_results,
    read_train_log,
    seeds_in,
    settings_of,
)
from posenc.experiments.config import FINETUNE_METHODS, RESULTS_FILE, seed_dir
from posenc.experiments.training import checkpoint_path, load_checkpoint


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


def _key(setting: dict) -> tuple:
    return setting["model"], setting["method"], setting["factor"], setting["length"]


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
        settings = [settings_of(read_results(d)) for d in (first, second)]
        pairs = list(zip(*settings))
        if len(pairs) != len(settings[1]) or any(_key(x) != _key(y) for x, y in pairs):
            raise ValueError("the two results files evaluate different settings")
        report["answers_compared"] = sum(
            len(c["correct"]) for x, _ in pairs for c in x["chunks"]
        )
        report["answers_that_differ"] = sum(
            sum(u != v for u, v in zip(cx["correct"], cy["correct"]))
            for x, y in pairs
            for cx, cy in zip(x["chunks"], y["chunks"])
        )
    return report
