""" "Other roads"' claims: each paper's claim, tested by chapter 6's one inference procedure. numpy only.

A :class:`RoadClaim` is one row of the page's agreement table: a paper's claim and the
comparisons between evaluated settings (:class:`Road`) that must all hold for the
measurements to agree with it. Within a seed, encodings trained with that seed are
compared on the same evaluation sequences (passkey: a sequence is the cluster, its four
queries share it; text: a window), so a comparison at one length is paired, and at two
lengths the samples are independent (:func:`posenc.experiments.inference.contrast_test`).
Across seeds the procedure's rules hold unchanged, with one difference stated where the
page uses them: the page has three seeds (:data:`~posenc.experiments.roads_config.ROADS_SEEDS`),
so a direction agreeing on all three has a false-positive rate of at most 1/8, and every
claim is checked again with one more seed the page does not read
(:data:`~posenc.experiments.roads_config.HOLDOUT_SEEDS`; the training budget holds no
second): four runs, at most 1/16.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from posenc.experiments.analysis import answer_distances
from posenc.experiments.config import EvalConfig, TrainConfig
from posenc.experiments.inference import (
    EQUIVALENCE_MARGIN,
    Sample,
    SeedTest,
    contrast_test,
    direction_holds,
    equivalence_holds,
)
from posenc.experiments.roads_config import (
    RESULTS,
    ROADS_DIR,
    ROADS_SEEDS,
    TASKS,
)
from posenc.experiments.text_claims import EQUIVALENCE_BITS

#: Which answers a passkey mean counts: every answer, or the needles farther than
#: training at L could place them ("far").
ANSWERS = ("all", "far")
PROTOCOLS = ("whole_window", "fixed_target")


@dataclass(frozen=True)
class Road:
    """One evaluated setting of one encoding: the ``model`` ("base" or
    "finetune_<method>") run at ``multiple`` x L with ``method`` ("none": as trained)."""

    encoding: str
    multiple: int
    method: str = "none"
    model: str = "base"


@dataclass(frozen=True)
class RoadComparison:
    """``sum(c * mean(road))`` over ``terms`` on ``task``; > 0 is the claimed direction.
    Passkey means are accuracies on ``answers``; text means are losses in bits per byte
    under ``protocol`` (so a text claim that A is better is ``B - A``)."""

    task: str
    terms: tuple[tuple[float, Road], ...]
    kind: str = "direction"  # or "equivalence"
    answers: str = "all"
    protocol: str = "whole_window"


def more_accurate(first: Road, second: Road, answers: str = "all") -> RoadComparison:
    """First's passkey accuracy above second's on ``answers``."""
    return RoadComparison("passkey", ((1.0, first), (-1.0, second)), answers=answers)


def lower_loss(
    first: Road, second: Road, protocol: str = "whole_window"
) -> RoadComparison:
    """First's text loss below second's under ``protocol``."""
    return RoadComparison("text", ((1.0, second), (-1.0, first)), protocol=protocol)


def same_loss(
    first: Road, second: Road, protocol: str = "whole_window"
) -> RoadComparison:
    """First's and second's text losses within
    :data:`~posenc.experiments.text_claims.EQUIVALENCE_BITS`."""
    return RoadComparison(
        "text", ((1.0, first), (-1.0, second)), "equivalence", protocol=protocol
    )


@dataclass(frozen=True)
class RoadClaim:
    """One row: ``source``'s claim, and the comparisons that must all hold."""

    key: str
    source: str
    statement: str
    comparisons: tuple[RoadComparison, ...]


class RoadsSeed:
    """One seed's stored results of every encoding on both tasks, read once."""

    def __init__(self, results: dict[tuple[str, str], dict]):
        self.results = results
        self._distances: dict[tuple, np.ndarray] = {}

    def _setting(self, task: str, road: Road) -> dict:
        if (task, road.encoding) not in self.results:
            raise KeyError(f"no {task} results stored for {road.encoding!r}")
        for entry in self.results[task, road.encoding]["settings"]:
            if (entry["model"], entry["method"], entry["multiple"]) == (
                road.model,
                road.method,
                road.multiple,
            ):
                return entry
        raise KeyError(f"no {task} setting stored for {road}")

    def distances(self, results: dict, multiple: int) -> np.ndarray:
        """Each answer's needle distance at ``multiple`` x L, in stored order."""
        config = TrainConfig.from_dict(results["config"])
        eval_config = EvalConfig.from_dict(results["eval_config"])
        key = (repr(config.task), repr(eval_config), config.train_length, multiple)
        if key not in self._distances:
            self._distances[key] = answer_distances(
                config,
                eval_config,
                multiple * config.train_length,
                list(range(eval_config.num_chunks)),
            )
        return self._distances[key]

    def passkey(self, road: Road, answers: str = "all") -> tuple[np.ndarray, ...]:
        """(clusters, correct as floats, counted) of ``road`` on ``answers``."""
        if answers not in ANSWERS:
            raise ValueError(f"answers must be one of {ANSWERS}, got {answers!r}")
        results = self.results["passkey", road.encoding]
        entry = self._setting("passkey", road)
        correct = np.array(
            [c == "1" for chunk in entry["chunks"] for c in chunk["correct"]],
            dtype=float,
        )
        config = TrainConfig.from_dict(results["config"])
        clusters = np.arange(correct.size) // config.task.num_pairs
        if answers == "all":
            return clusters, correct, np.ones(correct.size, dtype=bool)
        longest = config.task.distance_range(config.train_length)[1]
        return clusters, correct, self.distances(results, road.multiple) > longest

    def text(self, road: Road, protocol: str = "whole_window") -> np.ndarray:
        """Per-window loss of ``road`` (bits per byte) under ``protocol``."""
        if protocol not in PROTOCOLS:
            raise ValueError(f"protocol must be one of {PROTOCOLS}, got {protocol!r}")
        return np.asarray(self._setting("text", road)[protocol]) / math.log(2)


def seed_test(seed: RoadsSeed, comparison: RoadComparison) -> SeedTest:
    """One seed's contrast: one sample per set of sequences or windows (paired inside it,
    independent between them)."""
    groups: dict[object, list[tuple[float, np.ndarray, np.ndarray, np.ndarray]]] = {}
    for coefficient, road in comparison.terms:
        if comparison.task == "passkey":
            clusters, scores, counted = seed.passkey(road, comparison.answers)
            group = road.multiple
        else:
            scores = seed.text(road, comparison.protocol)
            clusters = np.arange(scores.size)
            counted = np.ones(scores.size, dtype=bool)
            # fixed-target windows score the same bytes at every length
            group = road.multiple if comparison.protocol == "whole_window" else None
        groups.setdefault(group, []).append((coefficient, clusters, scores, counted))
    samples = []
    for terms in groups.values():
        clusters = terms[0][1]
        if any(c.shape != clusters.shape for _, c, _, _ in terms):
            raise ValueError("the settings of one sample must score the same answers")
        samples.append(Sample(clusters, tuple((c, s, k) for c, _, s, k in terms)))
    return contrast_test(samples)


def comparison_holds(
    comparison: RoadComparison, tests: list[SeedTest], minimum_seeds: int
) -> bool:
    """The inference procedure's verdict on one comparison over the seeds' tests."""
    if comparison.kind == "equivalence":
        margin = EQUIVALENCE_BITS if comparison.task == "text" else EQUIVALENCE_MARGIN
        return equivalence_holds(tests, margin, minimum_seeds=minimum_seeds)
    return direction_holds(tests, minimum_seeds=minimum_seeds)


def opposite(comparison: RoadComparison) -> RoadComparison:
    """The same comparison with the other direction claimed."""
    if comparison.kind != "direction":
        raise ValueError(f"only a direction has an opposite, got {comparison.kind!r}")
    terms = tuple((-c, road) for c, road in comparison.terms)
    return RoadComparison(
        comparison.task, terms, answers=comparison.answers, protocol=comparison.protocol
    )


#: A row's verdict: every comparison holds; some comparison's opposite holds; neither.
VERDICTS = ("agrees", "disagrees", "no clear winner")


def term_means(seed: RoadsSeed, comparison: RoadComparison) -> list[float]:
    """Each term's mean (accuracy, or bits per byte) in one seed, in ``terms`` order."""
    means = []
    for _, road in comparison.terms:
        if comparison.task == "passkey":
            _, scores, counted = seed.passkey(road, comparison.answers)
            means.append(float(scores[counted].mean()))
        else:
            means.append(float(seed.text(road, comparison.protocol).mean()))
    return means


def road_verdicts(
    seeds: dict[int, RoadsSeed],
    claims: tuple[RoadClaim, ...],
    minimum_seeds: int = len(ROADS_SEEDS),
) -> list[dict]:
    """One row per claim: key, source, statement, its :data:`VERDICTS` entry
    ("agrees" also as a bool), and per comparison whether it and its opposite hold, and
    each seed's difference, z, 90% interval and term means."""
    rows = []
    for claim in claims:
        details = []
        for comparison in claim.comparisons:
            tests = [seed_test(seeds[seed], comparison) for seed in sorted(seeds)]
            against = comparison.kind == "direction" and direction_holds(
                [seed_test(seeds[s], opposite(comparison)) for s in sorted(seeds)],
                minimum_seeds=minimum_seeds,
            )
            details.append(
                {
                    "holds": comparison_holds(comparison, tests, minimum_seeds),
                    "opposite_holds": against,
                    "differences": [t.difference for t in tests],
                    "z": [t.z for t in tests],
                    "intervals": [t.interval for t in tests],
                    "means": [term_means(seeds[s], comparison) for s in sorted(seeds)],
                }
            )
        agrees = all(d["holds"] for d in details)
        against = any(d["opposite_holds"] for d in details)
        rows.append(
            {
                "key": claim.key,
                "source": claim.source,
                "statement": claim.statement,
                "task": claim.comparisons[0].task,
                "agrees": agrees,
                "verdict": VERDICTS[0] if agrees else VERDICTS[1 if against else 2],
                "comparisons": details,
            }
        )
    return rows


_ALIBI_16, _ALIBI_1 = Road("alibi", 16), Road("alibi", 1)
_NOPE_2, _NOPE_16 = Road("nope", 2), Road("nope", 16)

#: The page's agreement table, fixed before the holdout seeds were trained. Each claim
#: is about one task; the lengths are the first multiple where RoPE's base model fails
#: on that task (2L on text, 4L on the passkey task) or the longest (16L). Text claims
#: read the whole-window protocol unless they compare one encoding with itself at two
#: lengths, which the fixed-target protocol scores on the same bytes.
ROAD_CLAIMS: tuple[RoadClaim, ...] = (
    RoadClaim(
        "sinusoidal-extrapolates",
        "vaswani2017attention",
        "sinusoidal positions extrapolate better than learned ones",
        (lower_loss(Road("sinusoidal", 2), Road("learned", 2)),),
    ),
    RoadClaim(
        "alibi-flat",
        "press2022train",
        "ALiBi's loss does not rise past L, while sinusoidal and RoPE's do",
        (
            lower_loss(_ALIBI_16, _ALIBI_1, "fixed_target"),
            lower_loss(_ALIBI_16, Road("sinusoidal", 16)),
            lower_loss(_ALIBI_16, Road("rope", 16)),
        ),
    ),
    RoadClaim(
        "t5-between",
        "press2022train",
        "T5's bias extrapolates better than sinusoidal and RoPE, not as well as ALiBi",
        (
            lower_loss(Road("t5", 16), Road("sinusoidal", 16)),
            lower_loss(Road("t5", 16), Road("rope", 16)),
            lower_loss(_ALIBI_16, Road("t5", 16)),
        ),
    ),
    RoadClaim(
        "alibi-retrieval",
        "alkhateeb2023position",
        "ALiBi's flat loss does not carry retrieval past L",
        (more_accurate(_ALIBI_1, _ALIBI_16),),
    ),
    RoadClaim(
        "nope-absolute-passkey",
        "kazemnejad2023impact",
        "NoPE extrapolates better than learned and sinusoidal positions",
        (
            more_accurate(_NOPE_2, Road("learned", 2)),
            more_accurate(_NOPE_2, Road("sinusoidal", 2)),
        ),
    ),
    RoadClaim(
        "nope-absolute-text",
        "kazemnejad2023impact",
        "NoPE extrapolates better than learned and sinusoidal positions",
        (
            lower_loss(_NOPE_2, Road("learned", 2)),
            lower_loss(_NOPE_2, Road("sinusoidal", 2)),
        ),
    ),
    RoadClaim(
        "nope-relative-passkey",
        "kazemnejad2023impact",
        "NoPE extrapolates better than ALiBi and RoPE",
        (
            more_accurate(_NOPE_16, _ALIBI_16),
            more_accurate(_NOPE_16, Road("rope", 16)),
        ),
    ),
    RoadClaim(
        "nope-relative-text",
        "kazemnejad2023impact",
        "NoPE extrapolates better than ALiBi and RoPE",
        (
            lower_loss(_NOPE_16, _ALIBI_16),
            lower_loss(_NOPE_16, Road("rope", 16)),
        ),
    ),
    RoadClaim(
        "p-rope-passkey",
        "barbero2024round",
        "p-RoPE holds up past L better than RoPE",
        (more_accurate(Road("p_rope", 4), Road("rope", 4)),),
    ),
    RoadClaim(
        "p-rope-text",
        "barbero2024round",
        "p-RoPE holds up past L better than RoPE",
        (lower_loss(Road("p_rope", 2), Road("rope", 2)),),
    ),
    RoadClaim(
        "p-rope-at-l",
        "barbero2024round",
        "p-RoPE's loss at L is lower than RoPE's",
        (lower_loss(Road("p_rope", 1), Road("rope", 1)),),
    ),
    RoadClaim(
        "hybrid-passkey",
        "yang2025rope",
        "a hybrid of RoPE and NoPE layers retrieves past L better than RoPE",
        (more_accurate(Road("hybrid", 4), Road("rope", 4)),),
    ),
    RoadClaim(
        "hybrid-text",
        "yang2025rope",
        "a hybrid of RoPE and NoPE layers holds up past L better than RoPE",
        (lower_loss(Road("hybrid", 2), Road("rope", 2)),),
    ),
)


def read_roads(
    root: Path = ROADS_DIR, seeds: tuple[int, ...] = ROADS_SEEDS
) -> dict[int, RoadsSeed]:
    """Every stored ``results.json`` under ``root`` for ``seeds``, by seed."""
    root = Path(root)
    out = {}
    for seed in seeds:
        results = {}
        for path in sorted(root.glob(f"*/*/seed_{seed}/{RESULTS}")):
            task, encoding = path.parts[-4], path.parts[-3]
            if task in TASKS:
                results[task, encoding] = json.loads(path.read_text(encoding="utf-8"))
        if not results:
            raise FileNotFoundError(f"no results stored for seed {seed} under {root}")
        out[seed] = RoadsSeed(results)
    return out


def main(argv: list[str] | None = None) -> int:
    """``python -m posenc.experiments.roads_claims [--dir DIR] [--seeds ...]``: every row of
    :data:`ROAD_CLAIMS` judged on the stored results of ``--seeds`` (at least three)."""
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m posenc.experiments.roads_claims",
        description="Other roads' agreement table on the stored results of some seeds "
        "(train them with roads_cli all --seeds ...).",
    )
    parser.add_argument("--dir", type=Path, default=ROADS_DIR, help="runs' folder")
    parser.add_argument(
        "--seeds", type=int, nargs="+", default=list(ROADS_SEEDS), help="seeds"
    )
    args = parser.parse_args(argv)
    if len(args.seeds) < 3:
        parser.error("--seeds needs at least three seeds")
    seeds = read_roads(args.dir, tuple(args.seeds))
    rows = road_verdicts(seeds, ROAD_CLAIMS, minimum_seeds=len(seeds))
    rate = 0.5 ** len(seeds)
    print(
        f"seeds {' '.join(map(str, sorted(seeds)))}: a false claim agrees at most {rate:.3g}"
    )
    for row in rows:
        print(f"{row['verdict']:16s} {row['key']:24s} {row['statement']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
