"""Other roads: each encoding of the tiny model against posenc's numpy formulas."""

import numpy as np
import pytest
import torch

import posenc
from posenc.experiments.config import ModelConfig
from posenc.experiments.encodings import PositionEncoding
from posenc.experiments.positions import (
    LearnedPositions,
    T5Bias,
    alibi_logit_bias,
    sinusoidal_positions,
    t5_bucket_grid,
    with_causal_mask,
)
from posenc.experiments.roads_config import ROADS, road_encoding
from posenc.experiments.tiny_model import Attention, RopeSpec, TinyRopeTransformer
from posenc.experiments.training import load_checkpoint, save_checkpoint

pytestmark = pytest.mark.torch

SMALL = ModelConfig(vocab_size=20, d_model=16, num_heads=2, num_layers=2)


@pytest.mark.parametrize("heads", [1, 2, 3, 4, 6, 8])
def test_alibi_bias_equals_the_numpy_formula_bit_for_bit(heads):
    seq = 300
    fresh = alibi_logit_bias(heads, seq).double().numpy()
    positions = np.arange(seq)
    assert np.array_equal(fresh, posenc.alibi_bias(heads, positions, positions))


@pytest.mark.parametrize("heads", [5, 7, 12])
def test_alibi_bias_matches_the_numpy_formula_for_other_head_counts(heads):
    positions = np.arange(200)
    expected = posenc.alibi_bias(heads, positions, positions)
    fresh = alibi_logit_bias(heads, 200).double().numpy()
    np.testing.assert_allclose(fresh, expected, rtol=2**-23, atol=0)


def test_alibi_bias_depends_only_on_the_distance():
    bias = alibi_logit_bias(4, 64).numpy()
    for offset in range(-63, 64):
        diagonal = np.stack([np.diagonal(head, offset) for head in bias])
        assert np.all(diagonal == diagonal[:, :1])
    assert np.all(bias[:, np.arange(64), np.arange(64)] == 0)


@pytest.mark.parametrize("buckets, distance", [(32, 128), (8, 20), (2, 3)])
def test_t5_grid_equals_the_numpy_buckets(buckets, distance):
    seq = 260
    grid = t5_bucket_grid(seq, num_buckets=buckets, max_distance=distance).numpy()
    positions = np.arange(seq)
    relative = positions[None, :] - positions[:, None]  # key - query
    expected = posenc.t5_relative_position_bucket(
        relative, bidirectional=False, num_buckets=buckets, max_distance=distance
    )
    assert np.array_equal(grid, expected)


def test_t5_bias_looks_up_one_learned_scalar_per_bucket_and_head():
    torch.manual_seed(0)
    bias = T5Bias(num_heads=3, d_model=16, num_buckets=32, max_distance=128)
    out = bias(150).detach().numpy()
    table = bias.table.weight.detach().numpy()  # (buckets, heads)
    grid = t5_bucket_grid(150).numpy()
    assert out.shape == (3, 150, 150)
    assert np.array_equal(out, np.moveaxis(table[grid], -1, 0))
    # every key at 128 or more positions back shares the last bucket
    assert np.all(out[:, 149, :22] == table[31][:, None])


def test_the_causal_mask_removes_the_keys_after_each_query():
    masked = with_causal_mask(torch.zeros(2, 5, 5)).numpy()
    assert np.array_equal(np.isinf(masked[0]), np.triu(np.ones((5, 5)), 1) > 0)


def test_sinusoidal_positions_are_chapter_2s_encoding():
    table = sinusoidal_positions(40, 16, dtype=torch.float64).numpy()
    assert np.array_equal(table, posenc.sinusoidal_encoding(40, 16))


def test_learned_positions_reuse_the_last_vector_past_the_table():
    torch.manual_seed(0)
    positions = LearnedPositions(8, 4)
    out = positions(20).detach()
    assert torch.equal(out[:8], positions.table.weight.detach())
    assert torch.equal(out[8:], out[7].expand(12, 4))


def _model(name, config=SMALL, seed=0):
    torch.manual_seed(seed)
    return TinyRopeTransformer(config, road_encoding(name, config, 16)).eval()


def test_nope_attention_without_the_mask_is_permutation_equivariant():
    torch.manual_seed(0)
    attention = Attention(SMALL).eval()
    x = torch.randn(1, 12, SMALL.d_model, dtype=torch.float64)
    attention.double()
    no_mask = torch.zeros(SMALL.num_heads, 12, 12, dtype=torch.float64)
    order = torch.from_numpy(np.random.default_rng(0).permutation(12))
    with torch.no_grad():
        y = attention(x, None, None, bias=no_mask)
        y_permuted = attention(x[:, order], None, None, bias=no_mask)
    torch.testing.assert_close(y_permuted, y[:, order], rtol=1e-12, atol=1e-12)


def test_nope_sees_positions_only_through_the_causal_mask():
    # one layer: the last output depends on the set of earlier tokens, not their order
    config = ModelConfig(vocab_size=20, d_model=16, num_heads=2, num_layers=1)
    model = _model("nope", config).double()
    tokens = torch.from_numpy(np.random.default_rng(1).integers(0, 20, (1, 10)))
    shuffled = tokens.clone()
    shuffled[0, :9] = tokens[0, :9][torch.randperm(9, generator=torch.Generator())]
    with torch.no_grad():
        last, last_shuffled = model(tokens)[0, -1], model(shuffled)[0, -1]
    torch.testing.assert_close(last_shuffled, last, rtol=1e-12, atol=1e-12)
    # while RoPE's does depend on the order
    rope = _model("rope", config).double()
    with torch.no_grad():
        assert not torch.allclose(rope(tokens)[0, -1], rope(shuffled)[0, -1])


def _inv_freq(model, rope, seq=64):
    return model.rotary_embedding(rope, seq).inv_freq.numpy()


@pytest.mark.parametrize("factor", [1.0, 4.0, 16.0])
def test_p_rope_stretched_by_pi_is_transformers_proportional(factor):
    model = _model("p_rope")
    method = "none" if factor == 1 else "linear"
    fresh = _inv_freq(model, RopeSpec(method, factor, 16))
    expected, _ = posenc.rope_scaling(
        "proportional", 8, base=500.0, factor=factor, partial_rotary_factor=0.25
    )
    assert np.array_equal(fresh, expected)
    assert np.count_nonzero(fresh) == 1  # int(0.25 * 8 / 2) pairs rotate


def test_p_rope_with_yarn_keeps_the_unrotated_pairs_at_zero():
    model = _model("p_rope")
    fresh = _inv_freq(model, RopeSpec("yarn", 4.0, 16))
    yarn, _ = posenc.rope_scaling(
        "yarn", 8, base=500.0, factor=4.0, original_max_position=16
    )
    assert fresh[0] == yarn[0] and np.all(fresh[1:] == 0)


def test_the_hybrid_rotates_every_layer_but_the_last():
    three = ModelConfig(vocab_size=20, d_model=16, num_heads=2, num_layers=3)
    assert road_encoding("hybrid", SMALL, 16).rope_layers == (0,)
    assert road_encoding("hybrid", three, 16).rope_layers == (0, 1)
    model = _model("hybrid")
    tokens = torch.zeros(1, 6, dtype=torch.int64)
    capture = []
    with torch.no_grad():
        model(tokens, capture=capture)
    (q0, _), (q1, _) = capture
    # every token the same: only a rotation makes position 0's query differ from 5's
    assert not torch.allclose(q0[..., 0, :], q0[..., 5, :])
    torch.testing.assert_close(q1[..., 0, :], q1[..., 5, :])


def test_a_position_free_model_refuses_a_scaling_method():
    with pytest.raises(ValueError, match="rope.method"):
        _model("alibi")(torch.zeros(1, 4, dtype=torch.int64), RopeSpec("yarn", 2.0, 16))


def test_the_default_model_is_chapter_6s_parameter_for_parameter():
    torch.manual_seed(3)
    default = TinyRopeTransformer(SMALL)
    torch.manual_seed(3)
    explicit = TinyRopeTransformer(SMALL, PositionEncoding())
    assert default.state_dict().keys() == explicit.state_dict().keys()
    for name, tensor in default.state_dict().items():
        assert torch.equal(tensor, explicit.state_dict()[name])
    stored = torch.load("book/data/context_extension/seed_0/base.pt", weights_only=True)
    assert set(stored) == {"config", "state_dict", "extra"}
    assert (
        TinyRopeTransformer(ModelConfig(**stored["config"])).state_dict().keys()
        == stored["state_dict"].keys()
    )


@pytest.mark.parametrize("name", ROADS)
def test_every_encoding_survives_a_checkpoint(name, tmp_path):
    model = _model(name)
    save_checkpoint(model, tmp_path / "m.pt", dtype=torch.float16)
    data = torch.load(tmp_path / "m.pt", weights_only=True)
    assert ("encoding" in data) == (name != "rope")
    loaded = load_checkpoint(tmp_path / "m.pt")
    assert loaded.encoding == model.encoding
    tokens = torch.from_numpy(np.random.default_rng(0).integers(0, 20, (2, 40)))
    with torch.no_grad():
        assert loaded(tokens).shape == (2, 40, 20)  # 40 > L = 16: every encoding runs


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"kind": "relative"}, ValueError, "kind"),
        ({"kind": "nope", "num_buckets": 8}, ValueError, "num_buckets"),
        ({"kind": "learned"}, ValueError, "max_positions"),
        ({"kind": "learned", "max_positions": 0}, ValueError, "max_positions"),
        ({"rope_layers": [0]}, TypeError, "rope_layers"),
        ({"rope_layers": (1, 0)}, ValueError, "rope_layers"),
        ({"partial_rotary_factor": 1.5}, ValueError, "partial_rotary_factor"),
        ({"kind": "t5", "max_distance": -1}, ValueError, "max_distance"),
    ],
)
def test_bad_encodings_are_refused_by_name(kwargs, error, match):
    with pytest.raises(error, match=match):
        PositionEncoding(**kwargs)


def test_an_encoding_naming_a_missing_layer_is_refused():
    with pytest.raises(ValueError, match="rope_layers"):
        TinyRopeTransformer(SMALL, PositionEncoding(rope_layers=(2,)))
    with pytest.raises(TypeError, match="encoding"):
        TinyRopeTransformer(SMALL, "alibi")
