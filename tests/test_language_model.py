"""posenc.experiments.language_model and the text path of the training loop."""

import numpy as np
import pytest
import torch

from posenc.experiments import corpus
from posenc.experiments.config import ModelConfig, Phase
from posenc.experiments.language_model import (
    bits,
    loss_by_position,
    next_token_accuracy_and_loss,
    next_token_logits,
    next_token_loss,
    target_losses,
)
from posenc.experiments.tiny_model import RopeSpec, TinyRopeTransformer
from posenc.experiments.training import (
    batch_loss,
    batch_scores,
    parameter_digest,
    train_language_model,
)

pytestmark = pytest.mark.torch

CONFIG = ModelConfig(vocab_size=256, d_model=16, num_heads=2, num_layers=1)
TEXT = b"In the beginning God created the heaven and the earth. " * 20


def model_and_batch(length=24, count=6):
    torch.manual_seed(0)
    model = TinyRopeTransformer(CONFIG).eval()
    batch = corpus.evaluation_windows(corpus.byte_tokens(TEXT), length, count)
    return model, batch


def reference_losses(model, batch):
    """-log softmax at each target, from one full forward pass: (B, L)."""
    with torch.no_grad():
        logits = model(torch.from_numpy(np.ascontiguousarray(batch.inputs)))
    log_probs = torch.log_softmax(logits.double(), dim=-1).numpy()
    rows, cols = np.indices(batch.targets.shape)
    return -log_probs[rows, cols, batch.targets]


def test_next_token_loss_is_the_cross_entropy_at_every_position():
    model, batch = model_and_batch()
    with torch.no_grad():
        logits = next_token_logits(model, batch, RopeSpec())
        each = next_token_loss(logits, batch, "none")
        mean = next_token_loss(logits, batch)
        trained_loss = batch_loss(model, batch, RopeSpec())
    expected = reference_losses(model, batch)
    assert logits.shape == (6, 24, 256) and each.shape == (6, 24)
    np.testing.assert_allclose(each.numpy(), expected, rtol=1e-5)
    assert float(mean) == pytest.approx(expected.mean(), rel=1e-5)
    assert float(trained_loss) == pytest.approx(float(mean))


def test_loss_by_position_and_scores_do_not_depend_on_the_chunk():
    model, batch = model_and_batch()
    expected = reference_losses(model, batch)
    for chunk in (1, 4, 64):
        np.testing.assert_allclose(
            loss_by_position(model, batch, RopeSpec(), chunk=chunk),
            expected.mean(axis=0),
            rtol=1e-5,
        )
        accuracy, loss = next_token_accuracy_and_loss(
            model, batch, RopeSpec(), chunk=chunk
        )
        assert loss == pytest.approx(expected.mean(), rel=1e-5)
    with torch.no_grad():
        logits = model(torch.from_numpy(np.ascontiguousarray(batch.inputs)))
    hits = (logits.argmax(-1).numpy() == batch.targets).mean()
    assert accuracy == pytest.approx(hits)
    assert batch_scores(model, batch, RopeSpec()) == pytest.approx((accuracy, loss))
    assert bits(np.log(2.0) * 3) == pytest.approx(3.0)


def test_dynamic_is_refused_until_it_gets_one_pass_per_position():
    model, batch = model_and_batch()
    with pytest.raises(ValueError, match="dynamic"):
        next_token_logits(model, batch, RopeSpec(method="dynamic"))


def reference_with(model, tokens, rope):
    """-log softmax at each target of ``tokens`` (B, n + 1) from one pass with ``rope``."""
    with torch.no_grad():
        logits = model(torch.from_numpy(np.ascontiguousarray(tokens[:, :-1])), rope)
    log_probs = torch.log_softmax(logits.double(), dim=-1).numpy()
    rows, cols = np.indices(tokens[:, 1:].shape)
    return -log_probs[rows, cols, tokens[:, 1:]]


@pytest.mark.kernel_independent  # compared with a pass in the same process
def test_target_losses_score_the_last_targets_of_one_pass():
    model, batch = model_and_batch()
    expected = reference_losses(model, batch)
    np.testing.assert_allclose(
        target_losses(model, batch, RopeSpec()), expected, rtol=1e-5
    )
    yarn = RopeSpec(method="yarn", factor=4.0, original_max_position=8)
    for scored in (1, 7, 24):
        for chunk in (1, 4):
            np.testing.assert_allclose(
                target_losses(model, batch, yarn, scored=scored, chunk=chunk),
                reference_with(model, batch.tokens, yarn)[:, -scored:],
                rtol=1e-5,
            )
    for bad in (0, 25, 2.0):
        with pytest.raises(ValueError, match="scored"):
            target_losses(model, batch, RopeSpec(), scored=bad)


@pytest.mark.kernel_independent  # compared with a pass in the same process
def test_dynamic_targets_are_scored_in_blocks_at_the_s_of_the_block_end():
    model, batch = model_and_batch(length=20)
    dynamic = RopeSpec(method="dynamic", original_max_position=8)
    got = target_losses(model, batch, dynamic)
    # blocks of L = 8 targets: 0-7 read <= 8 bytes (plain RoPE), 8-15 read 16, 16-19 read 20
    plain = reference_with(model, batch.tokens, RopeSpec(original_max_position=8))
    np.testing.assert_allclose(got[:, :8], plain[:, :8], rtol=1e-5)
    for low, high in ((8, 16), (16, 20)):
        ntk = RopeSpec(method="ntk", factor=high / 8, original_max_position=8)
        prefix = reference_with(model, batch.tokens[:, : high + 1], ntk)
        np.testing.assert_allclose(got[:, low:high], prefix[:, low:high], rtol=1e-5)
    assert not np.allclose(got[:, 8:], plain[:, 8:], rtol=1e-3)
    np.testing.assert_allclose(
        target_losses(model, batch, dynamic, scored=6), got[:, -6:], rtol=1e-6
    )


def test_language_model_training_is_seeded_and_lowers_the_loss():
    parts = {"train": TEXT, "validation": TEXT[:400]}
    phase = Phase(
        steps=12,
        batch_size=8,
        learning_rate=1e-2,
        warmup_steps=5,
        eval_every=6,
        val_sequences=4,
    )
    kwargs = dict(parts=parts, length=16, log=lambda *_: None)
    model, log = train_language_model(CONFIG, phase, seed=0, **kwargs)
    _, again = train_language_model(CONFIG, phase, seed=0, **kwargs)
    _, other = train_language_model(CONFIG, phase, seed=1, **kwargs)
    assert log["digest"] == again["digest"] == parameter_digest(model)
    assert log["digest"] != other["digest"]
    assert [point["step"] for point in log["curve"]] == [0, 6, 12]
    assert log["curve"][-1]["val_loss"] < log["curve"][0]["val_loss"] - 1.0
    val = corpus.evaluation_windows(corpus.byte_tokens(parts["validation"]), 16, 4)
    _, loss = next_token_accuracy_and_loss(model, val, RopeSpec())
    assert loss == pytest.approx(log["curve"][-1]["val_loss"], rel=1e-6)
    with pytest.raises(ValueError, match="vocab_size"):
        train_language_model(ModelConfig(), phase, seed=0, **kwargs)
