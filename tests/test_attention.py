"""Unit tests of posenc.attention against an independent, loop-by-loop computation."""

import math

import numpy as np
import pytest

from posenc import causal_mask, scaled_dot_product_attention, self_attention, softmax


def attention_by_loops(query, key, value, allowed=None):
    """Eq. 1 of Vaswani et al. written out with Python loops and math.exp, no matrix products."""
    num_queries, num_keys = query.shape[0], key.shape[0]
    outputs = np.zeros((num_queries, value.shape[1]))
    weights = np.zeros((num_queries, num_keys))
    for m in range(num_queries):
        visible = [n for n in range(num_keys) if allowed is None or allowed[m][n]]
        scores = {
            n: sum(query[m, j] * key[n, j] for j in range(query.shape[1]))
            / math.sqrt(query.shape[1])
            for n in visible
        }
        top = max(scores.values())
        total = sum(math.exp(s - top) for s in scores.values())
        for n in visible:
            weights[m, n] = math.exp(scores[n] - top) / total
            outputs[m] += weights[m, n] * value[n]
    return outputs, weights


def test_softmax_rows_sum_to_one_and_match_the_definition():
    scores = np.array([[1.0, 2.0, 3.0], [0.0, 0.0, 0.0]])
    expected = np.exp(scores) / np.exp(scores).sum(axis=1, keepdims=True)
    np.testing.assert_allclose(softmax(scores), expected, rtol=1e-15)
    np.testing.assert_allclose(softmax(scores).sum(axis=1), 1.0)


def test_softmax_is_stable_for_huge_scores_and_shift_invariant():
    scores = np.array([1000.0, 1001.0, 999.0])
    np.testing.assert_allclose(softmax(scores), softmax(scores - 1000.0), rtol=1e-15)
    assert np.all(np.isfinite(softmax(scores)))


def test_softmax_rejects_nan_and_fully_masked_rows():
    with pytest.raises(ValueError, match="scores"):
        softmax(np.array([1.0, np.nan]))
    with pytest.raises(ValueError, match="fully masked"):
        softmax(np.array([[-np.inf, -np.inf], [0.0, 1.0]]))


@pytest.mark.parametrize(
    "num_queries,num_keys,d_k,d_v", [(1, 1, 1, 1), (3, 5, 4, 2), (7, 7, 8, 3)]
)
def test_attention_matches_the_loop_computation(num_queries, num_keys, d_k, d_v):
    rng = np.random.default_rng(num_queries * 100 + num_keys)
    query, key = rng.normal(size=(num_queries, d_k)), rng.normal(size=(num_keys, d_k))
    value = rng.normal(size=(num_keys, d_v))
    outputs, weights = scaled_dot_product_attention(query, key, value)
    expected_outputs, expected_weights = attention_by_loops(query, key, value)
    np.testing.assert_allclose(weights, expected_weights, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(outputs, expected_outputs, rtol=1e-12, atol=1e-13)


def test_causal_attention_matches_the_loop_computation_and_ignores_the_future():
    rng = np.random.default_rng(7)
    query, key, value = (
        rng.normal(size=(6, 4)),
        rng.normal(size=(6, 4)),
        rng.normal(size=(6, 3)),
    )
    outputs, weights = scaled_dot_product_attention(query, key, value, causal=True)
    expected_outputs, expected_weights = attention_by_loops(
        query, key, value, allowed=causal_mask(6)
    )
    np.testing.assert_allclose(outputs, expected_outputs, rtol=1e-12, atol=1e-13)
    np.testing.assert_array_equal(weights[np.triu_indices(6, k=1)], 0.0)
    # Changing a future token does not change earlier outputs.
    key2, value2 = key.copy(), value.copy()
    key2[5] += 10.0
    value2[5] -= 3.0
    np.testing.assert_allclose(
        scaled_dot_product_attention(query, key2, value2, causal=True)[0][:5],
        outputs[:5],
    )


def test_explicit_mask_matches_the_loop_computation():
    rng = np.random.default_rng(3)
    query, key, value = (
        rng.normal(size=(2, 3)),
        rng.normal(size=(4, 3)),
        rng.normal(size=(4, 2)),
    )
    mask = np.array([[True, False, True, False], [False, True, True, True]])
    outputs, weights = scaled_dot_product_attention(query, key, value, mask=mask)
    expected_outputs, _ = attention_by_loops(query, key, value, allowed=mask)
    np.testing.assert_allclose(outputs, expected_outputs, rtol=1e-12, atol=1e-13)
    assert weights[0, 1] == 0.0 and weights[1, 0] == 0.0


def test_batched_attention_equals_attention_per_batch_item():
    rng = np.random.default_rng(11)
    query, key, value = (
        rng.normal(size=(2, 3, 5, 4)),
        rng.normal(size=(2, 3, 6, 4)),
        rng.normal(size=(2, 3, 6, 2)),
    )
    outputs, _ = scaled_dot_product_attention(query, key, value)
    for b in range(2):
        for h in range(3):
            np.testing.assert_allclose(
                outputs[b, h],
                scaled_dot_product_attention(query[b, h], key[b, h], value[b, h])[0],
            )


def test_causal_mask_shape_and_content():
    np.testing.assert_array_equal(
        causal_mask(3), [[True, False, False], [True, True, False], [True, True, True]]
    )
    with pytest.raises(ValueError, match="num_positions"):
        causal_mask(0)


GOOD = dict(query=np.ones((3, 4)), key=np.ones((5, 4)), value=np.ones((5, 2)))


@pytest.mark.parametrize(
    "changes,error,argument",
    [
        ({"key": np.ones((5, 3))}, ValueError, "key"),  # d_k differs
        ({"value": np.ones((4, 2))}, ValueError, "value"),  # rows differ from key
        ({"query": np.ones(4)}, ValueError, "query"),  # rank 1
        ({"value": np.ones((1, 5, 2))}, ValueError, "value"),  # ranks differ
        (
            {
                "query": np.ones((2, 3, 4)),
                "key": np.ones((3, 5, 4)),
                "value": np.ones((3, 5, 2)),
            },
            ValueError,
            "batch",
        ),
        ({"mask": np.ones((5, 3), dtype=bool)}, ValueError, "mask"),  # mask transposed
        ({"mask": np.ones((3, 5))}, TypeError, "mask"),  # mask not boolean
        # nothing to attend to
        (
            {"mask": np.zeros((3, 5), dtype=bool)},
            ValueError,
            "mask",
        ),
        ({"causal": True}, ValueError, "causal"),  # 3 queries, 5 keys
        ({"causal": 1}, TypeError, "causal"),
        ({"query": np.full((3, 4), np.nan)}, ValueError, "query"),
        ({"key": np.full((5, 4), "a")}, TypeError, "key"),
        ({"value": np.ones((5, 2), dtype=bool)}, TypeError, "value"),
    ],
)
def test_bad_input_raises_an_error_naming_the_argument(changes, error, argument):
    arguments = {**GOOD, **changes}
    with pytest.raises(error, match=argument):
        scaled_dot_product_attention(
            arguments.pop("query"),
            arguments.pop("key"),
            arguments.pop("value"),
            **arguments,
        )


def test_self_attention_validates_projection_shapes():
    tokens = np.ones((4, 3))
    with pytest.raises(ValueError, match="w_key"):
        self_attention(tokens, np.ones((3, 2)), np.ones((2, 2)), np.ones((3, 2)))
    with pytest.raises(ValueError, match="tokens"):
        self_attention(np.ones(3), np.ones((3, 2)), np.ones((3, 2)), np.ones((3, 2)))


def test_self_attention_is_attention_of_the_projections():
    rng = np.random.default_rng(5)
    tokens = rng.normal(size=(5, 6))
    w_query, w_key, w_value = (
        rng.normal(size=(6, 3)),
        rng.normal(size=(6, 3)),
        rng.normal(size=(6, 2)),
    )
    expected, _ = attention_by_loops(tokens @ w_query, tokens @ w_key, tokens @ w_value)
    np.testing.assert_allclose(
        self_attention(tokens, w_query, w_key, w_value)[0],
        expected,
        rtol=1e-12,
        atol=1e-13,
    )
