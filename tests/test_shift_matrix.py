"""posenc.shift_matrix: PE(p + offset) = T(offset) PE(p), checked entry by entry, over thousands
of positions and offsets, and through its group properties (hypothesis)."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from posenc import (
    frequencies,
    shift_matrix,
    sinusoidal_encoding,
    sinusoidal_encoding_at,
)
from posenc.book.linear_maps import rotation_matrix


def shift_matrix_by_loops(offset, d_model, base=10000.0):
    """The 2x2 blocks of note 000's derivation, written out with math.cos and math.sin."""
    matrix = [[0.0] * d_model for _ in range(d_model)]
    for i in range(d_model // 2):
        beta = offset / base ** (2 * i / d_model)
        matrix[2 * i][2 * i] = math.cos(beta)
        matrix[2 * i][2 * i + 1] = math.sin(beta)
        matrix[2 * i + 1][2 * i] = -math.sin(beta)
        matrix[2 * i + 1][2 * i + 1] = math.cos(beta)
    return np.array(matrix)


@pytest.mark.parametrize(
    "offset,d_model,base",
    [
        (0, 2, 10000.0),
        (1, 4, 10000.0),
        (-1, 4, 10000.0),
        (3, 8, 10000.0),
        (-250, 16, 10000.0),
        (37, 10, 500.0),
        (np.int64(12), 6, 10000.0),
    ],
)
def test_entries_match_the_block_formula(offset, d_model, base):
    matrix = shift_matrix(offset, d_model, base)
    assert matrix.shape == (d_model, d_model) and matrix.dtype == np.float64
    np.testing.assert_allclose(
        matrix, shift_matrix_by_loops(int(offset), d_model, base), rtol=0, atol=1e-12
    )


def test_shift_identity_over_thousands_of_positions_and_many_offsets():
    d_model, num_positions = 64, 4000
    offsets = np.concatenate(
        [
            np.arange(-50, 51),
            [-3999, -2500, -1000, -517, 128, 999, 1000, 2047, 3999, 10**5],
        ]
    )
    positions = np.arange(num_positions)
    encoding = sinusoidal_encoding(num_positions, d_model)
    worst = 0.0
    for offset in offsets:
        shifted = encoding @ shift_matrix(int(offset), d_model).T  # row p is T PE(p)
        # row p is PE(p + offset)
        target = sinusoidal_encoding_at(positions + offset, d_model)
        worst = max(worst, float(np.max(np.abs(shifted - target))))
    assert worst < 1e-9, worst


def test_the_block_is_a_clockwise_rotation_because_pairs_are_stored_sin_then_cos():
    omega = frequencies(8)
    matrix = shift_matrix(5, 8)
    for i in range(4):
        np.testing.assert_allclose(
            matrix[2 * i : 2 * i + 2, 2 * i : 2 * i + 2],
            rotation_matrix(-5 * omega[i]),
            atol=1e-15,
        )
    # The counter-clockwise block (the rotation without the transpose) shifts backwards instead.
    wrong = matrix.T
    encoding = sinusoidal_encoding_at(np.arange(100, 200), 8)
    assert (
        np.max(
            np.abs(encoding @ wrong.T - sinusoidal_encoding_at(np.arange(105, 205), 8))
        )
        > 0.1
    )
    np.testing.assert_allclose(
        encoding @ wrong.T, sinusoidal_encoding_at(np.arange(95, 195), 8), atol=1e-12
    )


def test_row_vectors_times_T_shift_backwards():
    """With one position per row, E @ T is E shifted by -offset; the forward shift is E @ T.T."""
    encoding = sinusoidal_encoding_at(np.arange(50, 80), 16)
    matrix = shift_matrix(7, 16)
    np.testing.assert_allclose(
        encoding @ matrix, sinusoidal_encoding_at(np.arange(43, 73), 16), atol=1e-12
    )
    np.testing.assert_allclose(
        encoding @ matrix.T, sinusoidal_encoding_at(np.arange(57, 87), 16), atol=1e-12
    )


def test_zero_offset_is_the_identity_and_shift_matrix_differs_from_identity_otherwise():
    np.testing.assert_array_equal(shift_matrix(0, 12), np.eye(12))
    assert np.max(np.abs(shift_matrix(1, 12) - np.eye(12))) > 0.4


offsets = st.integers(-100_000, 100_000)
dims = st.integers(1, 32).map(lambda half: 2 * half)
bases = st.sampled_from([10.0, 100.0, 10000.0, 500000.0])


@given(offsets, offsets, dims, bases)
def test_composition_adds_offsets(a, b, d_model, base):
    np.testing.assert_allclose(
        shift_matrix(a, d_model, base) @ shift_matrix(b, d_model, base),
        shift_matrix(a + b, d_model, base),
        atol=1e-9,
    )


@given(offsets, dims, bases)
def test_shift_matrix_is_orthogonal(offset, d_model, base):
    matrix = shift_matrix(offset, d_model, base)
    np.testing.assert_allclose(matrix @ matrix.T, np.eye(d_model), atol=1e-12)
    np.testing.assert_allclose(matrix.T @ matrix, np.eye(d_model), atol=1e-12)
    assert abs(np.linalg.det(matrix) - 1.0) < 1e-9


@given(offsets, dims, bases)
def test_negative_offset_is_the_transpose_and_the_inverse(offset, d_model, base):
    np.testing.assert_allclose(
        shift_matrix(-offset, d_model, base),
        shift_matrix(offset, d_model, base).T,
        atol=1e-12,
    )
    np.testing.assert_allclose(
        shift_matrix(-offset, d_model, base) @ shift_matrix(offset, d_model, base),
        np.eye(d_model),
        atol=1e-12,
    )


@given(st.integers(0, 5000), st.integers(-5000, 5000), dims)
def test_shift_identity_holds_at_any_position_and_offset(position, offset, d_model):
    np.testing.assert_allclose(
        shift_matrix(offset, d_model) @ sinusoidal_encoding_at([position], d_model)[0],
        sinusoidal_encoding_at([position + offset], d_model)[0],
        atol=1e-9,
    )


@pytest.mark.parametrize("offset", [2**53, -(2**53), np.int64(2**53)])
@pytest.mark.parametrize("d_model,base", [(8, 10000.0), (6, 500.0)])
def test_offset_at_the_documented_limit_2_to_the_53_is_accepted_and_exact(
    offset, d_model, base
):
    """2**53 is a power of two, so offset * omega_i is exact in float64; 50-digit arithmetic on the same
    float64 frequencies then gives the true blocks, far from the identity."""
    import mpmath

    expected = np.zeros((d_model, d_model))
    with mpmath.workdps(50):
        for i, omega in enumerate(frequencies(d_model, base)):
            beta = mpmath.mpf(int(offset)) * mpmath.mpf(float(omega))
            cos, sin = float(mpmath.cos(beta)), float(mpmath.sin(beta))
            expected[2 * i : 2 * i + 2, 2 * i : 2 * i + 2] = [[cos, sin], [-sin, cos]]
    np.testing.assert_allclose(
        shift_matrix(offset, d_model, base), expected, rtol=0, atol=1e-15
    )
    assert np.max(np.abs(expected - np.eye(d_model))) > 1.0


@pytest.mark.parametrize("offset", [2**53 + 1, -(2**53) - 1])
def test_offset_one_past_the_documented_limit_is_rejected(offset):
    with pytest.raises(
        ValueError, match=r"^offset must be at most 2\*\*53 in magnitude"
    ):
        shift_matrix(offset, 8)


@pytest.mark.parametrize(
    "arguments,error,name",
    [
        ((1.0, 4), TypeError, "offset"),
        ((True, 4), TypeError, "offset"),
        (("3", 4), TypeError, "offset"),
        ((1, 3), ValueError, "d_model"),
        ((1, 0), ValueError, "d_model"),
        ((1, 4.0), TypeError, "d_model"),
        ((1, 4, 0.0), ValueError, "base"),
        ((1, 4, float("nan")), ValueError, "base"),
        ((10**400, 4), ValueError, "offset"),
    ],
)
def test_bad_input_names_the_argument(arguments, error, name):
    with pytest.raises(error, match=name):
        shift_matrix(*arguments)
