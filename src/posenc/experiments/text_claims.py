"""The real-text section's claims, tested by chapter 6's one inference procedure. numpy only.

Every comparison is of mean loss (bits per byte) between evaluated settings
(:class:`Run`), under one protocol. The cluster is a window (its bytes share one text and
one pass), so a seed's test is a paired or independent contrast over windows
(:func:`posenc.experiments.inference.contrast_test`):

- whole-window: settings at the same length read the same windows (paired); at different
  lengths the windows differ (independent samples, variances added);
- fixed-target: every length scores the same bytes of the same windows (paired throughout);
- the fine-tuning-cost curve: every check scores the same windows at the tuned length.

Across seeds the rules of :mod:`posenc.experiments.inference` hold unchanged: a direction
is shown when z > 1.645 in every seed (false-positive rate at most 1/32 with five seeds);
"no difference" when every seed's 90% interval lies inside +/- :data:`EQUIVALENCE_BITS`.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from posenc.experiments.config import seed_dir
from posenc.experiments.corpus import byte_tokens, load_split, unigram_log2_probs
from posenc.experiments.inference import (
    Sample,
    SeedTest,
    contrast_test,
    direction_holds,
    equivalence_holds,
)
from posenc.experiments.text_config import (
    TEXT_FINETUNE_PHASE,
    TEXT_RESULTS,
    TEXT_TRAIN_LOG,
    TextConfig,
    TextEvalConfig,
    protocol_windows,
)

#: The largest loss difference called "no difference": 0.02 bits per byte (1.4% in
#: perplexity). Fixed before any real-text result was looked at.
EQUIVALENCE_BITS = 0.02
PROTOCOLS = ("whole_window", "fixed_target", "cost_curve")


@dataclass(frozen=True)
class Run:
    """One evaluated setting: ``method`` at ``multiple`` x L on ``model`` ("base" or
    "finetune_<method>"), or ``method="unigram"`` (the add-one unigram of the train part on
    the same windows). ``step``: a check of the fine-tuning-cost curve (protocol
    "cost_curve" only)."""

    method: str
    multiple: int
    model: str = "base"
    step: int | None = None


@dataclass(frozen=True)
class TextComparison:
    """``sum(c * mean loss(run))`` over ``terms`` under ``protocol``; > 0 is the claim."""

    terms: tuple[tuple[float, Run], ...]
    protocol: str = "whole_window"
    kind: str = "direction"  # or "equivalence"


def lower(first: Run, second: Run, protocol: str = "whole_window") -> TextComparison:
    """First's loss below second's (first is better)."""
    return TextComparison(((1.0, second), (-1.0, first)), protocol)


def same_loss(
    first: Run, second: Run, protocol: str = "whole_window"
) -> TextComparison:
    """First's and second's losses within :data:`EQUIVALENCE_BITS`."""
    return TextComparison(((1.0, first), (-1.0, second)), protocol, "equivalence")


@dataclass(frozen=True)
class TextClaim:
    """One row: ``comparisons`` must all hold for the claim to be shown."""

    key: str
    statement: str
    comparisons: tuple[TextComparison, ...]


def tuned(method: str, multiple: int, step: int | None = None) -> Run:
    """The model fine-tuned with ``method``, run with it at its tuned s."""
    return Run(method, multiple, f"finetune_{method}", step)


LONG = (2, 4, 8, 16)
SCALED = ("linear", "ntk", "dynamic", "ntk_by_parts", "yarn", "llama3")


class TextEvidence:
    """One seed's stored losses, by protocol and :class:`Run`, in bits per byte per window."""

    def __init__(self, results: dict, train_log: dict):
        self.config = TextConfig.from_dict(results["config"])
        self.eval_config = TextEvalConfig.from_dict(results["eval_config"])
        self.seed = self.config.seed
        self.losses: dict[tuple[str, Run], np.ndarray] = {}
        self.by_position: dict[Run, np.ndarray] = {}
        self.tests: dict[TextComparison, SeedTest] = {}
        for entry in results["settings"]:
            run = Run(entry["method"], entry["multiple"], entry["model"])
            for protocol in ("whole_window", "fixed_target"):
                self.losses[protocol, run] = np.asarray(entry[protocol]) / math.log(2)
            if "by_position" in entry:
                self.by_position[run] = np.asarray(entry["by_position"]) / math.log(2)
        self.steps = sorted(
            {
                check["step"]
                for log in train_log["finetune"].values()
                for check in log["cost_curve"]
            }
        )
        for method, log in train_log["finetune"].items():
            for check in log["cost_curve"]:
                run = tuned(method, self.config.finetune_multiple, check["step"])
                self.losses["cost_curve", run] = np.asarray(
                    check["window_losses"]
                ) / math.log(2)

    def scores(self, protocol: str, run: Run) -> np.ndarray:
        """Per-window loss (bits per byte) of ``run`` under ``protocol``."""
        if run.method == "unigram":
            return unigram_scores(self.config, self.eval_config, protocol, run.multiple)
        if run.model == "base" and run.multiple == 1:
            run = Run("none", 1)
        key = (protocol, run)
        if key not in self.losses:
            raise KeyError(f"no {protocol} scores stored for {run}")
        return self.losses[key]


def across_seeds(
    evidence_by_seed: dict[int, TextEvidence], protocol: str, run: Run
) -> np.ndarray:
    """Each seed's mean loss (bits per byte) of ``run`` under ``protocol``, in seed order."""
    return np.array(
        [
            evidence_by_seed[seed].scores(protocol, run).mean()
            for seed in sorted(evidence_by_seed)
        ]
    )


_UNIGRAM: dict[tuple, np.ndarray] = {}


def unigram_scores(
    config: TextConfig, eval_config: TextEvalConfig, protocol: str, multiple: int
) -> np.ndarray:
    """The add-one unigram's per-window loss (bits per byte) on the windows ``protocol``
    scores at ``multiple`` x L (it ignores context, so only the scored bytes matter)."""
    key = (config.train_length, eval_config, protocol, multiple)
    if key not in _UNIGRAM:
        parts = load_split()
        log2_probs = unigram_log2_probs(byte_tokens(parts["train"]))
        whole, fixed = protocol_windows(
            byte_tokens(parts["test"]), config, eval_config, multiple
        )
        if protocol == "whole_window":
            targets = whole.targets
        elif protocol == "fixed_target":
            targets = fixed.targets[:, -config.train_length :]
        else:
            raise ValueError(
                f"protocol must be whole_window or fixed_target, got {protocol!r}"
            )
        _UNIGRAM[key] = -log2_probs[targets].mean(axis=1)
    return _UNIGRAM[key]


def seed_test(evidence: TextEvidence, comparison: TextComparison) -> SeedTest:
    """One seed's contrast: one sample per set of windows (paired inside it). Kept on
    ``evidence``, so the holdout substitution computes each seed's test once."""
    if comparison not in evidence.tests:
        evidence.tests[comparison] = _seed_test(evidence, comparison)
    return evidence.tests[comparison]


def _seed_test(evidence: TextEvidence, comparison: TextComparison) -> SeedTest:
    if comparison.protocol not in PROTOCOLS:
        raise ValueError(
            f"protocol must be one of {PROTOCOLS}, got {comparison.protocol!r}"
        )
    groups: dict[object, list[tuple[float, np.ndarray]]] = {}
    for coefficient, run in comparison.terms:
        scores = evidence.scores(comparison.protocol, run)
        # whole windows differ between lengths; fixed targets and cost checks do not
        group = run.multiple if comparison.protocol == "whole_window" else None
        groups.setdefault(group, []).append((coefficient, scores))
    samples = []
    for terms in groups.values():
        size = terms[0][1].shape[0]
        if any(scores.shape != (size,) for _, scores in terms):
            raise ValueError("the runs of one sample must score the same windows")
        counted = np.ones(size, dtype=bool)
        samples.append(
            Sample(
                np.arange(size),
                tuple((c, scores, counted) for c, scores in terms),
            )
        )
    return contrast_test(samples)


def comparison_holds(comparison: TextComparison, tests: list[SeedTest]) -> bool:
    """The inference procedure's verdict on one comparison over the seeds' tests."""
    if comparison.kind == "equivalence":
        return equivalence_holds(tests, EQUIVALENCE_BITS)
    return direction_holds(tests)


def text_verdicts(
    evidence_by_seed: dict[int, TextEvidence], claims: tuple[TextClaim, ...]
) -> list[dict]:
    """One row per claim: key, statement, "shown" or "not shown", and per comparison the
    per-seed differences (bits per byte), z and 90% intervals."""
    rows = []
    for claim in claims:
        details = []
        for comparison in claim.comparisons:
            tests = [
                seed_test(evidence_by_seed[seed], comparison)
                for seed in sorted(evidence_by_seed)
            ]
            details.append(
                {
                    "holds": comparison_holds(comparison, tests),
                    "differences": [t.difference for t in tests],
                    "z": [t.z for t in tests],
                    "intervals": [t.interval for t in tests],
                }
            )
        shown = all(d["holds"] for d in details)
        rows.append(
            {
                "key": claim.key,
                "statement": claim.statement,
                "verdict": "shown" if shown else "not shown",
                "comparisons": details,
            }
        )
    return rows


def read_text_results(directory: Path) -> dict:
    """One seed's ``results.json``, as :func:`~posenc.experiments.text_evaluation.evaluate_text_seed` wrote it."""
    return json.loads((Path(directory) / TEXT_RESULTS).read_text(encoding="utf-8"))


def read_text_evidence(
    root: Path, seeds: list[int] | None = None
) -> dict[int, TextEvidence]:
    """Every evaluated seed under ``root`` (``seed_*/results.json`` with its train log)."""
    root = Path(root)
    if seeds is None:
        seeds = sorted(
            int(path.parent.name.removeprefix("seed_"))
            for path in root.glob(f"seed_*/{TEXT_RESULTS}")
        )
    evidence = {}
    for seed in seeds:
        directory = seed_dir(root, seed)
        evidence[seed] = TextEvidence(
            read_text_results(directory),
            json.loads((directory / TEXT_TRAIN_LOG).read_text(encoding="utf-8")),
        )
    return evidence


# ------------------------------------------------------------------ the claims table

FINAL_STEP = TEXT_FINETUNE_PHASE.steps
#: YaRN's check compared with PI's last: a quarter of PI's steps.
QUARTER_STEP = FINAL_STEP // 4
TUNED = ("linear", "yarn")
NTK_FAMILY = ("ntk", "dynamic", "ntk_by_parts", "yarn", "llama3")
BY_PARTS = ("ntk_by_parts", "yarn", "llama3")


def _each(pairs, protocol="whole_window") -> tuple[TextComparison, ...]:
    return tuple(lower(first, second, protocol) for first, second in pairs)


TEXT_CLAIMS: tuple[TextClaim, ...] = (
    TextClaim(
        "below-unigram",
        "at L the model is far below the unigram",
        _each([(Run("none", 1), Run("unigram", 1))])
        + _each([(Run("none", 1), Run("unigram", 1))], "fixed_target"),
    ),
    TextClaim(
        "none-breaks",
        "no scaling: the loss rises beyond L",
        _each([(Run("none", 1), Run("none", m)) for m in LONG])
        + _each([(Run("none", 1), Run("none", m)) for m in LONG], "fixed_target"),
    ),
    TextClaim(
        "pi-below-none-whole",
        "PI without fine-tuning is worse than no scaling on whole windows at 2L, 4L and 8L",
        _each([(Run("none", m), Run("linear", m)) for m in (2, 4, 8)]),
    ),
    TextClaim(
        "ntk-family-beats-none",
        "NTK-aware, dynamic NTK, NTK-by-parts, YaRN and Llama 3.1 beat no scaling",
        _each([(Run(k, m), Run("none", m)) for k in NTK_FAMILY for m in LONG]),
    ),
    TextClaim(
        "ntk-family-beats-pi",
        "the same five beat PI without fine-tuning",
        _each([(Run(k, m), Run("linear", m)) for k in NTK_FAMILY for m in LONG]),
    ),
    TextClaim(
        "by-parts-beats-ntk",
        "NTK-by-parts, YaRN and Llama 3.1 beat NTK-aware on the fixed targets from 4L on",
        _each(
            [(Run(k, m), Run("ntk", m)) for k in BY_PARTS for m in (4, 8, 16)],
            "fixed_target",
        ),
    ),
    TextClaim(
        "dynamic-behind-ntk-whole",
        "on whole windows dynamic NTK is worse than NTK-aware at 8L and 16L",
        _each([(Run("ntk", m), Run("dynamic", m)) for m in (8, 16)]),
    ),
    TextClaim(
        "context-never-helps-untuned",
        "without fine-tuning, more context does not help: on the fixed targets every "
        "method is worse at 4L to 16L than at L",
        _each(
            [
                (Run("none", 1), Run(k, m))
                for k in ("linear", *NTK_FAMILY)
                for m in (4, 8, 16)
            ],
            "fixed_target",
        ),
    ),
    TextClaim(
        "context-helps-tuned",
        "after fine-tuning at 4L, more context helps: each fine-tuned model scores its "
        "fixed targets better at 2L and 4L than at L",
        _each(
            [(tuned(k, m), tuned(k, 1)) for k in TUNED for m in (2, 4)], "fixed_target"
        ),
    ),
    TextClaim(
        "yarn-tuned-beats-pi-tuned",
        "fine-tuned on the same budget, YaRN beats PI at L, 2L and 4L",
        _each([(tuned("yarn", m), tuned("linear", m)) for m in (1, 2, 4)]),
    ),
    TextClaim(
        "yarn-ahead-every-step",
        "YaRN's fine-tune is ahead of PI's at every check of the cost curve",
        _each(
            [
                (tuned("yarn", 4, step), tuned("linear", 4, step))
                for step in range(0, FINAL_STEP + 1, TEXT_FINETUNE_PHASE.eval_every)
            ],
            "cost_curve",
        ),
    ),
    TextClaim(
        "yarn-quarter-steps",
        f"YaRN after {QUARTER_STEP} fine-tuning steps beats PI after {FINAL_STEP}",
        _each(
            [(tuned("yarn", 4, QUARTER_STEP), tuned("linear", 4, FINAL_STEP))],
            "cost_curve",
        ),
    ),
    TextClaim(
        "tuned-break-beyond",
        "both fine-tuned models break beyond 4L: worse at 8L than at 4L on the fixed targets",
        _each([(tuned(k, 4), tuned(k, 8)) for k in TUNED], "fixed_target"),
    ),
    TextClaim(
        "yarn-tuned-degrades-less",
        "beyond 4L the fine-tuned YaRN stays below the fine-tuned PI",
        _each([(tuned("yarn", m), tuned("linear", m)) for m in (8, 16)]),
    ),
)


def text_substitutions(
    evidence: dict[int, TextEvidence],
    holdout: dict[int, TextEvidence],
    claims: tuple[TextClaim, ...] = TEXT_CLAIMS,
) -> dict[str, dict[tuple[int, int], str]]:
    """Each claim's verdict when one holdout seed replaces one of the page's seeds."""
    if set(holdout) & set(evidence):
        raise ValueError(
            f"holdout seeds must differ from the page's: {set(holdout) & set(evidence)}"
        )
    table: dict[str, dict[tuple[int, int], str]] = {c.key: {} for c in claims}
    for new in sorted(holdout):
        for old in sorted(evidence):
            seeds = {s: e for s, e in evidence.items() if s != old} | {
                new: holdout[new]
            }
            for row in text_verdicts(seeds, claims):
                table[row["key"]][(old, new)] = row["verdict"]
    return table


def format_loss_table(
    evidence_by_seed: dict[int, TextEvidence],
    protocol: str,
    rows: dict[str, tuple[str, str]],
    multiples: tuple[int, ...],
) -> str:
    """Mean over seeds of the loss (bits per byte) at each multiple of L, one line per
    ``rows`` entry: label -> (method, model)."""
    width = max(map(len, rows)) + 2
    lines = [" " * width + "".join(f"{f'{m}L':>8s}" for m in multiples)]
    for label, (method, model) in rows.items():
        runs = [Run(method, m, model) for m in multiples]
        means = [across_seeds(evidence_by_seed, protocol, run).mean() for run in runs]
        lines.append(f"{label:{width}s}" + "".join(f"{v:8.2f}" for v in means))
    return "\n".join(lines)


def format_text_verdicts(rows: list[dict]) -> str:
    """The table as text: verdict, key, lowest z over comparisons and seeds."""
    lines = [f"{'verdict':10s} {'claim':30s} {'lowest z':>8s}"]
    for row in rows:
        lowest = min(min(d["z"]) for d in row["comparisons"])
        lines.append(f"{row['verdict']:10s} {row['key']:30s} {lowest:8.1f}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    import argparse

    from posenc.experiments.text_config import TEXT_DIR

    parser = argparse.ArgumentParser(
        prog="python -m posenc.experiments.text_claims",
        description="Evaluate the real-text claims on stored runs; with --holdout, again "
        "with each holdout seed in place of each seed.",
    )
    parser.add_argument("--dir", type=Path, default=TEXT_DIR)
    parser.add_argument("--holdout", type=Path, default=None)
    args = parser.parse_args(argv)
    evidence = read_text_evidence(args.dir)
    rows = text_verdicts(evidence, TEXT_CLAIMS)
    print(f"seeds {sorted(evidence)}")
    print(format_text_verdicts(rows))
    if args.holdout is not None:
        holdout = read_text_evidence(args.holdout)
        expected = {row["key"]: row["verdict"] for row in rows}
        print(
            f"\nholdout seeds {sorted(holdout)}, each in place of each of {sorted(evidence)}"
        )
        for key, by_swap in text_substitutions(evidence, holdout).items():
            changed = sum(v != expected[key] for v in by_swap.values())
            state = "same in all" if not changed else f"changes in {changed}"
            print(f"  {key:30s} {expected[key]:10s} {state} of {len(by_swap)} swaps")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
