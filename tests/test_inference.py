"""Chapter 6's inference procedure: cluster-robust contrasts, the across-seed rules, the
claims table on the stored runs. The standard errors are checked against independent
computations (the textbook paired t, and a simulation of the null with shared sequences)."""

from pathlib import Path

import numpy as np
import pytest

from posenc.experiments import inference
from posenc.experiments.inference import Sample, SeedTest, contrast_test

ROOT = Path(__file__).resolve().parents[1]


def paired(first, second, clusters, counted=None):
    counted = np.ones(len(first), dtype=bool) if counted is None else counted
    return contrast_test(
        [Sample(np.asarray(clusters), ((1.0, first, counted), (-1.0, second, counted)))]
    )


def test_one_answer_per_cluster_is_the_textbook_paired_standard_error():
    rng = np.random.default_rng(0)
    first, second = rng.random(200) < 0.7, rng.random(200) < 0.6
    test = paired(first, second, np.arange(200))
    differences = first.astype(float) - second
    assert test.difference == pytest.approx(differences.mean(), rel=1e-14)
    assert test.standard_error == pytest.approx(
        differences.std(ddof=1) / np.sqrt(200), rel=1e-12
    )


def test_equal_clusters_are_the_paired_standard_error_of_cluster_means():
    rng = np.random.default_rng(1)
    first, second = rng.random((300, 4)) < 0.8, rng.random((300, 4)) < 0.7
    clusters = np.repeat(np.arange(300), 4)
    test = paired(first.ravel(), second.ravel(), clusters)
    means = (first.astype(float) - second).mean(axis=1)  # one difference per sequence
    assert test.standard_error == pytest.approx(
        means.std(ddof=1) / np.sqrt(300), rel=1e-12
    )


def test_pairing_removes_a_sequence_effect_shared_by_both_methods():
    """Under no difference, with four answers per sequence driven by one sequence effect,
    z = d / se has unit spread; treating the answers as independent gives too small an se."""
    rng = np.random.default_rng(2)
    clustered, naive = [], []
    for _ in range(400):
        hard = (
            rng.random(256) < 0.5
        )  # the sequence decides whether all its answers are hard
        noise = rng.random((256, 4))
        first = np.where(hard[:, None], noise < 0.2, noise < 0.9).ravel()
        second = np.where(
            hard[:, None], rng.random((256, 4)) < 0.2, rng.random((256, 4)) < 0.9
        )
        clusters = np.repeat(np.arange(256), 4)
        clustered.append(paired(first, second.ravel(), clusters).z)
        naive.append(paired(first, second.ravel(), np.arange(1024)).z)
    assert 0.85 < np.std(clustered) < 1.15
    # the sequence effect is shared by A and B: pairing removes it, so here even the
    # answers treated as independent give a calibrated z
    assert 0.85 < np.std(naive) < 1.15


def test_a_sequence_effect_that_differs_between_methods_needs_the_cluster_error():
    rng = np.random.default_rng(3)
    clustered, naive = [], []
    for _ in range(400):
        effect = rng.normal(0, 1, 256)  # how much a sequence favours A over B
        p_first = 1 / (1 + np.exp(-(1.0 + effect)))
        p_second = 1 / (1 + np.exp(-(1.0 - effect)))
        first = (rng.random((256, 4)) < p_first[:, None]).ravel()
        second = (rng.random((256, 4)) < p_second[:, None]).ravel()
        clustered.append(paired(first, second, np.repeat(np.arange(256), 4)).z)
        naive.append(paired(first, second, np.arange(1024)).z)
    assert 0.85 < np.std(clustered) < 1.15
    assert np.std(naive) > 1.3  # answers treated as independent: overconfident


def test_counted_answers_only_and_independent_samples_add_variances():
    rng = np.random.default_rng(4)
    scores = rng.random(400) < 0.5
    counted = rng.random(400) < 0.3
    clusters = np.arange(400) // 4
    alone = contrast_test([Sample(clusters, ((1.0, scores, counted),))])
    assert alone.difference == pytest.approx(scores[counted].mean())
    other = contrast_test([Sample(clusters, ((1.0, ~scores, counted),))])
    both = contrast_test(
        [
            Sample(clusters, ((1.0, scores, counted),)),
            Sample(clusters, ((-1.0, ~scores, counted),)),
        ]
    )
    assert both.difference == pytest.approx(alone.difference - other.difference)
    assert both.standard_error == pytest.approx(
        np.hypot(alone.standard_error, other.standard_error)
    )


def test_bad_samples_are_refused_by_name():
    with pytest.raises(ValueError, match="scores and counted"):
        contrast_test([Sample(np.arange(4), ((1.0, np.ones(3), np.ones(3, bool)),))])
    with pytest.raises(ValueError, match="at least one answer"):
        contrast_test([Sample(np.arange(4), ((1.0, np.ones(4), np.zeros(4, bool)),))])
    with pytest.raises(ValueError, match="at least 2 clusters"):
        contrast_test([Sample(np.zeros(4), ((1.0, np.ones(4), np.ones(4, bool)),))])
    with pytest.raises(ValueError, match="samples"):
        contrast_test([])
    with pytest.raises(ValueError, match="at least 5 seeds"):
        inference.direction_holds([SeedTest(1.0, 0.1)] * 4)
    with pytest.raises(ValueError, match="margin"):
        inference.equivalence_holds([SeedTest(0.0, 0.1)] * 5, margin=0.0)


def test_direction_needs_every_seed_beyond_its_noise():
    strong = SeedTest(0.05, 0.01)  # z = 5
    weak = SeedTest(0.01, 0.01)  # z = 1: ahead, but inside its own noise
    assert inference.direction_holds([strong] * 5)
    assert not inference.direction_holds([strong] * 4 + [weak])
    assert not inference.direction_holds([strong] * 4 + [SeedTest(-0.05, 0.01)])
    assert inference.DIRECTION_FALSE_POSITIVE[5] == 1 / 32


def test_equivalence_needs_every_interval_inside_the_margin():
    tight = SeedTest(0.002, 0.002)  # 90% interval about (-0.0013, 0.0053)
    assert inference.equivalence_holds([tight] * 5)
    wide = SeedTest(0.0, 0.007)  # interval +/- 0.0115: exceeds a margin of 0.01
    assert not inference.equivalence_holds([tight] * 4 + [wide])
    assert not inference.equivalence_holds([tight] * 4 + [SeedTest(0.02, 0.001)])


def test_a_direction_claim_is_rare_under_the_null_of_no_difference():
    """Simulated runs with no difference between A and B: the rule almost never fires."""
    rng = np.random.default_rng(5)
    fired = 0
    for _ in range(300):
        tests = []
        for _ in range(5):
            first, second = rng.random(512 * 4) < 0.9, rng.random(512 * 4) < 0.9
            tests.append(paired(first, second, np.repeat(np.arange(512), 4)))
        fired += inference.direction_holds(tests)
    assert fired == 0  # each seed fires with probability 0.05; all five: 3e-7
