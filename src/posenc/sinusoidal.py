"""The sinusoidal position encoding of "Attention Is All You Need" (Vaswani et al. 2017, sec. 3.5).

PE[pos, 2i] = sin(pos * omega_i), PE[pos, 2i + 1] = cos(pos * omega_i),
omega_i = base ** (-2i / d_model), pair index i = 0 .. d_model/2 - 1, positions from 0.
"""

from __future__ import annotations

import numpy as np

from posenc._validation import check_even_positive_int, check_positive_float, check_positive_int


def frequencies(d_model: int, base: float = 10000.0) -> np.ndarray:
    """Angular frequencies omega_i = base**(-2i/d_model) in radians per position, shape (d_model/2,)."""
    d_model = check_even_positive_int(d_model, "d_model")
    base = check_positive_float(base, "base")
    pair_index = np.arange(d_model // 2, dtype=np.float64)
    return base ** (-2.0 * pair_index / d_model)


def wavelengths(d_model: int, base: float = 10000.0) -> np.ndarray:
    """Wavelengths lambda_i = 2 pi / omega_i in positions, shape (d_model/2,)."""
    return 2.0 * np.pi / frequencies(d_model, base)


def sinusoidal_encoding(num_positions: int, d_model: int, base: float = 10000.0) -> np.ndarray:
    """Encoding of positions 0 .. num_positions-1, shape (num_positions, d_model), float64.

    Columns interleave [sin(p omega_0), cos(p omega_0), sin(p omega_1), cos(p omega_1), ...].
    """
    num_positions = check_positive_int(num_positions, "num_positions")
    omega = frequencies(d_model, base)
    angles = np.arange(num_positions, dtype=np.float64)[:, None] * omega[None, :]
    encoding = np.empty((num_positions, omega.size * 2), dtype=np.float64)
    encoding[:, 0::2] = np.sin(angles)
    encoding[:, 1::2] = np.cos(angles)
    return encoding
