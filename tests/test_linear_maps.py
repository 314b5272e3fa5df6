"""posenc.book.linear_maps: each matrix against its definition, the linearity checks against maps
known to be linear and known not to be, and the cosine nearest neighbour."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from posenc.book import linear_maps as lm

angles = st.floats(-20.0, 20.0, allow_nan=False)


def test_scaling_rotation_and_shear_do_what_note_003_says():
    np.testing.assert_array_equal(lm.scaling_matrix([2, 2]) @ [1, 1], [2, 2])
    np.testing.assert_allclose(
        lm.rotation_matrix(math.pi / 2) @ [1, 0], [0, 1], atol=1e-15
    )
    shear = lm.shear_matrix(1.0)
    np.testing.assert_array_equal(shear @ [1, 0], [1, 0])
    np.testing.assert_array_equal(shear @ [0, 1], [1, 1])
    np.testing.assert_array_equal(lm.shear_matrix(0.5, axis="y") @ [1, 0], [1, 0.5])


@given(angles)
def test_rotation_matches_the_math_module_and_is_orthogonal(angle):
    matrix = lm.rotation_matrix(angle)
    np.testing.assert_allclose(
        matrix,
        [[math.cos(angle), -math.sin(angle)], [math.sin(angle), math.cos(angle)]],
        atol=1e-15,
    )
    np.testing.assert_allclose(matrix @ matrix.T, np.eye(2), atol=1e-14)
    assert abs(np.linalg.det(matrix) - 1) < 1e-14


@given(angles, angles)
def test_rotations_compose_by_adding_angles(a, b):
    np.testing.assert_allclose(
        lm.rotation_matrix(a) @ lm.rotation_matrix(b),
        lm.rotation_matrix(a + b),
        atol=1e-12,
    )


def test_clock_hand_three_six_nine_twelve():
    quarter_turn_clockwise = lm.rotation_matrix(-math.pi / 2)
    hand = np.array([1.0, 0.0])  # pointing at 3 o'clock
    visited = [hand]
    for _ in range(4):
        visited.append(quarter_turn_clockwise @ visited[-1])
    np.testing.assert_allclose(
        np.array(visited), [[1, 0], [0, -1], [-1, 0], [0, 1], [1, 0]], atol=1e-15
    )


def test_lift_project_and_mask():
    lift, project = lm.lift_matrix(2, 3), lm.projection_matrix(3, [0, 1])
    assert lift.shape == (3, 2) and project.shape == (2, 3)
    np.testing.assert_array_equal(lift @ [4.0, -2.0], [4.0, -2.0, 0.0])
    np.testing.assert_array_equal(project @ [4.0, -2.0, 7.0], [4.0, -2.0])
    np.testing.assert_array_equal(project @ lift, np.eye(2))
    mask = lm.mask_matrix(3, [0, 1])
    np.testing.assert_array_equal(mask @ [4.0, -2.0, 7.0], [4.0, -2.0, 0.0])
    np.testing.assert_array_equal(mask @ mask, mask)  # masking twice = masking once
    assert np.linalg.matrix_rank(mask) == 2  # linear, but not invertible
    np.testing.assert_array_equal(
        lm.projection_matrix(3, [2, 0]) @ [1.0, 2.0, 3.0], [3.0, 1.0]
    )


def test_apply_map_names_shapes_that_cannot_multiply():
    np.testing.assert_array_equal(
        lm.apply_map(lm.lift_matrix(2, 3), [1.0, 2.0]), [1.0, 2.0, 0.0]
    )
    np.testing.assert_array_equal(
        lm.apply_map(np.eye(2), np.ones((2, 5))), np.ones((2, 5))
    )
    with pytest.raises(ValueError, match="2x3 and the vectors have 2 rows"):
        lm.apply_map(np.ones((2, 3)), np.ones((2, 1)))
    with pytest.raises(ValueError, match="matrix"):
        lm.apply_map(np.ones(3), np.ones(3))
    with pytest.raises(ValueError, match="vectors"):
        lm.apply_map(np.ones((3, 3)), np.ones((3, 1, 1)))


@given(st.integers(1, 5), st.integers(1, 5), st.integers(0, 2**32 - 1))
def test_matrix_of_a_matrix_map_is_the_matrix(rows, columns, seed):
    matrix = np.random.default_rng(seed).normal(size=(rows, columns))
    np.testing.assert_allclose(
        lm.matrix_of(lambda x: matrix @ x, columns), matrix, atol=1e-15
    )


def test_linearity_checks_accept_matrices_and_reject_translation_and_products():
    rng = np.random.default_rng(0)
    matrix = rng.normal(size=(3, 2))
    assert lm.linearity_violation(lambda x: matrix @ x, 2, rng) < 1e-12
    # translation
    assert lm.linearity_violation(lambda x: x + np.array([0.5, -1.0]), 2, rng) > 0.4
    assert (
        lm.linearity_violation(lambda x: np.array([x[0], x[1], x[0] * x[1]]), 2, rng)
        > 0.1
    )
    assert lm.linearity_violation(lambda x: np.maximum(x, 0.0), 2, rng) > 0.1  # ReLU
    # The checks are exact for these hand-picked cases.
    assert lm.additivity_gap(lambda x: x + 1.0, np.zeros(2), np.zeros(2)) == 1.0
    # (4, 16) - 2 (1, 4)
    assert lm.homogeneity_gap(lambda x: x**2, np.array([1.0, 2.0]), 2.0) == 8.0


def test_cosine_similarity_and_the_king_queen_analogy():
    a, b = np.array([1.0, 2.0, 2.0]), np.array([2.0, 0.0, 1.0])
    assert lm.cosine_similarity(a, b) == pytest.approx(
        (2 + 0 + 2) / (3 * math.sqrt(5)), rel=1e-15
    )
    vocabulary = {
        "king": np.array([1.0, 0.8, -0.2, 0.5]),
        "man": np.array([0.3, 0.9, -0.1, 0.0]),
        "woman": np.array([-0.3, 0.8, 0.1, 0.0]),
        "queen": np.array([0.4, 0.7, -0.1, 0.5]),
    }
    result = vocabulary["king"] - vocabulary["man"] + vocabulary["woman"]
    np.testing.assert_allclose(result, [0.4, 0.7, 0.0, 0.5], atol=1e-15)
    ranking = lm.nearest_by_cosine(result, vocabulary)
    assert ranking[0][0] == "queen" and [w for w, _ in ranking] == [
        "queen",
        "king",
        "man",
        "woman",
    ]
    assert (
        lm.nearest_by_cosine(result, vocabulary, exclude=["king", "man", "woman"])[0][0]
        == "queen"
    )
    with pytest.raises(ValueError, match="exclude"):
        lm.nearest_by_cosine(result, vocabulary, exclude=["prince"])
    with pytest.raises(ValueError, match="non-zero"):
        lm.cosine_similarity(np.zeros(2), np.ones(2))


def test_basis_geometry_of_rotation_shear_and_scaling():
    for angle in (0.0, math.pi / 6, 2.0, -1.0):
        side_i, side_j, between, area = lm.basis_geometry(lm.rotation_matrix(angle))
        assert side_i == pytest.approx(1.0) and side_j == pytest.approx(1.0)
        assert between == pytest.approx(90.0) and area == pytest.approx(1.0)
    geometry = lm.basis_geometry(lm.shear_matrix(1.0))
    assert geometry.length_i == 1.0 and geometry.length_j == pytest.approx(
        math.sqrt(2), rel=1e-15
    )
    assert geometry.angle == pytest.approx(
        45.0, abs=1e-12
    ) and geometry.area == pytest.approx(1.0)
    # shear by k: e_2 -> (k, 1), so the angle to e_1 = (1, 0) is atan2(1, k)
    assert lm.basis_geometry(lm.shear_matrix(-3.0)).angle == pytest.approx(
        math.degrees(math.atan2(1, -3))
    )
    assert tuple(lm.basis_geometry(lm.scaling_matrix([2.0, -0.5]))) == pytest.approx(
        (2.0, 0.5, 90.0, 1.0)
    )
    assert lm.basis_geometry([[1.0, 2.0], [1.0, 2.0]]).angle == 0.0  # parallel columns
    # opposite columns
    assert lm.basis_geometry([[1.0, -2.0], [1.0, -2.0]]).angle == 180.0


@given(st.integers(0, 2**32 - 1))
def test_basis_geometry_area_is_base_times_height(seed):
    matrix = np.random.default_rng(seed).normal(size=(2, 2))
    side_i, side_j, between, area = lm.basis_geometry(matrix)
    # image of the unit square
    corners = matrix @ np.array([[0.0, 1.0, 1.0, 0.0], [0.0, 0.0, 1.0, 1.0]])
    x, y = corners
    shoelace = 0.5 * abs(np.dot(x, np.roll(y, -1)) - np.dot(y, np.roll(x, -1)))
    assert area == pytest.approx(shoelace, rel=1e-9, abs=1e-12)
    assert side_i == pytest.approx(
        math.hypot(*matrix[:, 0])
    ) and side_j == pytest.approx(math.hypot(*matrix[:, 1]))
    cosine = matrix[:, 0] @ matrix[:, 1] / (side_i * side_j)
    if abs(cosine) < 0.99:  # where acos is well conditioned
        assert between == pytest.approx(math.degrees(math.acos(cosine)), rel=1e-9)
    assert 0.0 <= between <= 180.0


@pytest.mark.parametrize(
    "call,error,name",
    [
        (lambda: lm.scaling_matrix([]), ValueError, "factors"),
        (lambda: lm.rotation_matrix(float("nan")), ValueError, "angle"),
        (lambda: lm.rotation_matrix("0.1"), TypeError, "angle"),
        (lambda: lm.shear_matrix(1.0, axis="z"), ValueError, "axis"),
        (lambda: lm.shear_matrix(1.0, axis=0), ValueError, "axis"),
        (lambda: lm.shear_matrix([1.0, 2.0]), ValueError, "amount"),
        (lambda: lm.shear_matrix("1"), TypeError, "amount"),
        (lambda: lm.scaling_matrix(np.eye(2)), ValueError, "factors"),
        (lambda: lm.lift_matrix(3, 2), ValueError, "dim_out"),
        (lambda: lm.projection_matrix(3, [3]), ValueError, "keep"),
        (lambda: lm.projection_matrix(3, [0, 0]), ValueError, "keep"),
        (lambda: lm.mask_matrix(3, []), ValueError, "keep"),
        (lambda: lm.mask_matrix(0, [0]), ValueError, "dim"),
        (lambda: lm.cosine_similarity(np.ones(2), np.ones(3)), ValueError, "a and b"),
        (lambda: lm.basis_geometry(np.eye(3)), ValueError, "matrix"),
        (lambda: lm.basis_geometry([[0.0, 1.0], [0.0, 1.0]]), ValueError, "non-zero"),
        (
            lambda: lm.additivity_gap(lambda x: x, np.ones(2), np.ones(3)),
            ValueError,
            "x and y",
        ),
        (
            lambda: lm.linearity_violation(
                lambda x: x, 2, np.random.default_rng(0), trials=0
            ),
            ValueError,
            "trials",
        ),
    ],
)
def test_bad_input_names_the_argument(call, error, name):
    with pytest.raises(error, match=name):
        call()
