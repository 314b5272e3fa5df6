"""The naive codes of chapter 1 and the measurable requirements they are judged by."""

import numpy as np
import pytest

from posenc import sinusoidal_encoding
from posenc.book import criteria, naive


def sinusoidal_16(n):
    return sinusoidal_encoding(n, 16)


def test_naive_codes():
    np.testing.assert_allclose(
        naive.normalized_position(5)[:, 0], [0, 0.25, 0.5, 0.75, 1.0]
    )
    np.testing.assert_allclose(naive.normalized_position(1), [[0.0]])
    np.testing.assert_allclose(naive.integer_position(3)[:, 0], [0, 1, 2])


def test_digit_encoding_reconstructs_the_position():
    digits = naive.digit_encoding(1000, 3)
    np.testing.assert_array_equal(digits @ np.array([1, 10, 100]), np.arange(1000))
    np.testing.assert_array_equal(naive.digit_encoding(6, 3, base=2)[5], [1, 0, 1])
    with pytest.raises(ValueError, match="num_digits"):
        naive.digit_encoding(1001, 3)
    with pytest.raises(ValueError, match="base"):
        naive.digit_encoding(5, 3, base=1)


def test_uniqueness():
    assert criteria.min_pairwise_distance(naive.integer_position, 50) == pytest.approx(
        1.0
    )
    assert criteria.min_pairwise_distance(sinusoidal_16, 1000) > 0.5
    # A constant code collides everywhere.
    assert criteria.min_pairwise_distance(lambda n: np.ones((n, 2)), 10) == 0.0


def test_uniqueness_sees_exact_and_tiny_collisions_in_large_codes():
    rng = np.random.default_rng(0)
    codes = rng.normal(size=(40, 129)) * 1e3
    codes[7] = codes[31]  # an exact duplicate
    assert criteria.min_pairwise_distance(lambda n: codes[:n], 40) == 0.0
    near = rng.normal(size=(40, 16)) * 1e3
    near[5] = near[20] + 4e-6  # 4e-6 * sqrt(16) apart
    assert criteria.min_pairwise_distance(lambda n: near[:n], 40) == pytest.approx(
        1.6e-5, rel=1e-3
    )


def test_offset_distances():
    np.testing.assert_allclose(
        criteria.offset_distances(naive.integer_position, 5, 2), [2, 2, 2]
    )
    assert criteria.offset_distance_spread(
        naive.normalized_position, [5, 9]
    ) == pytest.approx(0.25 - 0.125)
    assert (
        criteria.offset_distance_spread(sinusoidal_16, [8, 64, 512], offset=3) < 1e-12
    )
    with pytest.raises(ValueError, match="offset"):
        criteria.offset_distances(naive.integer_position, 3, 3)


def test_prefix_and_range():
    assert criteria.prefix_mismatch(naive.normalized_position, 3, 5) == pytest.approx(
        0.5
    )
    assert criteria.prefix_mismatch(sinusoidal_16, 10, 50) == 0.0
    assert (
        criteria.fraction_outside_training_range(naive.integer_position, 10, 20) == 1.0
    )
    assert (
        criteria.fraction_outside_training_range(naive.normalized_position, 10, 20)
        == 0.0
    )
    # A period-2 code never leaves its range.
    alternating = lambda n: (np.arange(n) % 2)[:, None].astype(float)  # noqa: E731
    assert criteria.fraction_outside_training_range(alternating, 4, 40) == 0.0
    with pytest.raises(ValueError, match="test_length"):
        criteria.fraction_outside_training_range(alternating, 4, 4)


def test_bounded_and_deterministic():
    assert criteria.max_abs_value(naive.integer_position, 100) == 99.0
    assert criteria.max_abs_value(sinusoidal_16, 10_000) == 1.0
    assert criteria.is_deterministic(sinusoidal_16, 10)
    rng = np.random.default_rng(0)
    assert not criteria.is_deterministic(lambda n: rng.normal(size=(n, 2)), 10)


def test_encoders_with_the_wrong_shape_are_rejected():
    with pytest.raises(ValueError, match="encode"):
        criteria.max_abs_value(lambda n: np.zeros(n), 4)
