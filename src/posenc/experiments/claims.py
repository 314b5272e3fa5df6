"""Chapter 6's claims table evaluated: every comparative sentence of the page, with its test
and verdict.

The table is data (:mod:`posenc.experiments.claim_table`, whose names this module also
offers). Each :class:`Claim` is one row: what is claimed, on which metric and lengths, and
the comparisons that must all hold under :mod:`posenc.experiments.inference` (direction: z > 1.645
in every seed; no difference: every seed's 90% interval inside the margin). :func:`verdicts`
evaluates the table on any seeds, so a new training run can be checked against it
(``python -m posenc.experiments.claims [--holdout DIR]``).
"""

from __future__ import annotations

import numpy as np

from posenc.experiments import context_extension as ce
from posenc.experiments.analysis import baseline_scores
from posenc.experiments.claim_table import (
    ALL,
    CLAIMS,
    FAR,
    FLOOR,
    NEAR,
    NTK_LEAVES,
    Answers,
    Claim,
    Comparison,
    Setting,
    beats,
    same,
)
from posenc.experiments.inference import (
    Sample,
    SeedTest,
    contrast_test,
    direction_holds,
    equivalence_holds,
)

# The table's names, for readers of chapter 6 (claims.CLAIMS, claims.Setting, ...).
__all__ = [
    "ALL",
    "CLAIMS",
    "FAR",
    "FLOOR",
    "NEAR",
    "NTK_LEAVES",
    "Answers",
    "Claim",
    "Comparison",
    "Evidence",
    "Setting",
    "beats",
    "comparison_holds",
    "format_verdicts",
    "main",
    "same",
    "seed_tests",
    "substitutions",
    "verdicts",
]


_SHARED: dict[str, dict] = {}


class Evidence:
    """Per-answer scores of one seed's results, read once: accuracy, distances, clusters."""

    def __init__(self, results: dict):
        self.results = results
        self.config, self.eval_config = ce.configs_of(results)
        self.train_length = self.config.train_length
        self.queries = self.config.task.num_pairs
        # every seed, method and model is evaluated on the same sequences of each length
        self._shared = _SHARED.setdefault(
            repr((self.config.task, self.eval_config, results["chunks"])), {}
        )

    def key(self, setting: Setting) -> tuple[str, str, float, int]:
        length = setting.multiple * self.train_length
        return ce.setting_key(
            setting.method, length, self.train_length, setting.model, setting.factor
        )

    def distances(self, length: int) -> np.ndarray:
        if ("distances", length) not in self._shared:
            self._shared["distances", length] = ce.setting_distances(
                self.results, length
            )
        return self._shared["distances", length]

    def floor(self, length: int) -> np.ndarray:
        """Per-answer expected accuracy of the no-matching guess, in answer order."""
        if ("floor", length) not in self._shared:
            self._shared["floor", length] = baseline_scores(
                self.results, length, (FLOOR,)
            )[FLOOR]
        return self._shared["floor", length]

    def scores(self, setting: Setting, answers: Answers) -> tuple[np.ndarray, ...]:
        """(clusters, scores, counted) of one setting on ``answers``."""
        length = setting.multiple * self.train_length
        if answers.layer is not None:
            cell = ce.find_setting(self.results, *self._find_args(setting))
            sums = np.array(
                [chunk["entropy_sum"][answers.layer] for chunk in cell["chunks"]]
            )
            counts = np.array([chunk["entropy_count"] for chunk in cell["chunks"]])
            # one pseudo-answer per chunk, weighted by repetition of its mean
            clusters = np.repeat(np.arange(sums.size), counts)
            scores = np.repeat(sums / counts, counts)
            return clusters, scores, np.ones(scores.size, dtype=bool)
        distances = self.distances(length)
        longest = ce.trained_distances(self.config)[1]
        if setting.method == "floor":
            scores = self.floor(length)
        elif setting.method == "local":
            scores = np.where(distances <= longest, 1.0, self.floor(length))
        else:
            scores = ce.setting_correct(
                ce.find_setting(self.results, *self._find_args(setting))
            ).astype(float)
        clusters = np.arange(scores.size) // self.queries
        counted = {
            "all": np.ones(scores.size, dtype=bool),
            "far": distances > longest,
            "near": distances <= longest,
            "distance": (distances > answers.low) & (distances <= answers.high),
        }[answers.which]
        return clusters, scores, counted

    def mean(self, setting: Setting, answers: Answers = ALL) -> float:
        """The mean score of ``setting`` on ``answers`` (its accuracy, or entropy)."""
        _, scores, counted = self.scores(setting, answers)
        return float(scores[counted].mean())

    def _find_args(self, setting: Setting) -> tuple:
        model, method, factor, length = self.key(setting)
        return model, method, length, factor

    def test(self, comparison: Comparison) -> SeedTest:
        """This seed's test of ``comparison`` (paired within a length, independent across)."""
        by_length: dict[tuple, list] = {}
        for coefficient, setting, answers in comparison.terms:
            clusters, scores, counted = self.scores(setting, answers)
            group = (setting.multiple, answers.layer is not None)
            by_length.setdefault(group, [clusters, []])[1].append(
                (coefficient, scores, counted)
            )
        return contrast_test(
            [Sample(clusters, tuple(terms)) for clusters, terms in by_length.values()]
        )


def comparison_holds(comparison: Comparison, tests: list[SeedTest]) -> bool:
    if comparison.kind == "equivalence":
        return equivalence_holds(tests)
    return direction_holds(tests)


def seed_tests(
    results_by_seed: dict[int, dict], claims: tuple[Claim, ...] = CLAIMS
) -> dict[int, dict[str, list[SeedTest]]]:
    """``{seed: {claim key: one SeedTest per comparison}}``: everything the verdicts need."""
    tests = {}
    for seed, results in results_by_seed.items():
        evidence = Evidence(results)
        tests[seed] = {
            claim.key: [evidence.test(c) for c in claim.comparisons] for claim in claims
        }
    return tests


def verdicts(
    results_by_seed: dict[int, dict],
    claims: tuple[Claim, ...] = CLAIMS,
    tests: dict[int, dict[str, list[SeedTest]]] | None = None,
) -> list[dict]:
    """One row per claim: key, statement, metric, lengths, test, "shown" or "not shown",
    and per comparison the per-seed differences, z and 90% intervals (seeds in increasing
    order). ``tests`` (from :func:`seed_tests`, for at least these seeds) saves recomputing."""
    seeds = sorted(results_by_seed)
    if tests is None:
        tests = seed_tests(results_by_seed, claims)
    rows = []
    for claim in claims:
        details = []
        for index, comparison in enumerate(claim.comparisons):
            per_seed = [tests[seed][claim.key][index] for seed in seeds]
            details.append(
                {
                    "holds": comparison_holds(comparison, per_seed),
                    "differences": [t.difference for t in per_seed],
                    "z": [t.z for t in per_seed],
                    "intervals": [t.interval for t in per_seed],
                }
            )
        rows.append(
            {
                "key": claim.key,
                "statement": claim.statement,
                "metric": claim.metric,
                "lengths": claim.lengths,
                "test": claim.test,
                "verdict": "shown" if all(d["holds"] for d in details) else "not shown",
                "comparisons": details,
            }
        )
    return rows


def substitutions(
    results_by_seed: dict[int, dict], holdout: dict[int, dict]
) -> dict[str, dict[tuple[int, int], str]]:
    """Every claim's verdict when one holdout seed replaces one of the page's seeds:
    ``{claim key: {(replaced seed, holdout seed): verdict}}``."""
    if set(holdout) & set(results_by_seed):
        raise ValueError(
            f"holdout seeds must differ from the page's, both have {set(holdout) & set(results_by_seed)}"
        )
    table: dict[str, dict[tuple[int, int], str]] = {c.key: {} for c in CLAIMS}
    tests = seed_tests({**results_by_seed, **holdout})
    for new in sorted(holdout):
        for old in sorted(results_by_seed):
            seeds = {s: r for s, r in results_by_seed.items() if s != old}
            for row in verdicts({**seeds, new: holdout[new]}, tests=tests):
                table[row["key"]][(old, new)] = row["verdict"]
    return table


def format_verdicts(rows: list[dict]) -> str:
    """The claims table as text: verdict, key, metric, lengths, smallest z over seeds."""
    lines = [f"{'verdict':10s} {'claim':36s} {'lowest z':>8s}  metric; lengths"]
    for row in rows:
        lowest = min(min(d["z"]) for d in row["comparisons"])
        lines.append(
            f"{row['verdict']:10s} {row['key']:36s} {lowest:8.1f}  "
            f"{row['metric']}; {row['lengths']}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    import argparse
    from pathlib import Path

    parser = argparse.ArgumentParser(
        prog="python -m posenc.experiments.claims",
        description="Evaluate chapter 6's claims table on stored runs; with --holdout, "
        "again with each holdout seed in place of each seed.",
    )
    parser.add_argument("--dir", type=Path, default=ce.DEFAULT_DIR)
    parser.add_argument(
        "--holdout",
        type=Path,
        default=None,
        help="a directory of other evaluated seeds",
    )
    args = parser.parse_args(argv)
    results = ce.read_all_results(args.dir)
    rows = verdicts(results)
    print(f"seeds {sorted(results)}")
    print(format_verdicts(rows))
    if args.holdout is not None:
        holdout = ce.read_all_results(args.holdout)
        flips = substitutions(results, holdout)
        expected = {row["key"]: row["verdict"] for row in rows}
        print(
            f"\nholdout seeds {sorted(holdout)}, each in place of each of {sorted(results)}"
        )
        for key, by_swap in flips.items():
            changed = [
                swap for swap, verdict in by_swap.items() if verdict != expected[key]
            ]
            state = "same in all" if not changed else f"changes in {len(changed)}"
            print(f"  {key:36s} {expected[key]:10s} {state} of {len(by_swap)} swaps")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
