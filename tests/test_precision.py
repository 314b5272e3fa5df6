"""posenc.book.precision against independent arithmetic: numpy float32/float16, a bit-level bfloat16, closed forms."""

import math

import numpy as np
import pytest

from posenc import rope_inv_freq
from posenc.book import precision
from posenc.rope import rope_angles

pytestmark = pytest.mark.torch  # make portability re-runs it (tests/conftest.py)

THETA = rope_inv_freq(128)
POSITIONS = np.array(
    [0, 1, 2, 255, 256, 257, 4097, 65_504, 65_519, 65_520, 100_000, 999_999, 1_000_000]
)


def bfloat16_round(values):
    """Round to bfloat16 (8 significant bits) with ties to even, via float32 bits: independent of torch."""
    bits = (
        np.asarray(values, dtype=np.float64)
        .astype(np.float32)
        .view(np.uint32)
        .astype(np.uint64)
    )
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return rounded.astype(np.uint32).view(np.float32).astype(np.float64)


def test_stored_positions_by_hand():
    stored = precision.stored_positions([255, 256, 257, 258, 1_000_000], "bfloat16")
    # 257 ties to even; 1e6 -> 244 * 4096
    assert stored.tolist() == [
        255.0,
        256.0,
        256.0,
        258.0,
        999_424.0,
    ]
    assert precision.stored_positions([65_504, 65_519, 65_520], "float16").tolist() == [
        65_504.0,
        65_504.0,
        math.inf,
    ]
    assert precision.stored_positions([2**24 + 1], "float32").tolist() == [2.0**24]
    assert precision.stored_positions([2**24 + 1], "float64").tolist() == [2.0**24 + 1]


def test_bfloat16_keeps_few_distinct_positions():
    stored = precision.stored_positions(np.arange(1_000_001), "bfloat16")
    np.testing.assert_array_equal(stored, bfloat16_round(np.arange(1_000_001)))
    assert len(np.unique(stored)) < 3000


def test_angles_in_float64_are_rope_angles():
    np.testing.assert_array_equal(
        precision.angles_in(POSITIONS, THETA, "float64"), rope_angles(POSITIONS, THETA)
    )


def test_angles_in_float32_and_float16_equal_numpy_arithmetic():
    with np.errstate(over="ignore"):
        for name, numpy_dtype in [("float32", np.float32), ("float16", np.float16)]:
            expected = (
                POSITIONS.astype(numpy_dtype)[:, None]
                * THETA.astype(numpy_dtype)[None, :]
            ).astype(np.float64)
            np.testing.assert_array_equal(
                precision.angles_in(POSITIONS, THETA, name), expected
            )
    assert np.all(np.isinf(precision.angles_in([70_000], THETA, "float16")))


def test_angles_in_bfloat16_equal_a_bit_level_rounding():
    # the product of two 8-bit significands is exact in float32, then rounded once to bfloat16
    exact_product = bfloat16_round(POSITIONS)[:, None] * bfloat16_round(THETA)[None, :]
    np.testing.assert_array_equal(
        precision.angles_in(POSITIONS, THETA, "bfloat16"), bfloat16_round(exact_product)
    )


def test_positions_stored_in_bfloat16_then_float32_angles():
    angles = precision.angles_in(POSITIONS, THETA, "float32", position_dtype="bfloat16")
    expected = (
        bfloat16_round(POSITIONS).astype(np.float32)[:, None]
        * THETA.astype(np.float32)[None, :]
    )
    np.testing.assert_array_equal(angles, expected.astype(np.float64))


def test_exact_cos_sin_against_float64_within_the_rounding_of_the_product():
    cos, sin = precision.exact_cos_sin(POSITIONS, THETA)
    np.testing.assert_allclose(cos**2 + sin**2, 1.0, atol=1e-15)
    angles = rope_angles(POSITIONS, THETA)
    # float64 product rounding, then cos/sin rounding
    bound = np.spacing(angles) / 2 + 2e-16
    assert np.all(np.abs(np.cos(angles) - cos) <= bound) and np.all(
        np.abs(np.sin(angles) - sin) <= bound
    )
    assert np.max(np.abs(np.cos(angles[:3]) - cos[:3])) < 1e-15  # positions 0, 1, 2


def test_cos_error_of_float32_equals_numpy_float32_and_grows():
    error = precision.cos_error(POSITIONS, THETA, "float32")
    exact, _ = precision.exact_cos_sin(POSITIONS, THETA)
    angles32 = POSITIONS.astype(np.float32)[:, None] * THETA.astype(np.float32)[None, :]
    independent = np.max(np.abs(np.cos(angles32).astype(np.float64) - exact), axis=1)
    np.testing.assert_allclose(error, independent, atol=3e-7, rtol=0)
    assert error[0] < 1e-7 and 1e-3 < error[-1] < 0.1


def test_cos_error_bounds_and_overflow():
    assert np.all(precision.cos_error(POSITIONS, THETA, "float64") < 1e-9)
    assert np.all(precision.cos_error(POSITIONS, THETA, "bfloat16") <= 2.0)
    half = precision.cos_error(POSITIONS, THETA, "float16")
    assert np.all(np.isnan(half[POSITIONS >= 65_520])) and not np.any(
        np.isnan(half[POSITIONS < 65_520])
    )


def test_rotation_error_of_one_pair_is_the_chord_between_the_angles():
    theta = np.array([0.3])
    positions = np.array([1, 1000, 123_457, 999_999])
    x = np.tile([1.0, 0.0], (4, 1))
    error = precision.rotation_error(
        x, positions, theta, "float32", value_dtype="float64"
    )
    angle32 = (positions.astype(np.float32) * np.float32(0.3)).astype(np.float64)
    chord = 2 * np.abs(np.sin((angle32 - positions * 0.3) / 2))  # |e^{j a32} - e^{j a}|
    np.testing.assert_allclose(error, chord, atol=2e-7, rtol=0)
    assert chord[-1] > 1e-2


def test_rotation_error_float64_tiny_and_bfloat16_values_flat():
    rng = np.random.default_rng(0)
    positions = np.array([1, 100, 10_000, 1_000_000])
    x = rng.normal(size=(4, 128))
    assert np.all(
        precision.rotation_error(x, positions, THETA, "float64", value_dtype="float64")
        < 1e-9
    )
    float32_values = precision.rotation_error(
        x, positions, THETA, "float64", value_dtype="float32"
    )
    assert np.all(float32_values < 2e-7)  # only float32 rounding, at any position
    bf16_values = precision.rotation_error(
        x, positions, THETA, "float64", value_dtype="bfloat16"
    )
    assert (
        np.all((1e-4 < bf16_values) & (bf16_values < 1e-2))
        and bf16_values.max() < 5 * bf16_values.min()
    )
    half_layout = precision.rotation_error(
        x, positions, THETA, "float32", layout="half"
    )
    assert half_layout[-1] > 1e-3


@pytest.mark.parametrize(
    "call,error,name",
    [
        (lambda: precision.angles_in([1], THETA, "float8"), ValueError, "dtype"),
        (
            lambda: precision.angles_in([1], THETA, "float32", position_dtype="int8"),
            ValueError,
            "dtype",
        ),
        (lambda: precision.angles_in([1.5], THETA, "float32"), TypeError, "positions"),
        (
            lambda: precision.cos_error([1], np.ones((2, 2)), "float32"),
            ValueError,
            "inv_freq",
        ),
        (
            lambda: precision.rotation_error(
                np.ones((2, 4)), [1], THETA[:2], "float32"
            ),
            ValueError,
            "x",
        ),
        (
            lambda: precision.rotation_error(
                np.ones((1, 4)), [1], THETA[:2], "float32", value_dtype="x"
            ),
            ValueError,
            "value_dtype",
        ),
    ],
)
def test_bad_input_names_the_argument(call, error, name):
    with pytest.raises(error, match=f"^{name} must"):
        call()
