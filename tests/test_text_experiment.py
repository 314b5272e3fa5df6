"""The real-text experiment: its plan, checkpoints, command line and claims machinery."""

import dataclasses
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from posenc.experiments import corpus
from posenc.experiments.inference import Sample, contrast_test
from posenc.experiments.text_claims import (
    EQUIVALENCE_BITS,
    TEXT_CLAIMS,
    Run,
    TextClaim,
    TextEvidence,
    lower,
    read_text_evidence,
    same_loss,
    seed_test,
    text_substitutions,
    text_verdicts,
    unigram_scores,
)
from posenc.experiments.text_config import (
    TEXT_METHODS,
    TextConfig,
    TextEvalConfig,
    protocol_windows,
    text_plan,
)


def test_the_plan_scores_every_method_beyond_l_and_each_fine_tune_everywhere():
    config, eval_config = TextConfig(), TextEvalConfig()
    plan = text_plan(config, eval_config)
    base = [s for s in plan if s["model"] == "base"]
    assert len(base) == 1 + len(TEXT_METHODS) * 4
    assert {s["method"] for s in base if s["multiple"] == 1} == {"none"}
    assert all(s["factor"] == s["multiple"] for s in base)
    tuned = [s for s in plan if s["model"] != "base"]
    assert {(s["model"], s["method"]) for s in tuned} == {
        ("finetune_linear", "linear"),
        ("finetune_yarn", "yarn"),
    }
    assert {s["factor"] for s in tuned} == {4.0} and len(tuned) == 10
    assert TextConfig.from_dict(config.to_dict()) == config
    assert TextEvalConfig.from_dict(eval_config.to_dict()) == eval_config
    with pytest.raises(ValueError, match="vocab_size"):
        TextConfig(model=dataclasses.replace(config.model, vocab_size=136))


def test_protocol_windows_hold_the_budget_and_share_the_fixed_targets():
    config, eval_config = TextConfig(), TextEvalConfig()
    test = corpus.byte_tokens(corpus.load_split()["test"])
    scored = {}
    for multiple in eval_config.multiples:
        whole, fixed = protocol_windows(test, config, eval_config, multiple)
        length = multiple * config.train_length
        assert whole.targets.shape == (eval_config.whole_window_bytes // length, length)
        assert fixed.targets.shape == (eval_config.fixed_target_count, length)
        scored[multiple] = fixed.targets[:, -config.train_length :]
    for multiple in eval_config.multiples:
        np.testing.assert_array_equal(scored[multiple], scored[1])
    positions = np.arange(len(test))  # windows of positions: where each one ends
    ends = protocol_windows(positions, config, eval_config, 16)[1].tokens[:, -1]
    assert ends[-1] > 0.9 * len(test)  # spread over the whole test part
    assert np.all(np.diff(ends) >= config.train_length)


def fake_evidence(seed, shift, noise=0.01, windows=40):
    """A seed whose base model at 2L scores ``shift`` nats above plain RoPE at 1L, windows aside."""
    rng = np.random.default_rng(seed)
    config = TextConfig(seed=seed)
    eval_config = TextEvalConfig()
    base = rng.normal(1.5, 0.3, windows)
    settings = [
        {
            "model": "base",
            "method": "none",
            "factor": 1.0,
            "multiple": 1,
            "whole_window": base.tolist(),
            "fixed_target": base.tolist(),
        },
        {
            "model": "base",
            "method": "none",
            "factor": 2.0,
            "multiple": 2,
            "whole_window": (base + shift + rng.normal(0, noise, windows)).tolist(),
            "fixed_target": (base + shift + rng.normal(0, noise, windows)).tolist(),
        },
        {
            "model": "base",
            "method": "yarn",
            "factor": 2.0,
            "multiple": 2,
            "whole_window": (base + rng.normal(0, noise, windows)).tolist(),
            "fixed_target": (base + rng.normal(0, noise, windows)).tolist(),
        },
    ]
    results = {
        "config": config.to_dict(),
        "eval_config": eval_config.to_dict(),
        "settings": settings,
    }
    train_log = {"finetune": {}}
    return TextEvidence(results, train_log)


def test_a_seed_test_is_the_window_paired_contrast_in_bits():
    evidence = fake_evidence(0, 0.5)
    comparison = lower(Run("yarn", 2), Run("none", 2))
    test = seed_test(evidence, comparison)
    none = evidence.scores("whole_window", Run("none", 2))
    yarn = evidence.scores("whole_window", Run("yarn", 2))
    differences = none - yarn
    assert test.difference == pytest.approx(differences.mean())
    # one answer per cluster: the paired standard error with the J / (J - 1) factor
    assert test.standard_error == pytest.approx(differences.std(ddof=1) / math.sqrt(40))
    assert evidence.scores("whole_window", Run("linear", 1)) is evidence.scores(
        "whole_window", Run("none", 1)
    )
    # across lengths the whole windows differ: independent samples, variances added
    across = seed_test(evidence, lower(Run("none", 1), Run("none", 2)))
    first = contrast_test([Sample(np.arange(40), ((1.0, none, np.ones(40, bool)),))])
    second = contrast_test(
        [
            Sample(
                np.arange(40),
                (
                    (
                        1.0,
                        evidence.scores("whole_window", Run("none", 1)),
                        np.ones(40, bool),
                    ),
                ),
            )
        ]
    )
    assert across.standard_error == pytest.approx(
        math.hypot(first.standard_error, second.standard_error)
    )
    with pytest.raises(KeyError, match="ntk"):
        seed_test(evidence, lower(Run("ntk", 2), Run("none", 2)))
    with pytest.raises(ValueError, match="protocol"):
        seed_test(evidence, lower(Run("yarn", 2), Run("none", 2), "perplexity"))


def test_verdicts_follow_the_procedure_in_both_directions():
    seeds = {seed: fake_evidence(seed, 0.5) for seed in range(5)}
    claims = (
        TextClaim(
            "breaks", "", (lower(Run("none", 1), Run("none", 2), "fixed_target"),)
        ),
        TextClaim(
            "reversed", "", (lower(Run("none", 2), Run("none", 1), "fixed_target"),)
        ),
        TextClaim(
            "same", "", (same_loss(Run("yarn", 2), Run("none", 1), "fixed_target"),)
        ),
        TextClaim(
            "not-same", "", (same_loss(Run("none", 2), Run("none", 1), "fixed_target"),)
        ),
    )
    verdicts = {row["key"]: row["verdict"] for row in text_verdicts(seeds, claims)}
    assert verdicts == {
        "breaks": "shown",
        "reversed": "not shown",
        "same": "shown",
        "not-same": "not shown",
    }
    # a shift inside the margin in one seed's noise is not "no difference" when noisy
    noisy = {
        seed: fake_evidence(seed, 0.0, noise=5 * EQUIVALENCE_BITS) for seed in range(5)
    }
    rows = text_verdicts(noisy, claims[2:3])
    assert rows[0]["verdict"] == "not shown"


def test_the_unigram_scores_are_the_corpus_bits_per_byte():
    config, eval_config = TextConfig(), TextEvalConfig()
    parts = corpus.load_split()
    log2_probs = corpus.unigram_log2_probs(corpus.byte_tokens(parts["train"]))
    whole, fixed = protocol_windows(
        corpus.byte_tokens(parts["test"]), config, eval_config, 2
    )
    scores = unigram_scores(config, eval_config, "whole_window", 2)
    assert scores.mean() == pytest.approx(
        corpus.bits_per_byte(log2_probs, whole.targets.ravel())
    )
    fixed_scores = unigram_scores(config, eval_config, "fixed_target", 16)
    assert fixed_scores.mean() == pytest.approx(
        corpus.bits_per_byte(log2_probs, fixed.targets[:, -128:].ravel())
    )
    with pytest.raises(ValueError, match="protocol"):
        unigram_scores(config, eval_config, "cost_curve", 1)


def test_the_plan_and_the_claims_import_no_torch():
    code = (
        "import sys, posenc.experiments.text_config, posenc.experiments.text_claims; "
        "print('torch' in sys.modules)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "False"


ROOT = Path(__file__).resolve().parents[1]
STORED = ROOT / "book" / "data" / "real_text"
HOLDOUT = ROOT / "book" / "data" / "real_text_holdout"


def test_the_corpus_checkpoints_results_and_holdout_fit_the_budget_of_15_mb():
    stored = (*STORED.rglob("*"), *HOLDOUT.rglob("*"), *corpus_files())
    files = [p for p in stored if p.is_file()]
    assert sum(p.stat().st_size for p in files) <= 15_000_000
    assert sorted(p.name for p in STORED.iterdir()) == [f"seed_{s}" for s in range(5)]


def corpus_files():
    return (ROOT / "src" / "posenc" / "experiments" / "kjv").iterdir()


def test_every_claim_keeps_its_verdict_with_a_holdout_seed_in_place_of_any_seed():
    evidence = read_text_evidence(STORED)
    holdout = read_text_evidence(HOLDOUT)
    assert sorted(evidence) == [0, 1, 2, 3, 4] and sorted(holdout) == [5, 6]
    expected = {
        row["key"]: row["verdict"] for row in text_verdicts(evidence, TEXT_CLAIMS)
    }
    assert set(expected.values()) == {"shown"}
    for key, swaps in text_substitutions(evidence, holdout).items():
        assert len(swaps) == 10 and set(swaps.values()) == {expected[key]}, key
