"""The real-text experiment end to end on a tiny model: train, store, evaluate, re-check."""

import json
import subprocess
import sys

import numpy as np
import pytest
import torch

from posenc.experiments.config import ModelConfig, Phase
from posenc.experiments.text_claims import Run, TextEvidence, tuned
from posenc.experiments.text_cli import build_parser
from posenc.experiments.text_config import TEXT_DIR, TextConfig, TextEvalConfig
from posenc.experiments.text_evaluation import (
    evaluate_text_seed,
    recheck_text,
    write_text_results,
)
from posenc.experiments.text_runs import train_text_seed
from posenc.experiments.tiny_model import TinyRopeTransformer
from posenc.experiments.training import load_checkpoint, save_checkpoint

# Each test trains, stores and re-reads in one process: the outcome cannot depend on the
# CPU kernels, so `make portability` skips them (marker kernel_independent).
pytestmark = [pytest.mark.torch, pytest.mark.kernel_independent]

SMALL = ModelConfig(
    vocab_size=256, d_model=16, num_heads=2, num_layers=1, rope_base=500.0
)
PHASE = Phase(
    steps=4,
    batch_size=4,
    learning_rate=1e-2,
    warmup_steps=2,
    eval_every=2,
    val_sequences=2,
)


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    directory = tmp_path_factory.mktemp("text") / "seed_0"
    config = TextConfig(
        train_length=16, base=PHASE, finetune=PHASE, finetune_multiple=2, model=SMALL
    )
    eval_config = TextEvalConfig(
        whole_window_bytes=256, fixed_target_count=3, multiples=(1, 2, 4)
    )
    torch.set_num_threads(1)
    log = train_text_seed(directory, config, eval_config, log=lambda *_: None)
    results = evaluate_text_seed(directory, log=lambda *_: None)
    write_text_results(directory, results)
    return directory, log, results


def test_half_checkpoints_round_trip_to_the_rounded_weights(tmp_path):
    torch.manual_seed(0)
    model = TinyRopeTransformer(SMALL)
    save_checkpoint(model, tmp_path / "m.pt", dtype=torch.float16)
    loaded = load_checkpoint(tmp_path / "m.pt")
    for name, tensor in model.state_dict().items():
        assert torch.equal(loaded.state_dict()[name], tensor.half().float())
    assert not loaded.training


def test_a_tiny_run_stores_every_setting_and_its_cost_curve(tiny_run):
    directory, log, results = tiny_run
    assert sorted(p.name for p in directory.iterdir()) == [
        "base.pt",
        "finetune_linear.pt",
        "finetune_yarn.pt",
        "results.json",
        "train_log.json",
    ]
    keys = {(s["model"], s["method"], s["multiple"]) for s in results["settings"]}
    assert ("base", "none", 1) in keys and ("base", "llama3", 4) in keys
    assert ("finetune_yarn", "yarn", 4) in keys and ("base", "yarn", 1) not in keys
    longest = [s for s in results["settings"] if s["multiple"] == 4]
    assert all(len(s["by_position"]) == 64 for s in longest)
    curve = log["finetune"]["yarn"]["cost_curve"]
    assert [check["step"] for check in curve] == [0, 2, 4]
    # the last check scored the fine-tuned model's whole windows at 2L in float32; the
    # evaluation reads the float16 checkpoint: equal to within that rounding
    stored = next(
        s
        for s in results["settings"]
        if (s["model"], s["multiple"]) == ("finetune_yarn", 2)
    )
    np.testing.assert_allclose(
        curve[-1]["window_losses"], stored["whole_window"], atol=0.01
    )
    evidence = TextEvidence(
        results, json.loads((directory / "train_log.json").read_text())
    )
    assert evidence.steps == [0, 2, 4]
    assert evidence.scores("cost_curve", tuned("linear", 2, 4)).shape == (8,)
    assert evidence.scores("fixed_target", Run("yarn", 4)).shape == (3,)


def test_a_fresh_evaluation_on_this_machine_repeats_the_stored_losses(tiny_run):
    directory, _, results = tiny_run
    settings = (
        {"model": "base", "method": "dynamic", "factor": 4.0, "multiple": 4},
        {"model": "finetune_linear", "method": "linear", "factor": 2.0, "multiple": 4},
    )
    report = recheck_text(directory, results, windows=2, settings=settings)
    assert [row["windows"] for row in report] == [2, 2]
    # same machine, same threads: only the stored 6-decimal rounding separates them
    assert max(row["change"] for row in report) <= 5.1e-7
    with pytest.raises(KeyError):
        recheck_text(directory, results, settings=({**settings[1], "method": "yarn"},))


def test_the_command_line_states_its_measured_times():
    parser = build_parser()
    args = parser.parse_args(["train"])
    assert args.dir == TEXT_DIR and args.seeds == [0, 1, 2, 3, 4] and args.threads == 1
    with pytest.raises(SystemExit):
        parser.parse_args(["fit"])
    result = subprocess.run(
        [sys.executable, "-m", "posenc.experiments.text_cli", "--help"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "min measured" in result.stdout
