"""posenc.alibi against the ALiBi authors' code, transformers' BLOOM, and properties."""

import json
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import posenc
from posenc import alibi_bias, alibi_slopes

GOLDEN = Path(__file__).resolve().parent / "golden" / "relative_bias_transformers.npz"


def get_slopes(n):
    """Transcribed from the ALiBi authors' code, github.com/ofirpress/
    attention_with_linear_biases, fairseq/models/transformer.py (commit 3b7c2ec,
    TransformerDecoder.__init__), to check posenc against it; not used by posenc."""

    def get_slopes_power_of_2(n):
        start = 2 ** (-(2 ** -(math.log2(n) - 3)))
        ratio = start
        return [start * ratio**i for i in range(n)]

    if math.log2(n).is_integer():
        return get_slopes_power_of_2(n)
    else:
        closest_power_of_2 = 2 ** math.floor(math.log2(n))
        return (
            get_slopes_power_of_2(closest_power_of_2)
            + get_slopes(2 * closest_power_of_2)[0::2][: n - closest_power_of_2]
        )


@pytest.mark.parametrize("num_heads", range(1, 65))
def test_slopes_are_the_authors_for_1_to_64_heads(num_heads):
    # the authors multiply start * ratio**i, whose rounding errors grow with i; posenc raises
    # 2 to -8h/n once (exact to the last bit against mpmath for 64 heads, measured). Measured
    # difference over 1 .. 64 heads: 1.6e-15 at most (n = 40)
    np.testing.assert_allclose(
        alibi_slopes(num_heads), get_slopes(num_heads), rtol=3e-15, atol=0
    )


def test_power_of_two_heads_give_the_papers_geometric_sequence():
    for n in (1, 2, 4, 8, 16, 32, 64, 128):
        slopes = alibi_slopes(n)
        assert slopes[0] == 2.0 ** (-8 / n) and slopes[-1] == 2.0**-8
        np.testing.assert_allclose(
            slopes[1:] / slopes[:-1], 2.0 ** (-8 / n), rtol=1e-15
        )
    np.testing.assert_array_equal(alibi_slopes(8), 1 / 2.0 ** np.arange(1, 9))


def test_other_head_counts_interleave_the_next_power_of_two():
    """12 heads: the 8 slopes of 8 heads, then the odd-numbered slopes of 16 heads."""
    slopes = alibi_slopes(12)
    np.testing.assert_array_equal(slopes[:8], alibi_slopes(8))
    np.testing.assert_array_equal(slopes[8:], alibi_slopes(16)[0:8:2])
    assert len(set(slopes)) == 12 and np.all(slopes > 0) and slopes.max() < 1


@pytest.fixture(scope="module")
def golden():
    data = np.load(GOLDEN, allow_pickle=False)
    return json.loads(str(data["meta"])), data


def test_slopes_are_bloom_float32_ones(golden):
    """transformers' BLOOM computes the slopes in float32, torch.pow of a float32 base:
    within 2**-21 of ours (measured 4.77e-7 at most over 1 .. 64 heads; 4 float32 ulps)."""
    meta, data = golden
    assert meta["alibi_heads"] == list(range(1, 65))
    assert meta["transformers"] == "5.24.0" and meta["torch"].startswith("2.13.0")
    offsets = np.cumsum([0, *meta["alibi_heads"]])
    for n, start, stop in zip(meta["alibi_heads"], offsets[:-1], offsets[1:]):
        theirs = data["alibi_slopes"][start:stop]
        np.testing.assert_allclose(alibi_slopes(n), theirs, rtol=5e-7, atol=0)


def test_bloom_tensor_is_our_bias_up_to_a_constant_per_query(golden):
    """BLOOM adds m_h * (position of the key among the unpadded tokens); ours is
    m_h * (k - q): they differ by m_h * q along each query's row, which the softmax
    ignores (the authors' code comment says the same)."""
    meta, data = golden
    heads, mask = meta["alibi_mask_heads"], np.array(meta["alibi_mask"])
    bloom = data["alibi_tensor"].reshape(len(mask), heads, -1).astype(np.float64)
    for row, keep in zip(bloom, mask):
        positions = np.cumsum(keep)[keep == 1] - 1
        ours = alibi_bias(heads, positions, positions)  # (h, q, k)
        theirs = np.broadcast_to(row[:, None, keep == 1], ours.shape)
        shift = alibi_slopes(heads)[:, None, None] * positions[None, :, None]
        np.testing.assert_allclose(ours + shift, theirs, rtol=1e-6, atol=0)
        # the padded keys get 0 from BLOOM (masked out by its attention mask)
        assert np.all(row[:, keep == 0] == 0)


@given(
    num_heads=st.integers(1, 40),
    queries=st.lists(st.integers(-10_000, 10_000), min_size=1, max_size=12),
    keys=st.lists(st.integers(-10_000, 10_000), min_size=1, max_size=12),
    shift=st.integers(-10_000, 10_000),
)
def test_bias_depends_only_on_q_minus_k(num_heads, queries, keys, shift):
    bias = alibi_bias(num_heads, queries, keys)
    assert bias.shape == (num_heads, len(queries), len(keys))
    assert bias.dtype == np.float64
    moved = alibi_bias(num_heads, np.add(queries, shift), np.add(keys, shift))
    np.testing.assert_array_equal(bias, moved)
    slopes = alibi_slopes(num_heads)
    for i, q in enumerate(queries):
        for j, k in enumerate(keys):
            assert np.array_equal(bias[:, i, j], -slopes * (q - k))


def test_a_causal_row_falls_linearly_and_is_zero_on_the_diagonal():
    bias = alibi_bias(4, range(6), range(6))
    assert np.all(np.diagonal(bias, axis1=1, axis2=2) == 0)
    assert not np.signbit(np.diagonal(bias, axis1=1, axis2=2)).any()  # +0.0, not -0.0
    below = np.tril(np.ones((6, 6), dtype=bool), -1)
    assert np.all(bias[:, below] < 0)  # keys before the query cost
    np.testing.assert_array_equal(
        bias[:, 5, :], -np.outer(alibi_slopes(4), [5, 4, 3, 2, 1, 0])
    )


def test_the_package_exports_both():
    assert posenc.alibi_slopes is alibi_slopes and posenc.alibi_bias is alibi_bias


@pytest.mark.parametrize(
    "call, error, name",
    [
        (lambda: alibi_slopes(0), ValueError, "num_heads"),
        (lambda: alibi_slopes(-3), ValueError, "num_heads"),
        (lambda: alibi_slopes(8.0), TypeError, "num_heads"),
        (lambda: alibi_slopes(True), TypeError, "num_heads"),
        (lambda: alibi_slopes(math.nan), TypeError, "num_heads"),
        (lambda: alibi_slopes("8"), TypeError, "num_heads"),
        (lambda: alibi_bias(0, [0], [0]), ValueError, "num_heads"),
        (lambda: alibi_bias(4, [0.5, 1.0], [0]), TypeError, "query_positions"),
        (lambda: alibi_bias(4, [0], [True, False]), TypeError, "key_positions"),
        (lambda: alibi_bias(4, [[0, 1]], [0]), ValueError, "query_positions"),
        (
            lambda: alibi_bias(4, [0], np.zeros((2, 2), int)),
            ValueError,
            "key_positions",
        ),
        (lambda: alibi_bias(4, [0, math.nan], [0]), TypeError, "query_positions"),
        (lambda: alibi_bias(4, "01", [0]), TypeError, "query_positions"),
    ],
)
def test_bad_input_names_the_argument(call, error, name):
    with pytest.raises(error, match=name):
        call()
