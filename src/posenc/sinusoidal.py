"""The sinusoidal position encoding of "Attention Is All You Need".

Vaswani et al. 2017, sec. 3.5:
PE[pos, 2i] = sin(pos * omega_i), PE[pos, 2i + 1] = cos(pos * omega_i),
omega_i = base ** (-2i / d_model), pair index i = 0 .. d_model/2 - 1,
positions from 0.

Vectors are columns: ``shift_matrix(offset, d)`` is the matrix T with
PE(pos + offset) = T PE(pos), acting on the left of one position's column
vector. The frequencies omega_i and wavelengths are RoPE's too; they live in
:mod:`posenc.rotation` (re-exported here).
"""

from __future__ import annotations

import numpy as np

from posenc._validation import (
    as_float_array,
    as_int_array,
    check_even_positive_int,
    check_int,
    check_positive_int,
)
from posenc.rotation import block_diagonal_rotation, cos_sin, frequencies, wavelengths

__all__ = [
    "add_sinusoidal_encoding",
    "dot_product_by_offset",
    "frequencies",
    "shift_matrix",
    "sinusoidal_encoding",
    "sinusoidal_encoding_at",
    "wavelengths",
]


def _encode(positions: np.ndarray, omega: np.ndarray) -> np.ndarray:
    """Rows [sin(p w_0), cos(p w_0), sin(p w_1), ...], shape (n, d).

    ``positions``: float64, shape (n,); ``omega``: frequencies, shape (d/2,).
    """
    cos, sin = cos_sin(positions[:, None] * omega[None, :])
    encoding = np.empty((positions.size, omega.size * 2), dtype=np.float64)
    encoding[:, 0::2] = sin
    encoding[:, 1::2] = cos
    return encoding


def sinusoidal_encoding(
    num_positions: int, d_model: int, base: float = 10000.0
) -> np.ndarray:
    """Encoding of positions 0 .. num_positions-1, float64.

    Shape (num_positions, d_model). Columns interleave
    [sin(p omega_0), cos(p omega_0), sin(p omega_1), cos(p omega_1), ...].
    """
    num_positions = check_positive_int(num_positions, "num_positions")
    return _encode(
        np.arange(num_positions, dtype=np.float64), frequencies(d_model, base)
    )


def sinusoidal_encoding_at(
    positions: object, d_model: int, base: float = 10000.0
) -> np.ndarray:
    """Encoding of arbitrary integer positions, float64.

    Shape (len(positions), d_model). Row k is PE(positions[k]), the same
    formula as :func:`sinusoidal_encoding`, for any integers: far beyond a
    training length (1_000_000) or negative (the formula is defined there
    too; the shift matrix with a negative offset lands there). The angle
    p * omega_i is formed in float64.
    """
    positions = as_int_array(positions, "positions")
    return _encode(positions.astype(np.float64), frequencies(d_model, base))


def dot_product_by_offset(
    offsets: object, d_model: int, base: float = 10000.0
) -> np.ndarray:
    """PE(p) . PE(p + offset) = sum_i cos(offset * omega_i), for every p.

    The same for every position p. ``offsets``: 1-D integers, shape (k,);
    returns shape (k,). Offset 0 gives d_model / 2 (each (sin, cos) pair is a
    unit vector), and offset and -offset give the same value.
    """
    offsets = as_int_array(offsets, "offsets")
    omega = frequencies(d_model, base)
    return np.cos(offsets.astype(np.float64)[:, None] * omega[None, :]).sum(axis=1)


def add_sinusoidal_encoding(
    embeddings: np.ndarray, base: float = 10000.0
) -> np.ndarray:
    """Input of the first layer, embedding + PE (Vaswani et al. 2017, 3.5).

    ``embeddings``: token vectors of one sequence, one per row, shape
    (num_positions, d_model) with d_model even; row p gets PE(p) added.
    Returns a new array of the same shape.
    """
    embeddings = as_float_array(embeddings, "embeddings")
    if embeddings.ndim != 2:
        raise ValueError(
            f"embeddings must have shape (num_positions, d_model), got shape {embeddings.shape}"
        )
    num_positions, d_model = embeddings.shape
    if num_positions == 0:
        raise ValueError("embeddings must hold at least one token (got 0 rows)")
    d_model = check_even_positive_int(d_model, "embeddings.shape[1] (d_model)")
    return embeddings + sinusoidal_encoding(num_positions, d_model, base)


def shift_matrix(offset: int, d_model: int, base: float = 10000.0) -> np.ndarray:
    """The matrix T(offset) with PE(pos + offset) = T(offset) @ PE(pos).

    Shape (d_model, d_model), the same for every pos. Block-diagonal, one
    2x2 block per (sin, cos) pair i, with psi_i = offset * omega_i:

        [[ cos psi_i, sin psi_i],    sin(a + b) = sin a cos b + cos a sin b
         [-sin psi_i, cos psi_i]]    cos(a + b) = cos a cos b - sin a sin b

    that is R(-psi_i). Read cosine first, as the point (cos, sin), a shift
    turns each pair counter-clockwise by psi_i; stored sine first, as here,
    the same turn is written R(-psi_i).

    ``offset`` is any integer with |offset| <= 2**53 (float64 holds every
    integer up to there; beyond, a ValueError); negative offsets shift back.
    """
    offset = check_int(offset, "offset")
    if abs(offset) > 2**53:
        raise ValueError(
            f"offset must be at most 2**53 in magnitude (float64 integers are exact up to there), got {offset}"
        )
    cos_psi, sin_psi = cos_sin(float(offset) * frequencies(d_model, base))
    # the block-diagonal rotation by -psi_i: [[cos, -(-sin)], [-sin, cos]]
    return block_diagonal_rotation(cos_psi, -sin_psi)
