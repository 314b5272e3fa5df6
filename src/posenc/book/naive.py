"""Naive position codes that chapter 1 tests against the requirements of a good encoding.

Each function returns an array of shape (num_positions, width), float64, one row per
position 0 .. num_positions-1, so it can be compared with ``sinusoidal_encoding``.
"""

from __future__ import annotations

import numpy as np

from posenc._validation import check_positive_int


def normalized_position(num_positions: int) -> np.ndarray:
    """p / (num_positions - 1) in [0, 1]: 0 for the first token, 1 for the last; shape (n, 1).

    A one-token sequence gets 0.
    """
    num_positions = check_positive_int(num_positions, "num_positions")
    positions = np.arange(num_positions, dtype=np.float64)
    return (positions / max(num_positions - 1, 1))[:, None]


def integer_position(num_positions: int) -> np.ndarray:
    """The raw index p = 0, 1, 2, ... as a float64 column, shape (n, 1)."""
    num_positions = check_positive_int(num_positions, "num_positions")
    return np.arange(num_positions, dtype=np.float64)[:, None]


def digit_encoding(num_positions: int, num_digits: int, base: int = 10) -> np.ndarray:
    """Digits of p in ``base``, least significant first: floor(p / base**k) mod base.

    Shape (num_positions, num_digits). Digit k repeats with period base**(k + 1), the
    discrete cousin of the sinusoidal wavelengths. Positions that need more than
    ``num_digits`` digits are a ``ValueError`` rather than a silent wrap-around.
    """
    num_positions = check_positive_int(num_positions, "num_positions")
    num_digits = check_positive_int(num_digits, "num_digits")
    base = check_positive_int(base, "base")
    if base < 2:
        raise ValueError(f"base must be at least 2, got {base}")
    if num_positions > base**num_digits:
        raise ValueError(
            f"num_positions={num_positions} needs more than num_digits={num_digits} digits in base {base}"
        )
    positions = np.arange(num_positions, dtype=np.int64)[:, None]
    place_values = base ** np.arange(num_digits, dtype=np.int64)[None, :]
    return ((positions // place_values) % base).astype(np.float64)
