"""Other roads' claims: each seed's test against a direct computation from the stored
strings and losses, the grouping into paired and independent samples, and bad input."""

import json
import math
from pathlib import Path

import numpy as np
import pytest

from posenc.experiments import roads_claims as rc
from posenc.experiments import roads_summary as rs
from posenc.experiments.inference import SeedTest

ROOT = Path(__file__).resolve().parents[1] / "book" / "data" / "other_roads"


def _stored(task: str, encoding: str, seed: int = 0) -> dict:
    return json.loads(
        (ROOT / task / encoding / f"seed_{seed}" / "results.json").read_text()
    )


@pytest.fixture(scope="module")
def seed0() -> rc.RoadsSeed:
    return rc.read_roads(ROOT, (0,))[0]


def _correct(results: dict, multiple: int) -> np.ndarray:
    (entry,) = [
        s
        for s in results["settings"]
        if (s["model"], s["method"], s["multiple"]) == ("base", "none", multiple)
    ]
    return np.array(
        [[int(c) for c in chunk["correct"]] for chunk in entry["chunks"]], dtype=float
    ).reshape(-1, 4)  # one row per sequence: its four queries


def test_paired_passkey_test_is_the_cluster_robust_difference(seed0):
    """Same length: the difference of accuracies, se from per-sequence sums of A - B."""
    a = _correct(_stored("passkey", "alibi"), 4)
    b = _correct(_stored("passkey", "sinusoidal"), 4)
    test = rc.seed_test(
        seed0, rc.more_accurate(rc.Road("alibi", 4), rc.Road("sinusoidal", 4))
    )
    per_sequence = (a - b).sum(axis=1)
    d = per_sequence.sum() / a.size
    j = per_sequence.size
    se = math.sqrt(j / (j - 1) * np.sum((per_sequence - 4 * d) ** 2)) / a.size
    assert test.difference == pytest.approx(d, abs=1e-12)
    assert test.standard_error == pytest.approx(se, rel=1e-12)


def test_two_lengths_are_independent_samples(seed0):
    """1L against 16L: other sequences, so the variances add."""
    one, sixteen = rc.Road("alibi", 1), rc.Road("alibi", 16)
    both = rc.seed_test(seed0, rc.more_accurate(one, sixteen))
    parts = [
        rc.seed_test(
            seed0, rc.RoadComparison("passkey", ((1.0, road),))
        )  # a single mean and its se
        for road in (one, sixteen)
    ]
    assert both.difference == pytest.approx(
        parts[0].difference - parts[1].difference, abs=1e-12
    )
    assert both.standard_error == pytest.approx(
        math.hypot(parts[0].standard_error, parts[1].standard_error), rel=1e-12
    )


def test_far_answers_are_the_needles_beyond_training(seed0):
    clusters, correct, counted = seed0.passkey(rc.Road("sinusoidal", 4), "far")
    assert 0 < counted.sum() < counted.size
    assert clusters.size == correct.size == counted.size
    _, _, near_one = seed0.passkey(rc.Road("sinusoidal", 1), "far")
    assert not near_one.any()  # at L every needle is within training's distances


def test_text_losses_are_bits_per_byte_and_fixed_targets_pair_lengths(seed0):
    stored = _stored("text", "t5")
    (entry,) = [s for s in stored["settings"] if s["multiple"] == 16]
    bits = seed0.text(rc.Road("t5", 16), "fixed_target")
    np.testing.assert_allclose(bits, np.array(entry["fixed_target"]) / math.log(2))
    one, sixteen = rc.Road("t5", 1), rc.Road("t5", 16)
    test = rc.seed_test(seed0, rc.lower_loss(one, sixteen, "fixed_target"))
    difference = bits - seed0.text(one, "fixed_target")
    n = difference.size
    se = math.sqrt(n / (n - 1) * np.sum((difference - difference.mean()) ** 2)) / n
    assert test.difference == pytest.approx(difference.mean(), abs=1e-12)
    assert test.standard_error == pytest.approx(se, rel=1e-12)


def test_verdicts_follow_every_seed():
    strong, weak = SeedTest(0.5, 0.1), SeedTest(0.1, 0.1)
    comparison = rc.more_accurate(rc.Road("alibi", 1), rc.Road("alibi", 16))
    assert rc.comparison_holds(comparison, [strong] * 3, minimum_seeds=3)
    assert not rc.comparison_holds(comparison, [strong, strong, weak], minimum_seeds=3)
    with pytest.raises(ValueError, match="at least 5 seeds"):
        rc.comparison_holds(comparison, [strong] * 3, minimum_seeds=5)
    same = rc.same_loss(rc.Road("alibi", 1), rc.Road("alibi", 16))
    assert rc.comparison_holds(same, [SeedTest(0.0, 0.005)] * 3, minimum_seeds=3)
    assert not rc.comparison_holds(same, [SeedTest(0.0, 0.02)] * 3, minimum_seeds=3)


def test_bad_input_names_the_argument(seed0):
    with pytest.raises(ValueError, match="answers"):
        seed0.passkey(rc.Road("alibi", 4), "middle")
    with pytest.raises(ValueError, match="protocol"):
        seed0.text(rc.Road("t5", 4), "sliding")
    with pytest.raises(KeyError, match="setting"):
        seed0.passkey(rc.Road("alibi", 3))
    with pytest.raises(FileNotFoundError, match="seed 99"):
        rc.read_roads(ROOT, (99,))


def test_accuracy_by_distance_pools_the_answers_of_each_length(seed0):
    """One bin over everything at one length is that setting's accuracy; split bins
    match a direct binning of the setting's stored distances."""
    from posenc.experiments.config import EvalConfig, TrainConfig, eval_batch

    results = _stored("passkey", "t5")
    whole = rs.accuracy_by_distance({0: seed0}, rc.Road("t5", 1), [0, 10**6], (4,))
    assert whole[0, 0] == pytest.approx(_correct(results, 4).mean(), abs=1e-12)
    edges = np.array([0, 128, 512, 4096])
    split = rs.accuracy_by_distance({0: seed0}, rc.Road("t5", 1), edges, (1, 16))
    right, count = np.zeros(3), np.zeros(3)
    config = TrainConfig.from_dict(results["config"])
    eval_config = EvalConfig.from_dict(results["eval_config"])
    for multiple in (1, 16):
        distances = np.concatenate(
            [
                eval_batch(config.task, eval_config, multiple * 128, chunk).distances
                for chunk in range(eval_config.num_chunks)
            ]
        ).reshape(-1)
        correct = _correct(results, multiple).reshape(-1)
        for j in range(3):
            inside = (distances >= edges[j]) & (distances < edges[j + 1])
            right[j] += correct[inside].sum()
            count[j] += inside.sum()
    np.testing.assert_allclose(split[0], right / count, rtol=1e-12)
    with pytest.raises(ValueError, match="edges"):
        rs.accuracy_by_distance({0: seed0}, rc.Road("t5", 1), [5, 5])


def test_loss_by_multiple_is_the_stored_mean_in_bits(seed0):
    results = _stored("text", "nope")
    means = rs.loss_by_multiple({0: seed0}, rc.Road("nope", 1), "fixed_target")
    for column, multiple in enumerate(rs.ROADS_MULTIPLES):
        (entry,) = [
            s
            for s in results["settings"]
            if (s["model"], s["method"], s["multiple"]) == ("base", "none", multiple)
        ]
        expected = np.mean(entry["fixed_target"]) / math.log(2)
        assert means[0, column] == pytest.approx(expected, rel=1e-12)


def test_a_claim_and_its_opposite_get_opposite_verdicts():
    seeds = rc.read_roads(ROOT)
    (claim,) = [c for c in rc.ROAD_CLAIMS if c.key == "p-rope-passkey"]
    flipped = rc.RoadClaim(
        "flipped", claim.source, "", tuple(rc.opposite(c) for c in claim.comparisons)
    )
    rows = rc.road_verdicts(seeds, (claim, flipped))
    assert [row["verdict"] for row in rows] == ["agrees", "disagrees"]
    assert rows[0]["agrees"] and not rows[1]["agrees"]
    with pytest.raises(ValueError, match="direction"):
        rc.opposite(rc.same_loss(rc.Road("alibi", 1), rc.Road("alibi", 16)))


def test_the_claims_table_is_well_formed():
    bib = (ROOT.parents[1] / "references.bib").read_text(encoding="utf-8")
    keys = [claim.key for claim in rc.ROAD_CLAIMS]
    assert len(set(keys)) == len(keys)
    for claim in rc.ROAD_CLAIMS:
        assert f"{{{claim.source}," in bib, claim.source
        assert len({c.task for c in claim.comparisons}) == 1, claim.key
        for comparison in claim.comparisons:
            for _, road in comparison.terms:
                assert road.model == "base" and road.method == "none", claim.key


def test_accuracy_by_multiple_is_each_settings_share_of_right_answers(seed0):
    results = _stored("passkey", "nope")
    means = rs.accuracy_by_multiple({0: seed0}, rs.Road("nope", 1), (1, 8))
    assert means.shape == (1, 2)
    for column, multiple in enumerate((1, 8)):
        assert means[0, column] == pytest.approx(_correct(results, multiple).mean())


def test_the_summary_table_prints_each_roads_means(seed0):
    seeds = {0: seed0}
    text = rs.summary_table(
        seeds, {"RoPE": rs.Road("rope", 1), "RoPE + YaRN": rs.Road("rope", 1, "yarn")}
    )
    header, lengths, plain, yarn = text.splitlines()
    assert "passkey" in header and lengths.split() == ["1L", "2L", "16L"] * 2
    values = plain.split()[1:]
    assert [float(v) for v in values[3:]] == pytest.approx(
        rs.loss_by_multiple(seeds, rs.Road("rope", 1), "whole_window", (1, 2, 16))[0],
        abs=0.005,
    )
    assert int(values[0]) == round(
        100 * rs.accuracy_by_multiple(seeds, rs.Road("rope", 1), (1,))[0, 0]
    )
    assert yarn.split()[3] == "-" and yarn.split()[6] == "-"  # no training-free 1L


def test_the_command_line_prints_every_row(capsys):
    assert rc.main(["--dir", str(ROOT), "--seeds", "0", "1", "2"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "0.125" in lines[0] and len(lines) == 1 + len(rc.ROAD_CLAIMS)
    with pytest.raises(SystemExit):
        rc.main(["--seeds", "0", "1"])
