"""posenc.attention.attention_entropy against the definition evaluated with math, and its limits."""

import math

import numpy as np
import pytest

from posenc.attention import attention_entropy, softmax


def test_matches_the_definition_row_by_row():
    rng = np.random.default_rng(1)
    weights = softmax(rng.normal(size=(3, 4, 7)) * 3)
    entropy = attention_entropy(weights)
    assert entropy.shape == (3, 4)
    for index in np.ndindex(3, 4):
        assert entropy[index] == pytest.approx(
            -sum(p * math.log(p) for p in weights[index]), rel=1e-13
        )


def test_uniform_one_hot_and_axis():
    assert attention_entropy(np.full(8, 1 / 8)) == pytest.approx(math.log(8), rel=1e-15)
    assert attention_entropy(np.array([0.0, 1.0, 0.0])) == 0.0
    weights = softmax(np.arange(12.0).reshape(3, 4), axis=0)
    np.testing.assert_allclose(
        attention_entropy(weights, axis=0), attention_entropy(weights.T), rtol=1e-15
    )


@pytest.mark.parametrize(
    "weights", [np.array([0.5, 0.6]), np.array([1.5, -0.5]), np.array(1.0)]
)
def test_rejects_what_is_not_a_distribution(weights):
    with pytest.raises(ValueError, match="weights"):
        attention_entropy(weights)
