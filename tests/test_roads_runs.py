"""Other roads end to end on tiny models: every encoding trained and scored on both
tasks for a few steps, the plan, and the command line."""

import json

import numpy as np
import pytest
import torch

from posenc.experiments import roads_config
from posenc.experiments.config import ModelConfig, Phase, TrainConfig
from posenc.experiments.passkey import PasskeyTask
from posenc.experiments.roads_cli import build_parser, main
from posenc.experiments.roads_config import (
    ROADS,
    ROPE_FAMILY,
    TASKS,
    jobs_of,
    projected_seconds,
    road_plan,
    run_dir,
    worker_jobs,
)
from posenc.experiments.roads_passkey import evaluate_passkey_road, train_passkey_road
from posenc.experiments.roads_text import evaluate_text_road, train_text_road
from posenc.experiments.text_config import TextConfig, TextEvalConfig

# Each run trains, stores and re-reads in one process, and the checks are on shapes,
# keys and files, not on trained numbers: kernels cannot change the outcome.
pytestmark = [pytest.mark.torch, pytest.mark.kernel_independent]

PHASE = Phase(
    steps=3, batch_size=4, learning_rate=1e-2, warmup_steps=2, eval_every=2,
    val_sequences=4,
)  # fmt: skip
TASK = PasskeyTask(num_filler=8, num_values=8, num_markers=4, num_pairs=2, num_decoys=1)
PASSKEY = TrainConfig(
    train_length=16,
    base=PHASE,
    finetune=PHASE,
    finetune_multiple=2,
    model=ModelConfig(
        vocab_size=TASK.vocab_size, d_model=16, num_heads=2, num_layers=2
    ),
    task=TASK,
)
PASSKEY_EVAL = roads_config.EvalConfig(chunk_size=4, num_chunks=2, multiples=(1, 2, 4))
TEXT = TextConfig(
    train_length=16,
    base=PHASE,
    finetune=PHASE,
    finetune_multiple=2,
    model=ModelConfig(vocab_size=256, d_model=16, num_heads=2, num_layers=2),
)
TEXT_EVAL = TextEvalConfig(
    whole_window_bytes=128, fixed_target_count=2, multiples=(1, 2, 4)
)
QUIET = {"log": lambda *_: None}


@pytest.mark.parametrize("name", ROADS)
def test_every_encoding_trains_and_is_scored_on_the_passkey_task(name, tmp_path):
    torch.set_num_threads(1)
    log = train_passkey_road(tmp_path, name, 0, PASSKEY, **QUIET)
    results = evaluate_passkey_road(tmp_path, name, 0, PASSKEY, PASSKEY_EVAL, **QUIET)
    directory = run_dir(tmp_path, "passkey", name, 0)
    tuned = ["finetune_yarn.pt"] if name in ROPE_FAMILY else []
    assert sorted(p.name for p in directory.iterdir()) == sorted(
        ["base.pt", "results.json", "train_log.json", *tuned]
    )
    assert log["encoding"] == name and log["base"]["steps"] <= 3
    assert json.loads((directory / "results.json").read_text()) == results
    plan = road_plan("passkey", name, (1, 2, 4), tuned=2)
    assert [
        {k: s[k] for k in ("model", "method", "factor", "multiple")}
        for s in results["settings"]
    ] == plan
    for setting in results["settings"]:
        assert [c["chunk"] for c in setting["chunks"]] == [0, 1]
        assert all(len(c["correct"]) == 4 * 2 for c in setting["chunks"])


@pytest.mark.parametrize("name", [n for n in ROADS if n != "rope"])
def test_every_encoding_trains_and_is_scored_on_text(name, tmp_path):
    torch.set_num_threads(1)
    log = train_text_road(tmp_path, name, 0, TEXT, TEXT_EVAL, **QUIET)
    results = evaluate_text_road(tmp_path, name, 0, TEXT, TEXT_EVAL, **QUIET)
    directory = run_dir(tmp_path, "text", name, 0)
    tuned = ["finetune_linear.pt", "finetune_yarn.pt"] if name in ROPE_FAMILY else []
    assert sorted(p.name for p in directory.iterdir()) == sorted(
        ["base.pt", "results.json", "train_log.json", *tuned]
    )
    assert set(log["finetune"]) == {p[9:-3] for p in tuned}
    assert len(results["settings"]) == len(road_plan("text", name, (1, 2, 4), 2))
    for setting in results["settings"]:
        assert np.all(np.isfinite(setting["whole_window"]))
        assert len(setting["fixed_target"]) == 2
        assert ("by_position" in setting) == (setting["multiple"] == 4)


def test_rope_on_text_is_real_texts_stored_runs():
    with pytest.raises(ValueError, match="Real text"):
        train_text_road("unused", "rope", 0, TEXT, TEXT_EVAL, **QUIET)
    assert roads_config.checkpoint_dir("x", "text", "rope", 1).as_posix() == (
        "book/data/real_text/seed_1"
    )
    assert roads_config.checkpoint_dir("x", "passkey", "rope", 1).as_posix() == (
        "x/passkey/rope/seed_1"
    )


def test_the_plan_covers_every_encoding_task_and_seed():
    jobs = jobs_of()
    assert len(jobs) == len(TASKS) * len(ROADS) * 3
    shares = [worker_jobs(w, 2, jobs) for w in range(2)]
    assert sorted(shares[0] + shares[1]) == sorted(jobs)
    loads = [sum(projected_seconds(t, n) for t, n, _ in share) for share in shares]
    assert abs(loads[0] - loads[1]) <= max(projected_seconds(t, n) for t, n, _ in jobs)
    assert roads_config.training_seconds("text", "rope") == 0
    # the budget: every run to its cap, two workers, within 120 minutes of training
    train = sum(roads_config.training_seconds(t, n) for t, n, _ in jobs)
    assert train / 2 / 60 < 100


def test_a_holdout_seed_scores_the_base_model_only():
    holdout = roads_config.HOLDOUT_SEEDS[0]
    assert holdout not in roads_config.ROADS_SEEDS
    for task in TASKS:
        for name in ROPE_FAMILY:
            full = road_plan(task, name, seed=0)
            base = road_plan(task, name, seed=holdout)
            assert base == [s for s in full if s["model"] == "base"] or (
                roads_config.is_reused(task, name) and base == full
            )
            assert any(s["model"] != "base" for s in full)
            assert any(s["method"] != "none" for s in base)  # training-free extensions
            assert roads_config.finetuned_methods(task, name, holdout) == (
                ()
                if not roads_config.is_reused(task, name)
                else roads_config.EXTENSIONS[task]
            )


@pytest.mark.parametrize("worker, workers", [(2, 2), (-1, 2), (0, 0), (True, 2)])
def test_bad_worker_shares_are_refused(worker, workers):
    with pytest.raises(ValueError, match="worker"):
        worker_jobs(worker, workers, jobs_of())


def test_the_command_line_parses_its_arguments():
    args = build_parser().parse_args(
        ["all", "--tasks", "text", "--encodings", "alibi", "t5", "--seeds", "2"]
    )
    assert (args.command, args.tasks, args.encodings, args.seeds) == (
        "all",
        ["text"],
        ["alibi", "t5"],
        [2],
    )
    assert (args.worker, args.workers, args.threads) == (0, 1, 1)
    assert args.dir.as_posix() == "book/data/other_roads"
    with pytest.raises(SystemExit):
        build_parser().parse_args(["train", "--encodings", "relative"])
    with pytest.raises(SystemExit):
        build_parser().parse_args(["train", "--tasks", "images"])


def test_the_plan_command_prints_each_workers_share(capsys):
    assert main(["plan", "--worker", "1", "--workers", "2"]) == 0
    out = capsys.readouterr().out
    assert out.strip().splitlines()[-1].startswith("worker 1 of 2: at most")
    assert "CPU min" in build_parser().format_help()
