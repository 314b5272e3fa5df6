"""The context-extension experiment: task, model, attention against a reference, entropy, CLI, results.

Fast, CPU only, no real training (a three-step run checks that training is seeded).
"""

import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.torch  # make portability re-runs it (tests/conftest.py)

torch = pytest.importorskip("torch")

import posenc  # noqa: E402
from posenc.attention import attention_entropy  # noqa: E402
from posenc.experiments import context_extension as ce  # noqa: E402
from posenc.experiments.passkey import PasskeyTask  # noqa: E402
from posenc.experiments.tiny_model import (  # noqa: E402
    Attention,
    ModelConfig,
    RopeSpec,
    TinyRopeTransformer,
)

ROOT = Path(__file__).resolve().parents[1]
COMMITTED = ROOT / ce.DEFAULT_DIR


# ------------------------------------------------------------------ the task


def test_evaluated_methods_are_methods_rope_scaling_knows():
    for method in ce.EVALUATED_METHODS:
        RopeSpec(method=method)  # raises for a method posenc.rope_scaling does not know
    assert set(ce.FINETUNE_METHODS) <= set(ce.EVALUATED_METHODS)
    assert not hasattr(ce, "METHODS")  # one list of all methods: posenc.scaling.METHODS


def test_task_is_seeded():
    task = PasskeyTask()
    a = task.sample(np.random.default_rng(5), 8, 64)
    b = task.sample(np.random.default_rng(5), 8, 64)
    c = task.sample(np.random.default_rng(6), 8, 64)
    for name in ("tokens", "targets", "needle_positions", "distances"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
    assert not np.array_equal(a.tokens, c.tokens)


@pytest.mark.parametrize("length", [18, 19, 128, 300])
def test_task_sequences_hold_what_the_docstring_says(length):
    task = PasskeyTask(
        num_filler=10, num_values=5, num_markers=9, num_pairs=4, num_decoys=3
    )
    batch = task.sample(np.random.default_rng(length), 50, length)
    K = task.num_pairs
    body = length - K
    needles = K + 3
    assert batch.tokens.shape == (50, length) and batch.tokens.dtype == np.int64
    np.testing.assert_array_equal(batch.answer_positions, body + np.arange(K))
    for row in range(50):
        tokens = batch.tokens[row]
        is_marker = tokens >= task.first_marker
        assert np.array_equal(task.is_value(tokens), (tokens >= 10) & (tokens < 15))
        # body: the asked needles and the decoys, every marker distinct and followed by a value
        body_markers = np.flatnonzero(is_marker[:body])
        assert (
            len(body_markers) == needles and len(set(tokens[body_markers])) == needles
        )
        assert np.all(task.is_value(tokens[body_markers + 1]))
        # values appear only after markers
        assert task.is_value(tokens).sum() == needles
        assert np.all(body_markers + 1 < body)
        # queries: K distinct body markers, no values shown
        asked = tokens[batch.answer_positions]
        assert (
            np.all(is_marker[body:])
            and len(set(asked)) == K
            and set(asked) <= set(tokens[body_markers])
        )
        for k in range(K):
            needle = batch.needle_positions[row, k]
            # the marker sits right before the needle
            assert tokens[needle - 1] == asked[k]
            # the needle is the expected value
            assert tokens[needle] == batch.targets[row, k]
            assert batch.distances[row, k] == batch.answer_positions[k] - needle >= 1
    assert batch.tokens.max() < task.vocab_size and batch.tokens.min() >= 0


def test_task_distances_cover_the_stated_range():
    task = PasskeyTask()
    batch = task.sample(np.random.default_rng(0), 4000, 128)
    assert (
        (batch.distances.min(), batch.distances.max())
        == task.distance_range(128)
        == (1, 126)
    )
    assert (
        batch.needle_positions.min() == 1
        and batch.needle_positions.max() == 128 - 4 - 1
    )


def test_task_needles_each_have_their_own_marker():
    task = PasskeyTask()
    assert (task.num_needles, task.num_markers, task.vocab_size, task.min_length()) == (
        8,
        8,
        136,
        20,
    )
    batch = task.sample(np.random.default_rng(0), 64, 1024)
    assert all(
        len(set(row[row >= task.first_marker][: -task.num_pairs])) == 8
        for row in batch.tokens
    )


def test_task_rejects_bad_input():
    task = PasskeyTask()
    with pytest.raises(ValueError, match="length"):
        task.sample(np.random.default_rng(0), 2, 19)
    with pytest.raises(TypeError, match="rng"):
        task.sample(0, 2, 64)
    with pytest.raises(ValueError, match="num_pairs"):
        PasskeyTask(num_markers=2, num_pairs=3)
    with pytest.raises(ValueError, match="num_decoys"):
        PasskeyTask(num_decoys=5)
    with pytest.raises(ValueError, match="num_decoys"):
        PasskeyTask(num_decoys=-1)
    with pytest.raises(TypeError, match="batch_size"):
        task.sample(np.random.default_rng(0), 2.0, 64)


# ------------------------------------------------------------------ the model


def small_model(seed=0, **sizes):
    torch.manual_seed(seed)
    return TinyRopeTransformer(ModelConfig(**sizes)).eval()


def test_model_shapes_and_size():
    model = small_model()
    tokens = torch.randint(0, 72, (3, 40))
    vocab = model.config.vocab_size
    assert vocab == PasskeyTask().vocab_size == 136
    assert model(tokens).shape == (3, 40, vocab)
    assert model(tokens, rows=[5, 39]).shape == (3, 2, vocab)
    assert model.num_parameters() < 1_000_000
    assert model.num_parameters() == sum(p.numel() for p in model.parameters())


@pytest.mark.parametrize(
    "method,factor", [("none", 1.0), ("linear", 4.0), ("dynamic", 2.0), ("yarn", 8.0)]
)
def test_logits_at_rows_equal_the_full_forward(method, factor):
    model = small_model()
    tokens = torch.randint(0, 72, (2, 64))
    rope = RopeSpec(method, factor, original_max_position=16)
    rows = np.array([0, 7, 50, 63])
    with torch.no_grad():
        torch.testing.assert_close(
            model(tokens, rope, rows=rows),
            model(tokens, rope)[:, rows],
            rtol=1e-5,
            atol=1e-5,
        )


def test_model_rejects_bad_input():
    model = small_model()
    with pytest.raises(TypeError, match="tokens"):
        model(torch.zeros(2, 5))
    with pytest.raises(ValueError, match="rows"):
        model(torch.zeros(2, 5, dtype=torch.int64), rows=[3, 1])
    with pytest.raises(ValueError, match="rows"):
        model(torch.zeros(2, 5, dtype=torch.int64), rows=[5])
    with pytest.raises(TypeError, match="rope"):
        model(torch.zeros(2, 5, dtype=torch.int64), "yarn")
    with pytest.raises(ValueError, match="method"):
        RopeSpec("rope")
    with pytest.raises(ValueError, match="head_dim"):
        ModelConfig(d_model=12, num_heads=4)
    with pytest.raises(ValueError, match="vocab_size"):
        ce.TrainConfig(model=ModelConfig(vocab_size=10))


def reference_attention(
    attention: Attention, x: np.ndarray, inv_freq, attention_factor, rows=None
) -> np.ndarray:
    """The same layer written with posenc's numpy functions: projections, apply_rope, softmax attention."""
    weight = attention.qkv.weight.detach().double().numpy()
    w_out = attention.out.weight.detach().double().numpy()
    heads, head_dim = attention.num_heads, attention.head_dim
    d_model = x.shape[-1]
    seq = x.shape[1]
    positions = np.arange(seq)
    outputs = []
    for b in range(x.shape[0]):
        per_head = []
        for h in range(heads):
            cols = slice(h * head_dim, (h + 1) * head_dim)
            q = x[b] @ weight[:d_model][cols].T
            k = x[b] @ weight[d_model : 2 * d_model][cols].T
            v = x[b] @ weight[2 * d_model :][cols].T
            rope = {
                "inv_freq": inv_freq,
                "attention_factor": attention_factor,
                "layout": "half",
            }
            q, k = (
                posenc.apply_rope(q, positions, **rope),
                posenc.apply_rope(k, positions, **rope),
            )
            out, _ = posenc.scaled_dot_product_attention(q, k, v, causal=True)
            per_head.append(out)
        outputs.append(np.concatenate(per_head, axis=-1) @ w_out.T)
    outputs = np.stack(outputs)
    return outputs if rows is None else outputs[:, rows]


@pytest.mark.parametrize(
    "method", ["none", "linear", "ntk", "dynamic", "ntk_by_parts", "yarn"]
)
def test_attention_matches_a_reference_with_apply_rope(method):
    model = small_model(seed=1).double()
    attention = model.blocks[0].attention
    seq = 48
    rope = RopeSpec(method, 1.0 if method == "none" else 3.0, original_max_position=16)
    inv_freq, factor = rope.frequencies(
        model.config.head_dim, model.config.rope_base, seq
    )
    rotary = model.rotary_embedding(rope, seq)
    x = np.random.default_rng(2).normal(size=(2, seq, model.config.d_model))
    rows = np.array([3, 20, 47])
    with torch.no_grad():
        tables = rotary.tables(seq=seq, dtype=torch.float64)
        full = attention(torch.from_numpy(x), rotary, tables).numpy()
        some = attention(torch.from_numpy(x), rotary, tables, rows=rows).numpy()
    expected = reference_attention(attention, x, inv_freq, factor)
    np.testing.assert_allclose(full, expected, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(some, expected[:, rows], rtol=1e-10, atol=1e-12)


def test_rope_spec_hands_rope_scalings_output_to_the_model():
    spec = ce.rope_spec("yarn", 4, 128)
    inv_freq, factor = spec.frequencies(16, 500.0, 512)
    expected = posenc.rope_scaling(
        "yarn", 16, base=500.0, factor=4.0, original_max_position=128
    )
    np.testing.assert_array_equal(inv_freq, expected[0])
    assert factor == expected[1] == pytest.approx(0.1 * math.log(4) + 1)
    assert ce.rope_spec("none", 8, 128).factor == 1.0
    # dynamic in the paper's form: s = l' / L for l' tokens read, i.e. NTK-aware scaling with that s
    assert ce.rope_spec("dynamic", 8, 128).factor == 1.0
    for seen in (100, 256, 300, 1024):
        dynamic, _ = ce.rope_spec("dynamic", 8, 128).frequencies(16, 500.0, seen)
        ntk, _ = posenc.rope_scaling(
            "ntk",
            16,
            base=500.0,
            factor=max(1.0, seen / 128),
            original_max_position=128,
        )
        np.testing.assert_allclose(dynamic, ntk, rtol=1e-14)


def test_dynamic_answers_each_query_with_the_tokens_read_so_far():
    task = PasskeyTask()
    batch = task.sample(np.random.default_rng(1), 2, 60)
    model = small_model(seed=5)
    rope = ce.rope_spec("dynamic", 1, 16)
    with torch.no_grad():
        logits = ce.answer_logits(model, batch, rope)
        for k, row in enumerate(batch.answer_positions):
            ntk = RopeSpec("ntk", (row + 1) / 16, original_max_position=16)
            expected = model(torch.from_numpy(batch.tokens[:, : row + 1]), ntk)[:, -1]
            torch.testing.assert_close(logits[:, k], expected, rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="capture"):
        ce.answer_logits(model, batch, rope, capture=[])


def test_attention_factor_scales_the_logits_by_its_square():
    model = small_model(seed=3).double()
    tokens = torch.randint(0, 72, (1, 30))
    plain, scaled = [], []
    with torch.no_grad():
        model(
            tokens,
            RopeSpec("ntk_by_parts", 2.0, original_max_position=16),
            capture=plain,
        )
        model(
            tokens,
            RopeSpec(
                "yarn",
                2.0,
                original_max_position=16,
                options=(("attention_factor", 1.5),),
            ),
            capture=scaled,
        )
    q0, k0 = plain[0]
    q1, k1 = scaled[0]
    torch.testing.assert_close(
        q1 @ k1.transpose(-1, -2),
        2.25 * (q0 @ k0.transpose(-1, -2)),
        rtol=1e-12,
        atol=1e-12,
    )


# ------------------------------------------------------------------ entropy


def test_answer_entropy_matches_a_loop_over_rows():
    task = PasskeyTask()
    batch = task.sample(np.random.default_rng(0), 2, 40)
    model = small_model(seed=4)
    capture = []
    with torch.no_grad():
        ce.answer_logits(
            model, batch, RopeSpec("yarn", 2.0, original_max_position=20), capture
        )
    entropy = ce.answer_entropy(capture, batch)
    assert entropy.shape == (2, 2, 4, 4)  # (layers, batch, heads, K)
    q_all, k = capture[0]
    for b in range(2):
        for h in range(4):
            for j, row in enumerate(batch.answer_positions):
                q = q_all[b, h, row].double()
                scores = [
                    float(q @ k[b, h, n].double()) / math.sqrt(16)
                    for n in range(row + 1)
                ]
                top = max(scores)
                weights = [math.exp(s - top) for s in scores]
                total = sum(weights)
                expected = -sum(w / total * math.log(w / total) for w in weights)
                assert entropy[0, b, h, j] == pytest.approx(expected, rel=1e-9)
    # the last layer recorded only the answer rows; same computation
    assert capture[1][0].shape[-2] == 4
    assert np.all(
        entropy <= np.log(batch.answer_positions + 1)[None, None, None, :] + 1e-9
    )
    assert attention_entropy(np.full(5, 0.2)) == pytest.approx(math.log(5))


# ------------------------------------------------------------------ plan, summaries, training, checkpoints, CLI


def test_evaluation_plan_covers_every_method_and_length():
    plan = ce.evaluation_plan(ce.TrainConfig(), ce.EvalConfig())
    base = [c for c in plan if c["model"] == "base"]
    assert len(base) == 1 + 3 * len(ce.EVALUATED_METHODS)
    assert {
        (c["method"], c["length"], c["factor"]) for c in base if c["length"] == 512
    } == {
        (m, 512, 1.0 if m in ("none", "dynamic") else 4.0) for m in ce.EVALUATED_METHODS
    }
    tuned = [
        (c["model"], c["method"], c["factor"], c["length"])
        for c in plan
        if c["model"] != "base"
    ]
    assert len(tuned) == len(set(tuned))
    for multiple in (1, 2, 4, 8):
        length = multiple * 128
        assert ("finetune_none", "none", 1.0, length) in tuned
        for method in ("linear", "yarn"):
            # with the factor it was tuned with, and with s chosen for the length
            assert {f for m, me, f, n in tuned if (me, n) == (method, length)} == {
                4.0,
                float(multiple),
            }


def test_summarize_setting_counts_answers_beyond_the_trained_distances():
    config = ce.TrainConfig()
    assert ce.trained_distances(config) == (1, 126)
    setting = {
        "model": "base",
        "method": "none",
        "length": 256,
        "factor": 1.0,
        "chunks": [
            {
                "chunk": 0,
                "correct": "1100",
                "loss_sum": 2.0,
                "entropy_sum": [4.0, 8.0],
                "entropy_count": 4,
            },
            {
                "chunk": 1,
                "correct": "1011",
                "loss_sum": 6.0,
                "entropy_sum": [4.0, 0.0],
                "entropy_count": 4,
            },
        ],
    }
    distances = np.array([10, 200, 127, 126, 5, 130, 250, 1])
    row = ce.summarize_setting(setting, config, distances)
    assert row["accuracy"] == 5 / 8 and row["answers_beyond"] == 4
    assert row["accuracy_beyond"] == 2 / 4 and row["accuracy_within"] == 3 / 4
    assert (
        row["loss"] == 1.0
        and row["entropy_layer0"] == 1.0
        and row["entropy_layer1"] == 1.0
    )
    with pytest.raises(ValueError, match="distances"):
        ce.summarize_setting(setting, config, distances[:3])
    without_entropy = {
        **setting,
        "chunks": [
            {k: v for k, v in c.items() if not k.startswith("entropy")}
            for c in setting["chunks"]
        ],
    }
    assert math.isnan(
        ce.summarize_setting(without_entropy, config, distances)["entropy_layer0"]
    )


def test_training_is_seeded_and_checkpoints_round_trip(tmp_path):
    task = PasskeyTask(
        num_filler=8, num_values=4, num_markers=4, num_pairs=2, num_decoys=1
    )
    config = ce.TrainConfig(
        train_length=16,
        base=ce.Phase(
            steps=3,
            batch_size=4,
            learning_rate=3e-3,
            warmup_steps=2,
            eval_every=1,
            val_sequences=4,
            target_accuracy=1.0,
        ),
        model=ModelConfig(vocab_size=16, d_model=16, num_heads=2, num_layers=1),
        task=task,
    )
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        first, log = ce.train_base(config, log=lambda *_: None)
        second, log2 = ce.train_base(config, log=lambda *_: None)
    finally:
        torch.set_num_threads(threads)
    # checked at step 0 and after each of the 3 steps; accuracy 1 is not reached
    assert log["steps"] == 3 and not log["reached_target"]
    assert [point["step"] for point in log["curve"]] == [0, 1, 2, 3]
    assert log["digest"] == log2["digest"] == ce.parameter_digest(second)
    path = tmp_path / "m.pt"
    ce.save_checkpoint(first, path)
    loaded = ce.load_checkpoint(path)
    tokens = torch.randint(0, 16, (2, 16))
    with torch.no_grad():
        torch.testing.assert_close(loaded(tokens), first.eval()(tokens), rtol=0, atol=0)


@pytest.mark.kernel_independent
def test_cli_parses_every_command():
    parser = ce.build_parser()
    args = parser.parse_args(
        ["train", "--dir", "x", "--seeds", "3", "7", "--threads", "1"]
    )
    assert (args.command, args.dir, args.seeds, args.threads) == (
        "train",
        Path("x"),
        [3, 7],
        1,
    )
    args = parser.parse_args(["evaluate", "--chunks", "2"])
    assert (args.command, args.dir, args.chunks, args.eval_threads) == (
        "evaluate",
        ce.DEFAULT_DIR,
        2,
        1,
    )
    assert args.seeds == list(ce.DEFAULT_SEEDS) == [0, 1, 2, 3, 4]
    # relative to the working directory: the book's data when run from the repository
    assert ce.DEFAULT_DIR == Path("book") / "data" / "context_extension"
    assert parser.parse_args(["all"]).threads == 2
    assert parser.parse_args(["compare", "a", "b"]).second == Path("b")
    with pytest.raises(SystemExit):
        parser.parse_args(["fit"])
    for module in ("posenc.experiments", "posenc.experiments.context_extension"):
        result = subprocess.run(
            [sys.executable, "-m", module, "--help"],
            capture_output=True,
            text=True,
            check=True,
        )
        assert "evaluate" in result.stdout and "train" in result.stdout


@pytest.mark.kernel_independent
def test_importing_the_experiments_package_does_not_import_torch():
    code = "import sys, posenc, posenc.experiments, posenc.experiments.passkey; print('torch' in sys.modules)"
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "False"


def test_beats_implements_the_four_of_five_rule():
    a = np.array([0.9, 0.8, 0.7, 0.6, 0.5])
    assert ce.beats(a, a - 0.01)
    # behind in one seed: still holds
    assert ce.beats(a, np.array([0.95, 0.7, 0.6, 0.5, 0.4]))
    # behind in two: does not
    assert not ce.beats(a, np.array([0.95, 0.85, 0.6, 0.5, 0.4]))
    assert not ce.beats(a, a)  # ties are not wins
    with pytest.raises(ValueError, match="5 seeds"):
        ce.beats(a[:4], a[:4])
    with pytest.raises(ValueError, match="same length"):
        ce.beats(a, a[:4])


# ------------------------------------------------------------------ the committed checkpoints and results


def committed_results():
    return ce.read_all_results(COMMITTED)


def test_committed_seeds_are_the_default_seeds_and_the_data_is_small():
    assert ce.seeds_in(COMMITTED) == list(ce.DEFAULT_SEEDS)
    assert sorted(committed_results()) == list(ce.DEFAULT_SEEDS)
    for seed in ce.DEFAULT_SEEDS:
        names = sorted(f.name for f in ce.seed_dir(COMMITTED, seed).glob("*.pt"))
        assert names == sorted(
            f"{name}.pt"
            for name in ["base", *(f"finetune_{m}" for m in ce.FINETUNE_METHODS)]
        )
    assert (
        sum(f.stat().st_size for f in COMMITTED.rglob("*") if f.is_file()) < 12_000_000
    )


def test_committed_results_cover_the_plan_for_every_seed():
    for seed, results in committed_results().items():
        train_config, eval_config = ce.configs_of(results)
        assert train_config.seed == seed
        assert [
            (c["model"], c["method"], c["factor"], c["length"])
            for c in ce.settings_of(results)
        ] == [
            (c["model"], c["method"], c["factor"], c["length"])
            for c in ce.evaluation_plan(train_config, eval_config)
        ]
        assert all(
            len(c["chunks"]) == eval_config.num_chunks for c in ce.settings_of(results)
        )


def test_committed_results_match_a_fresh_evaluation_of_one_chunk():
    # Seed 0's re-checked settings, under the tolerances measured across CPU kernels and threads
    # (chapter 6 re-checks every seed).
    results = committed_results()[0]
    report = ce.recheck(
        ce.seed_dir(COMMITTED, 0), results, list(ce.RECHECK_SETTINGS), [1]
    )
    for row in report:
        assert row["answers"] == 128 and row["disagree"] == 0, row
        assert row["near_ties"] <= 2, row
        assert (
            row["loss_change"] <= ce.LOSS_RTOL
            and row["entropy_change"] <= ce.ENTROPY_RTOL
        ), row


def test_summary_csv_is_the_summary_of_the_results():
    import csv

    results = committed_results()
    rows = [row for seed in sorted(results) for row in ce.summary_table(results[seed])]
    with open(COMMITTED / ce.SUMMARY_FILE, encoding="utf-8") as handle:
        stored = list(csv.DictReader(handle))
    assert len(rows) == len(stored)
    for row, line in zip(rows, stored):
        assert (
            int(line["seed"]),
            line["model"],
            line["method"],
            float(line["factor"]),
            int(line["length"]),
        ) == (row["seed"], row["model"], row["method"], row["factor"], row["length"])
        assert float(line["accuracy"]) == pytest.approx(row["accuracy"], abs=1e-6)


def test_spread_table_prints_mean_and_the_range_over_seeds():
    table = ce.spread_table(
        {"yarn": [np.array([0.9, 0.8, 1.0]), np.array([0.5, 0.7, 0.6])]}, ["2L", "4L"]
    )
    assert table.splitlines() == [
        " " * 16 + "          2L          4L",
        "yarn" + " " * 12 + "        0.90        0.60",
        " " * 16 + " [0.80-1.00] [0.50-0.70]",
    ]
    with pytest.raises(ValueError, match="one entry per column"):
        ce.spread_table({"yarn": [np.array([1.0])]}, ["2L", "4L"])


def test_relative_change_is_the_largest_over_the_entries():
    assert ce.relative_change(10.5, 10.0) == pytest.approx(0.05)
    assert ce.relative_change([2.0, 3.3], [2.0, 3.0]) == pytest.approx(0.1)
