"""Property tests of the theorem of chapter 1: attention without positions is blind to order."""

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from posenc import scaled_dot_product_attention, self_attention, softmax


@st.composite
def sequences_and_permutations(draw, min_tokens=1):
    num_tokens = draw(st.integers(min_tokens, 12))
    d_model = draw(st.integers(1, 6))
    d_k = draw(st.integers(1, 5))
    d_v = draw(st.integers(1, 4))
    seed = draw(st.integers(0, 2**32 - 1))
    order = np.array(draw(st.permutations(range(num_tokens))), dtype=int)
    rng = np.random.default_rng(seed)
    tokens = rng.normal(size=(num_tokens, d_model)) * draw(
        st.sampled_from([0.1, 1.0, 5.0])
    )
    weights = (
        rng.normal(size=(d_model, d_k)),
        rng.normal(size=(d_model, d_k)),
        rng.normal(size=(d_model, d_v)),
    )
    return tokens, weights, order


@given(sequences_and_permutations())
def test_self_attention_is_permutation_equivariant(case):
    tokens, (w_query, w_key, w_value), order = case
    outputs, weights = self_attention(tokens, w_query, w_key, w_value)
    shuffled_outputs, shuffled_weights = self_attention(
        tokens[order], w_query, w_key, w_value
    )
    np.testing.assert_allclose(shuffled_outputs, outputs[order], rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(
        shuffled_weights, weights[np.ix_(order, order)], rtol=1e-9, atol=1e-12
    )


@given(sequences_and_permutations(), st.integers(1, 6), st.integers(0, 2**32 - 1))
def test_attention_is_invariant_to_shuffling_keys_and_values_together(
    case, num_queries, seed
):
    tokens, (_, w_key, w_value), order = case
    query = np.random.default_rng(seed).normal(size=(num_queries, w_key.shape[1]))
    key, value = tokens @ w_key, tokens @ w_value
    outputs, weights = scaled_dot_product_attention(query, key, value)
    shuffled_outputs, shuffled_weights = scaled_dot_product_attention(
        query, key[order], value[order]
    )
    np.testing.assert_allclose(shuffled_outputs, outputs, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(
        shuffled_weights, weights[:, order], rtol=1e-9, atol=1e-12
    )


@given(st.integers(1, 8), st.integers(1, 8), st.integers(0, 2**32 - 1), st.data())
def test_softmax_commutes_with_row_and_column_permutations(rows, columns, seed, data):
    scores = np.random.default_rng(seed).normal(size=(rows, columns)) * 3
    row_order = np.array(data.draw(st.permutations(range(rows))), dtype=int)
    column_order = np.array(data.draw(st.permutations(range(columns))), dtype=int)
    np.testing.assert_allclose(
        softmax(scores[row_order]), softmax(scores)[row_order], rtol=1e-12
    )
    np.testing.assert_allclose(
        softmax(scores[:, column_order]), softmax(scores)[:, column_order], rtol=1e-12
    )


def test_causal_mask_breaks_equivariance():
    rng = np.random.default_rng(0)
    tokens = rng.normal(size=(6, 4))
    w_query, w_key, w_value = (rng.normal(size=(4, 4)) for _ in range(3))
    order = np.array([5, 4, 3, 2, 1, 0])
    outputs, _ = self_attention(tokens, w_query, w_key, w_value, causal=True)
    shuffled, _ = self_attention(tokens[order], w_query, w_key, w_value, causal=True)
    assert np.max(np.abs(shuffled - outputs[order])) > 0.1


def test_uniform_causal_attention_counts_positions():
    num_positions = 50
    marker = np.zeros((num_positions, 1))
    marker[0, 0] = 1.0
    zeros = np.zeros((1, 1))
    causal = self_attention(marker, zeros, zeros, np.ones((1, 1)), causal=True)[0][:, 0]
    unmasked = self_attention(marker, zeros, zeros, np.ones((1, 1)))[0][:, 0]
    np.testing.assert_allclose(
        causal, 1.0 / np.arange(1, num_positions + 1), rtol=1e-12
    )
    np.testing.assert_allclose(unmasked, 1.0 / num_positions, rtol=1e-12)
