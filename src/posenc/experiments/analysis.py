"""Reading the experiment's stored results: accuracies, summaries, seeds, baselines. numpy only.

A results dictionary (``results.json`` of one seed, written by ``evaluate``) holds its
configurations and, per evaluated setting (model, method, factor s, length), raw counts
per chunk: which answers were right, summed loss and summed attention entropy. Every
number the chapter and its explorer draw is computed here from those counts; the
evaluation sequences are re-drawn (numpy, seeded) where distances are needed. Nothing here
imports torch.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np

from posenc.experiments import baselines
from posenc.experiments.config import (
    RESULTS_FILE,
    SETTINGS_KEY,
    SUMMARY_FILE,
    TRAIN_LOG_FILE,
    EvalConfig,
    TrainConfig,
    eval_batch,
    seed_dir,
)

# ------------------------------------------------------------------ files


def read_train_log(directory: Path) -> dict:
    """``train_log.json`` of one seed: its configuration, curves, digests and timings."""
    return json.loads((Path(directory) / TRAIN_LOG_FILE).read_text(encoding="utf-8"))


def write_results(directory: Path, results: dict) -> None:
    """``results.json`` (raw per-chunk counts) of one seed in ``directory``."""
    (Path(directory) / RESULTS_FILE).write_text(
        json.dumps(results, indent=None, separators=(",", ":")) + "\n", encoding="utf-8"
    )


def read_results(directory: Path) -> dict:
    """``results.json`` of one seed, as :func:`write_results` wrote it."""
    return json.loads((Path(directory) / RESULTS_FILE).read_text(encoding="utf-8"))


def seeds_in(root: Path) -> list[int]:
    """The seeds that have a training log under ``root``, in increasing order."""
    return sorted(
        int(path.parent.name.removeprefix("seed_"))
        for path in Path(root).glob(f"seed_*/{TRAIN_LOG_FILE}")
    )


def read_all_results(root: Path) -> dict[int, dict]:
    """``{seed: results}`` for every evaluated seed under ``root``."""
    return {
        seed: read_results(seed_dir(root, seed))
        for seed in seeds_in(root)
        if (seed_dir(root, seed) / RESULTS_FILE).is_file()
    }


def settings_of(results: dict) -> list[dict]:
    """The evaluated settings of ``results``, in plan order (key :data:`SETTINGS_KEY`)."""
    return results[SETTINGS_KEY]


def configs_of(results: dict) -> tuple[TrainConfig, EvalConfig]:
    """The training and evaluation configurations a results dictionary was made with."""
    return (
        TrainConfig.from_dict(results["train_config"]),
        EvalConfig.from_dict(results["eval_config"]),
    )


# ------------------------------------------------------------------ one setting


def answer_distances(
    train_config: TrainConfig, eval_config: EvalConfig, length: int, chunks: list[int]
) -> np.ndarray:
    """Distances (tokens) of every answer of the evaluation ``chunks`` at ``length``, in
    (chunk, sequence, query) order."""
    return np.concatenate(
        [
            eval_batch(train_config.task, eval_config, length, c).distances.reshape(-1)
            for c in chunks
        ]
    )


def setting_distances(results: dict, length: int) -> np.ndarray:
    """Distances (tokens) of every answer of a setting of ``results`` at ``length``, in
    the order of its ``correct`` strings."""
    return answer_distances(*configs_of(results), length, results["chunks"])


def trained_distances(config: TrainConfig) -> tuple[int, int]:
    """The smallest and largest needle distance training at L can produce ("within L")."""
    return config.task.distance_range(config.train_length)


def setting_correct(setting: dict) -> np.ndarray:
    """Booleans, one per answer of ``setting``, in (chunk, sequence, query) order."""
    return np.array([c == "1" for chunk in setting["chunks"] for c in chunk["correct"]])


def find_setting(
    results: dict, model: str, method: str, length: int, factor: float | None = None
) -> dict:
    """The setting of ``results`` for (model, method, length) and, where a model was run
    with two factors, ``factor``; KeyError if it was not evaluated or is ambiguous."""
    found = [
        setting
        for setting in settings_of(results)
        if (setting["model"], setting["method"], setting["length"])
        == (model, method, length)
        and (factor is None or setting["factor"] == float(factor))
    ]
    if len(found) != 1:
        raise KeyError(
            f"{len(found)} settings for model={model!r}, method={method!r}, length={length}, factor={factor}"
        )
    return found[0]


def summarize_setting(
    setting: dict, config: TrainConfig, distances: np.ndarray
) -> dict:
    """Accuracy over all needles, beyond the distances training produced and within them,
    mean loss (nats), and mean entropy per layer (nats; NaN where not recorded)."""
    correct = setting_correct(setting)
    if correct.shape != distances.shape:
        raise ValueError(
            f"distances must have one entry per answer ({correct.size}), got {distances.shape}"
        )
    beyond = distances > trained_distances(config)[1]
    count = correct.size
    recorded = [chunk for chunk in setting["chunks"] if "entropy_sum" in chunk]
    entropy_count = sum(chunk["entropy_count"] for chunk in recorded)
    return {
        "seed": config.seed,
        "model": setting["model"],
        "method": setting["method"],
        "factor": setting["factor"],
        "length": setting["length"],
        "answers": int(count),
        "accuracy": float(correct.mean()),
        "answers_beyond": int(beyond.sum()),
        "accuracy_beyond": float(correct[beyond].mean())
        if beyond.any()
        else float("nan"),
        "accuracy_within": float(correct[~beyond].mean()),
        "loss": sum(chunk["loss_sum"] for chunk in setting["chunks"]) / count,
        **{
            f"entropy_layer{layer}": (
                sum(chunk["entropy_sum"][layer] for chunk in recorded) / entropy_count
                if recorded
                else float("nan")
            )
            for layer in range(config.model.num_layers)
        },
    }


def accuracy_by_distance(
    results: dict, setting: dict, bin_width: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(bin starts, answers per bin, accuracy per bin) of one setting, bins [k w, (k+1) w)
    in distance (NaN accuracy in an empty bin)."""
    distances = setting_distances(results, setting["length"])
    correct = setting_correct(setting).astype(float)
    bins = distances // bin_width
    num_bins = setting["length"] // bin_width
    counts = np.bincount(bins, minlength=num_bins)[:num_bins]
    hits = np.bincount(bins, weights=correct, minlength=num_bins)[:num_bins]
    with np.errstate(invalid="ignore", divide="ignore"):
        return (
            np.arange(num_bins) * bin_width,
            counts,
            np.where(counts > 0, hits / np.maximum(counts, 1), np.nan),
        )


def baseline_scores(
    results: dict, length: int, names: tuple[str, ...] | None = None
) -> dict[str, np.ndarray]:
    """``{strategy: expected accuracy per answer}`` (answer order, as ``correct``) of the
    strategies ``names`` (default all) of :mod:`posenc.experiments.baselines` on the
    evaluation sequences of ``results`` at ``length``."""
    train_config, eval_config = configs_of(results)
    batches = [
        eval_batch(train_config.task, eval_config, length, chunk)
        for chunk in results["chunks"]
    ]
    return {
        name: np.concatenate(
            [
                baselines.STRATEGIES[name](batch, train_config.task).reshape(-1)
                for batch in batches
            ]
        )
        for name in (baselines.STRATEGIES if names is None else names)
    }


def baseline_accuracy(results: dict, length: int) -> dict[str, dict[str, float]]:
    """Every strategy of :mod:`posenc.experiments.baselines` on the evaluation sequences of
    ``results`` at ``length``: ``{strategy: {"all": accuracy, "beyond": on needles beyond the
    trained distances}}`` (expected accuracies, averaged over the answers)."""
    beyond = (
        setting_distances(results, length)
        > trained_distances(configs_of(results)[0])[1]
    )
    return {
        name: {
            "all": float(scores.mean()),
            "beyond": float(scores[beyond].mean()) if beyond.any() else float("nan"),
        }
        for name, scores in baseline_scores(results, length).items()
    }


# ------------------------------------------------------------------ one seed, several seeds


def summary_table(results: dict) -> list[dict]:
    """One :func:`summarize_setting` row per setting of ``results`` (one seed)."""
    config = configs_of(results)[0]
    settings = settings_of(results)
    distances = {
        length: setting_distances(results, length)
        for length in {setting["length"] for setting in settings}
    }
    return [
        summarize_setting(setting, config, distances[setting["length"]])
        for setting in settings
    ]


def write_summary(root: Path, results_by_seed: dict[int, dict]) -> None:
    """``results.csv`` under ``root``: one :func:`summarize_setting` row per seed and setting."""
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
    """``{(model, method, factor, length): values}``: one :func:`summarize_setting`
    ``column`` per seed, in increasing seed order, for every setting every seed evaluated."""
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
