"""The experiment's torch-free half: its configuration and the analysis of stored results."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from posenc.experiments import analysis
from posenc.experiments.config import (
    DEFAULT_DIR,
    DEFAULT_SEEDS,
    EvalConfig,
    Phase,
    TrainConfig,
    seed_dir,
)

ROOT = Path(__file__).resolve().parents[1]
COMMITTED = ROOT / DEFAULT_DIR


@pytest.fixture(scope="module")
def committed():
    return analysis.read_all_results(COMMITTED)


def test_importing_the_analysis_and_the_explorer_grids_does_not_import_torch():
    code = (
        "import sys, posenc.experiments.analysis, posenc.experiments.config, "
        "posenc.book.explorer_grids; print('torch' in sys.modules)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "False"


def test_train_config_reads_the_stored_flat_configurations(committed):
    for seed in DEFAULT_SEEDS:
        stored = analysis.read_train_log(seed_dir(COMMITTED, seed))["config"]
        assert "max_steps" in stored and "base" not in stored  # the flat form
        config = TrainConfig.from_dict(stored)
        assert config == analysis.configs_of(committed[seed])[0]
        # every stored setting lands where it belongs
        assert config.seed == seed and config.train_length == stored["train_length"]
        assert config.base == Phase(
            steps=stored["max_steps"],
            batch_size=stored["batch_size"],
            learning_rate=stored["learning_rate"],
            warmup_steps=stored["warmup_steps"],
            eval_every=stored["eval_every"],
            val_sequences=stored["val_sequences"],
            target_accuracy=stored["target_accuracy"],
        )
        assert config.finetune == Phase(
            steps=stored["finetune_steps"],
            batch_size=stored["finetune_batch_size"],
            learning_rate=stored["finetune_learning_rate"],
            warmup_steps=stored["finetune_warmup_steps"],
            eval_every=stored["finetune_eval_every"],
            val_sequences=stored["finetune_val_sequences"],
        )
        assert config.model.to_dict() == stored["model"]
        assert TrainConfig.from_dict(config.to_dict()) == config


def test_phase_and_configs_reject_bad_input():
    with pytest.raises(ValueError, match="target_accuracy"):
        Phase(1, 1, 1e-3, 1, 1, 1, target_accuracy=1.5)
    with pytest.raises(TypeError, match="steps"):
        Phase(1.5, 1, 1e-3, 1, 1, 1)
    assert Phase(10, 1, 1e-3, 4, 1, 1).learning_rate_at(2) == pytest.approx(5e-4)
    assert EvalConfig.from_dict(EvalConfig().to_dict()) == EvalConfig()


def test_across_seeds_orders_values_by_seed_not_by_insertion(committed):
    shuffled = {seed: committed[seed] for seed in (3, 0, 4, 1, 2)}
    table = analysis.across_seeds(shuffled)
    key = ("base", "yarn", 8.0, 1024)
    expected = [
        next(
            row["accuracy"]
            for row in analysis.summary_table(committed[seed])
            if (row["model"], row["method"], row["factor"], row["length"]) == key
        )
        for seed in sorted(committed)
    ]
    assert len(set(expected)) > 1  # the seeds differ, so the order is visible
    np.testing.assert_array_equal(table[key], expected)


def test_find_setting_names_what_is_missing_or_ambiguous(committed):
    results = committed[0]
    found = analysis.find_setting(results, "finetune_yarn", "yarn", 1024, 8)
    assert (found["factor"], found["length"]) == (8.0, 1024)
    with pytest.raises(KeyError, match="2 settings"):
        analysis.find_setting(results, "finetune_yarn", "yarn", 1024)
    with pytest.raises(KeyError, match="0 settings"):
        analysis.find_setting(results, "base", "llama3", 1024)


def test_setting_key_names_the_stored_settings(committed):
    """Every key setting_key builds for the plan is one across_seeds found in the results;
    the base model at L is plain RoPE and dynamic is stored with factor 1."""
    from posenc.experiments.config import setting_key

    table = analysis.across_seeds(committed)
    L = 128
    assert setting_key("yarn", L, L) == ("base", "none", 1.0, L)
    assert setting_key("yarn", 8 * L, L) == ("base", "yarn", 8.0, 8 * L)
    assert setting_key("dynamic", 8 * L, L) == ("base", "dynamic", 1.0, 8 * L)
    tuned = setting_key("linear", 8 * L, L, "finetune_linear", factor=4)
    assert tuned == ("finetune_linear", "linear", 4.0, 8 * L)
    for key in (setting_key("yarn", 8 * L, L), setting_key("ntk", 2 * L, L), tuned):
        assert key in table, key
