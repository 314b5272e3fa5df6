"""posenc.sinusoidal against the paper's formula evaluated entry by entry with the math module."""

import math

import numpy as np
import pytest

from posenc import frequencies, sinusoidal_encoding, wavelengths


@pytest.mark.parametrize("num_positions,d_model,base", [(1, 2, 10000.0), (7, 6, 10000.0), (50, 128, 10000.0), (9, 10, 500.0)])
def test_matches_the_formula_entry_by_entry(num_positions, d_model, base):
    encoding = sinusoidal_encoding(num_positions, d_model, base)
    assert encoding.shape == (num_positions, d_model) and encoding.dtype == np.float64
    for pos in range(num_positions):
        for i in range(d_model // 2):
            angle = pos / base ** (2 * i / d_model)
            assert encoding[pos, 2 * i] == pytest.approx(math.sin(angle), abs=1e-12)
            assert encoding[pos, 2 * i + 1] == pytest.approx(math.cos(angle), abs=1e-12)


def test_note_000_worked_example_at_its_printed_precision():
    printed = np.array([
        [0, 1, 0, 1],
        [0.8415, 0.5403, 0.0100, 0.99995],
        [0.9093, -0.4161, 0.0200, 0.99980],
        [0.1411, -0.9900, 0.0300, 0.99955],
    ])
    np.testing.assert_allclose(sinusoidal_encoding(4, 4), printed, atol=5e-5)


def test_pairs_lie_on_the_unit_circle_and_values_are_bounded():
    encoding = sinusoidal_encoding(2000, 64)
    np.testing.assert_allclose(encoding[:, 0::2] ** 2 + encoding[:, 1::2] ** 2, 1.0, rtol=1e-12)
    assert np.max(np.abs(encoding)) <= 1.0


def test_frequencies_and_wavelengths_form_a_geometric_progression():
    omega = frequencies(8)
    np.testing.assert_allclose(omega, [1.0, 10000 ** -0.25, 10000 ** -0.5, 10000 ** -0.75], rtol=1e-15)
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
