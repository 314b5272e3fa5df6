"""One inference procedure for every comparison chapter 6 makes. numpy only.

Two evaluated settings A and B are compared on one metric (accuracy on all needles or on far
needles, or attention entropy), seed by seed, then across seeds:

1. **Within a seed**, the unit is a *cluster*: a sequence for accuracy (its four queries
   share the sequence, so they are not independent answers), a chunk of 32 sequences for
   entropy (stored as sums per chunk). The difference d = mean(A) - mean(B) is a ratio of
   sums over clusters; its standard error is the cluster-robust (linearised) one,

       se(d)^2 = J / (J - 1) * sum_j (S_j - d n_j)^2 / (sum_j n_j)^2,

   with S_j the cluster's summed difference and n_j its number of answers. When A and B saw
   the same sequences (same length: every method, seed and model is evaluated on the same
   sequences of each length) the test is *paired*: S_j sums A - B answer by answer. Across
   lengths the sequences differ and the two means are independent: se^2 = se_A^2 + se_B^2.
   z = d / se.
2. **Across seeds**, the unit is a training run. "A beats B" holds when z > Z_ONE_SIDED
   (one-sided 5%) in *every* seed. If A and B were equally good in every run, each seed would
   pass with probability at most 5%; if they are equally good only on average over training
   runs (each run prefers one of them, either way equally likely), all k runs favour A with
   probability 2^-k: **the false-positive rate of a direction claim is at most 1/32 with five
   seeds.** A claim that fails is "not shown", whatever the means say.
3. **"No difference"** is claimed only when, in every seed, the 90% interval d +/- 1.645 se
   lies inside +/- EQUIVALENCE_MARGIN, fixed before looking (two one-sided tests at 5% each
   seed: a run whose true difference is at least the margin passes with probability at most
   5%). Otherwise it is "not shown", with the per-seed differences.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: One-sided 5% point of the standard normal.
Z_ONE_SIDED = 1.6448536269514722
#: The largest accuracy difference called "no difference": one point (about 20 of the 2048
#: answers of a setting). Fixed before the claims were evaluated.
EQUIVALENCE_MARGIN = 0.01
#: The false-positive rate of a direction claim with ``k`` seeds (sign test, all k agree).
DIRECTION_FALSE_POSITIVE = {k: 0.5**k for k in range(1, 11)}


@dataclass(frozen=True)
class SeedTest:
    """One seed's difference A - B, its cluster-robust standard error and z = d / se."""

    difference: float
    standard_error: float

    @property
    def z(self) -> float:
        if self.standard_error > 0:
            return self.difference / self.standard_error
        return 0.0 if self.difference == 0 else float(np.sign(self.difference) * np.inf)

    @property
    def interval(self) -> tuple[float, float]:
        """The two-sided 90% interval, d +/- 1.645 se."""
        half = Z_ONE_SIDED * self.standard_error
        return self.difference - half, self.difference + half


@dataclass(frozen=True)
class Sample:
    """The answers of one set of evaluation sequences and the terms of a contrast on them.

    ``clusters``: each answer's cluster id (its sequence, or its chunk), shape (answers,).
    ``terms``: (coefficient, scores, counted) triples, scores and counted of shape
    (answers,): the contrast adds coefficient * mean(scores[counted]) for each term.
    """

    clusters: np.ndarray
    terms: tuple[tuple[float, np.ndarray, np.ndarray], ...]


def _sample_contrast(sample: Sample) -> tuple[float, float]:
    """Value and variance of sum_k c_k mean_k on one sample, linearised over clusters."""
    clusters = np.asarray(sample.clusters)
    if clusters.ndim != 1 or not sample.terms:
        raise ValueError("a sample needs 1-d clusters and at least one term")
    ids, index = np.unique(clusters, return_inverse=True)
    if ids.size < 2:
        raise ValueError(f"a sample needs at least 2 clusters, got {ids.size}")
    value, influence = 0.0, np.zeros(ids.size)
    for coefficient, scores, counted in sample.terms:
        scores = np.asarray(scores, dtype=float)
        counted = np.asarray(counted, dtype=bool)
        if scores.shape != clusters.shape or counted.shape != clusters.shape:
            raise ValueError(
                f"scores and counted must have the clusters' shape {clusters.shape}, "
                f"got {scores.shape} and {counted.shape}"
            )
        if not np.all(np.isfinite(scores[counted])):
            raise ValueError("scores must be finite where counted")
        total = counted.sum()
        if total == 0:
            raise ValueError("every term must count at least one answer")
        sums = np.bincount(
            index, weights=np.where(counted, scores, 0.0), minlength=ids.size
        )
        counts = np.bincount(index, weights=counted.astype(float), minlength=ids.size)
        mean = sums.sum() / total
        value += coefficient * mean
        influence += coefficient * (sums - mean * counts) / total
    variance = ids.size / (ids.size - 1) * np.sum(influence**2)
    return float(value), float(variance)


def contrast_test(samples: list[Sample]) -> SeedTest:
    """One seed's test of a contrast of means: paired within each sample (the terms share
    its clusters), independent between samples (other sequences), variances added."""
    if not samples:
        raise ValueError("samples must not be empty")
    parts = [_sample_contrast(sample) for sample in samples]
    return SeedTest(
        sum(value for value, _ in parts), float(np.sqrt(sum(v for _, v in parts)))
    )


def direction_holds(tests: list[SeedTest], *, minimum_seeds: int = 5) -> bool:
    """Whether A beats B: z > Z_ONE_SIDED in every seed (at least ``minimum_seeds``;
    "Other roads" passes 3 and states the rate, 1/8, where it does)."""
    if len(tests) < minimum_seeds:
        raise ValueError(
            f"tests must hold at least {minimum_seeds} seeds, got {len(tests)}"
        )
    return all(test.z > Z_ONE_SIDED for test in tests)


def equivalence_holds(
    tests: list[SeedTest], margin: float = EQUIVALENCE_MARGIN, *, minimum_seeds: int = 5
) -> bool:
    """Whether |A - B| < margin is shown: every seed's 90% interval inside (-margin, margin)."""
    if len(tests) < minimum_seeds:
        raise ValueError(
            f"tests must hold at least {minimum_seeds} seeds, got {len(tests)}"
        )
    if not margin > 0:
        raise ValueError(f"margin must be positive, got {margin}")
    return all(
        -margin < low and high < margin for low, high in (t.interval for t in tests)
    )
