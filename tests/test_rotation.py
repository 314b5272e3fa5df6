"""posenc.rotation: the one cos/sin table and the one block-diagonal rotation the other modules build on."""

import numpy as np
import pytest

from posenc import rope_matrix, rotation_matrix, shift_matrix
from posenc.rotation import LAYOUTS, block_diagonal_rotation, check_layout, cos_sin


def test_cos_sin_of_numpy_angles():
    angles = np.linspace(-20.0, 20.0, 41).reshape(-1, 1)
    cos, sin = cos_sin(angles)
    np.testing.assert_array_equal(cos, np.cos(angles))
    np.testing.assert_array_equal(sin, np.sin(angles))
    scaled = cos_sin(angles, 1.5)
    np.testing.assert_array_equal(scaled[0], np.cos(angles) * 1.5)
    np.testing.assert_array_equal(scaled[1], np.sin(angles) * 1.5)
    # torch tensors: tests/test_fast_rope.py (this module stays numpy-only)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_block_diagonal_rotation_rotates_each_pair_counter_clockwise(layout):
    angles = np.array([0.3, -1.2, 2.0])
    matrix = block_diagonal_rotation(np.cos(angles), np.sin(angles), layout)
    assert matrix.shape == (6, 6) and matrix.dtype == np.float64
    np.testing.assert_allclose(matrix @ matrix.T, np.eye(6), atol=1e-15)
    for i, angle in enumerate(angles):
        p, q = (2 * i, 2 * i + 1) if layout == "interleaved" else (i, i + 3)
        np.testing.assert_array_equal(
            matrix[np.ix_([p, q], [p, q])], rotation_matrix(angle)
        )
    assert np.count_nonzero(matrix) == 12  # nothing outside the blocks


def test_block_diagonal_rotation_stacks_over_leading_axes():
    angles = np.arange(12.0).reshape(2, 3, 2)
    stacked = block_diagonal_rotation(*cos_sin(angles))
    assert stacked.shape == (2, 3, 4, 4)
    np.testing.assert_array_equal(
        stacked[1, 2], block_diagonal_rotation(*cos_sin(angles[1, 2]))
    )


def test_the_matrices_of_the_book_are_this_one():
    np.testing.assert_array_equal(
        rope_matrix(7, 8),
        block_diagonal_rotation(
            *cos_sin(7 * np.array([10000.0 ** (-2 * i / 8) for i in range(4)]))
        ),
    )
    # the shift matrix is the rotation by -beta, because a pair is stored as (sin, cos)
    beta = 5 * 10000.0 ** (-2 * np.arange(3) / 6)
    np.testing.assert_allclose(
        shift_matrix(5, 6),
        block_diagonal_rotation(np.cos(-beta), np.sin(-beta)),
        atol=0,
    )


def test_check_layout():
    assert check_layout("half") == "half"
    with pytest.raises(ValueError, match="^layout must be one of"):
        check_layout("rotate_half")
    with pytest.raises(ValueError, match="^layout must be one of"):
        block_diagonal_rotation(np.ones(2), np.zeros(2), "pairs")
