"""posenc.sinusoidal against the paper's formula evaluated entry by entry with the math module."""

import math

import numpy as np
import pytest

from posenc import frequencies, sinusoidal_encoding, wavelengths


@pytest.mark.parametrize(
    "num_positions,d_model,base",
    [(1, 2, 10000.0), (7, 6, 10000.0), (50, 128, 10000.0), (9, 10, 500.0)],
)
def test_matches_the_formula_entry_by_entry(num_positions, d_model, base):
    encoding = sinusoidal_encoding(num_positions, d_model, base)
    assert encoding.shape == (num_positions, d_model) and encoding.dtype == np.float64
    for pos in range(num_positions):
        for i in range(d_model // 2):
            angle = pos / base ** (2 * i / d_model)
            assert encoding[pos, 2 * i] == pytest.approx(math.sin(angle), abs=1e-12)
            assert encoding[pos, 2 * i + 1] == pytest.approx(math.cos(angle), abs=1e-12)


def test_note_000_worked_example_at_its_printed_precision():
    printed = np.array(
        [
            [0, 1, 0, 1],
            [0.8415, 0.5403, 0.0100, 0.99995],
            [0.9093, -0.4161, 0.0200, 0.99980],
            [0.1411, -0.9900, 0.0300, 0.99955],
        ]
    )
    np.testing.assert_allclose(sinusoidal_encoding(4, 4), printed, atol=5e-5)


def test_pairs_lie_on_the_unit_circle_and_values_are_bounded():
    encoding = sinusoidal_encoding(2000, 64)
    np.testing.assert_allclose(
        encoding[:, 0::2] ** 2 + encoding[:, 1::2] ** 2, 1.0, rtol=1e-12
    )
    assert np.max(np.abs(encoding)) <= 1.0


def test_frequencies_and_wavelengths_form_a_geometric_progression():
    omega = frequencies(8)
    np.testing.assert_allclose(
        omega, [1.0, 10000**-0.25, 10000**-0.5, 10000**-0.75], rtol=1e-15
    )
    np.testing.assert_allclose(wavelengths(8) * omega, 2 * np.pi, rtol=1e-15)


@pytest.mark.parametrize(
    "arguments,error,name",
    [
        ((4, 3), ValueError, "d_model"),
        ((0, 4), ValueError, "num_positions"),
        ((4, -2), ValueError, "d_model"),
        ((4.0, 4), TypeError, "num_positions"),
        ((4, 4, 0.0), ValueError, "base"),
        ((True, 4), TypeError, "num_positions"),
    ],
)
def test_bad_input_names_the_argument(arguments, error, name):
    with pytest.raises(error, match=name):
        sinusoidal_encoding(*arguments)


# ---- encoding at arbitrary positions, the offset dot product, additive fusion ----------------

from posenc import (  # noqa: E402
    add_sinusoidal_encoding,
    dot_product_by_offset,
    sinusoidal_encoding_at,
)


def test_encoding_at_positions_matches_the_table_and_the_formula():
    table = sinusoidal_encoding(300, 12)
    np.testing.assert_array_equal(sinusoidal_encoding_at(range(300), 12), table)
    positions = [-17, -1, 0, 5, 299, 1000]
    encoding = sinusoidal_encoding_at(positions, 12, base=300.0)
    for row, pos in enumerate(positions):
        for i in range(6):
            angle = pos / 300.0 ** (2 * i / 12)
            assert encoding[row, 2 * i] == pytest.approx(math.sin(angle), abs=1e-12)
            assert encoding[row, 2 * i + 1] == pytest.approx(math.cos(angle), abs=1e-12)


def test_encoding_far_beyond_any_training_length_is_accurate():
    """Position 1e6 against 50-digit arithmetic (mpmath) on the same float64 frequencies."""
    import mpmath

    mpmath.mp.dps = 50
    omega = frequencies(64)
    encoding = sinusoidal_encoding_at([1_000_000, 123_456_789], 64)
    for row, pos in enumerate([1_000_000, 123_456_789]):
        exact = [
            float(f(mpmath.mpf(pos) * mpmath.mpf(float(w))))
            for w in omega
            for f in (mpmath.sin, mpmath.cos)
        ]
        np.testing.assert_allclose(
            encoding[row], exact, atol=1e-7 if pos > 10**7 else 1e-9
        )


def test_dot_product_depends_only_on_the_offset_and_not_on_its_sign():
    encoding = sinusoidal_encoding(2000, 32)
    for offset in (0, 1, 7, 100, 999):
        dots = np.sum(encoding[: 2000 - offset] * encoding[offset:], axis=1)
        expected = dot_product_by_offset([offset], 32)[0]
        np.testing.assert_allclose(dots, expected, atol=1e-9)
    np.testing.assert_allclose(dot_product_by_offset([0], 32), [16.0], rtol=1e-15)
    offsets = np.arange(-500, 501)
    np.testing.assert_array_equal(
        dot_product_by_offset(offsets, 32), dot_product_by_offset(-offsets, 32)
    )


def test_additive_fusion_adds_row_p_of_the_table_to_token_p():
    embeddings = np.arange(24, dtype=float).reshape(6, 4) / 10
    np.testing.assert_array_equal(
        add_sinusoidal_encoding(embeddings), embeddings + sinusoidal_encoding(6, 4)
    )
    with pytest.raises(ValueError, match="d_model"):
        add_sinusoidal_encoding(np.ones((3, 5)))
    with pytest.raises(ValueError, match="embeddings"):
        add_sinusoidal_encoding(np.ones(4))
    with pytest.raises(ValueError, match="embeddings"):
        add_sinusoidal_encoding(np.ones((0, 4)))
    with pytest.raises(TypeError, match="embeddings"):
        add_sinusoidal_encoding(np.ones((2, 4), dtype=bool))


@pytest.mark.parametrize("base", [100.0, 500000.0])
def test_additive_fusion_uses_the_base_it_is_given(base):
    embeddings = np.random.default_rng(8).normal(size=(7, 6))
    fused = add_sinusoidal_encoding(embeddings, base=base)
    np.testing.assert_array_equal(fused, embeddings + sinusoidal_encoding(7, 6, base))
    # not the default base's table
    assert np.max(np.abs(fused - add_sinusoidal_encoding(embeddings))) > 0.1


@pytest.mark.parametrize(
    "call,error,name",
    [
        (lambda: sinusoidal_encoding_at([0.0, 1.0], 4), TypeError, "positions"),
        (lambda: sinusoidal_encoding_at([[0, 1]], 4), ValueError, "positions"),
        (lambda: sinusoidal_encoding_at([True, False], 4), TypeError, "positions"),
        (lambda: sinusoidal_encoding_at([1, 2], 5), ValueError, "d_model"),
        (lambda: dot_product_by_offset([0.5], 4), TypeError, "offsets"),
        (lambda: dot_product_by_offset([1], 4, base=-1.0), ValueError, "base"),
    ],
)
def test_bad_positions_and_offsets_name_the_argument(call, error, name):
    with pytest.raises(error, match=name):
        call()
