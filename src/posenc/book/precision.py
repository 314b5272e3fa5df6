"""How precise RoPE is in low-precision number formats. Imports torch.

A model computes the angles m * theta_i, their cosines and sines, and the
rotated vector in some floating-point type. This module replays those steps
in a torch dtype of your choice and measures the result against exact
arithmetic (mpmath, 30 significant digits), so the book can show where each
dtype breaks down as the position m grows. Import by name:
``from posenc.book import precision``.

Dtypes are given by name: ``"float64"``, ``"float32"``, ``"bfloat16"``,
``"float16"``.
"""

from __future__ import annotations

import mpmath
import numpy as np
import torch

from posenc._validation import (
    as_float_array,
    as_float_vector,
    as_int_array,
    check_choice,
)
from posenc.rope import rotate_pairs
from posenc.rotation import cos_sin

DTYPES = {
    "float64": torch.float64,
    "float32": torch.float32,
    "bfloat16": torch.bfloat16,
    "float16": torch.float16,
}


def _dtype(name: object, argument: str) -> torch.dtype:
    return DTYPES[check_choice(name, argument, list(DTYPES))]


def _inv_freq(inv_freq: object) -> np.ndarray:
    return as_float_vector(inv_freq, "inv_freq", "(dim/2,)")


def stored_positions(positions: object, dtype: str) -> np.ndarray:
    """The positions after storing them in ``dtype``, as float64, (seq,).

    Round to nearest, ties to even. bfloat16 keeps 8 significant bits: above
    256 not every integer exists, and 1,000,000 is stored as 999,424.
    float16 keeps 11 bits and has no number above 65,504 (inf).
    """
    positions = as_int_array(positions, "positions")
    stored = torch.from_numpy(positions).to(_dtype(dtype, "dtype"))
    return stored.double().numpy()


def angles_in(
    positions: object,
    inv_freq: object,
    dtype: str,
    *,
    position_dtype: str | None = None,
) -> np.ndarray:
    """The angles m * theta_i as computed in ``dtype``, (seq, dim/2) float64.

    The positions are first stored in ``position_dtype`` (default
    ``dtype``); then both factors are rounded to ``dtype`` and multiplied
    there, which rounds the product once more. ``inv_freq``: (dim/2,)
    frequencies in radians per position, e.g. ``posenc.rope_inv_freq``.
    Compare :func:`posenc.rope.rope_angles`, which multiplies in float64.
    """
    compute = _dtype(dtype, "dtype")
    storage = dtype if position_dtype is None else position_dtype
    m = torch.from_numpy(stored_positions(positions, storage)).to(compute)
    theta = torch.from_numpy(_inv_freq(inv_freq)).to(compute)
    return (m[:, None] * theta[None, :]).double().numpy()


def exact_cos_sin(positions: object, inv_freq: object) -> tuple[np.ndarray, np.ndarray]:
    """cos and sin of m * theta_i in 30-digit arithmetic, each (seq, dim/2).

    mpmath, rounded to float64 at the end. ``inv_freq`` is taken as exact
    (the float64 numbers a model stores), so the reference has no rounding
    but the final one.
    """
    positions = as_int_array(positions, "positions")
    inv_freq = _inv_freq(inv_freq)
    cos = np.empty((positions.size, inv_freq.size))
    sin = np.empty_like(cos)
    with mpmath.workdps(30):
        for row, m in enumerate(positions.tolist()):
            for column, theta in enumerate(inv_freq.tolist()):
                angle = mpmath.mpf(m) * mpmath.mpf(theta)
                cos[row, column] = float(mpmath.cos(angle))
                sin[row, column] = float(mpmath.sin(angle))
    return cos, sin


def cos_sin_in(
    positions: object,
    inv_freq: object,
    dtype: str,
    *,
    position_dtype: str | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """cos and sin, evaluated in ``dtype``, of :func:`angles_in`'s angles.

    Returned as float64, each (seq, dim/2). An infinite angle (float16
    beyond 65,504) gives NaN, as it does in a model.
    """
    angles = angles_in(positions, inv_freq, dtype, position_dtype=position_dtype)
    cos, sin = cos_sin(torch.from_numpy(angles).to(DTYPES[dtype]))  # evaluated in dtype
    return cos.double().numpy(), sin.double().numpy()


def cos_error(
    positions: object,
    inv_freq: object,
    dtype: str,
    *,
    position_dtype: str | None = None,
) -> np.ndarray:
    """Largest |cos(m theta_i) in ``dtype`` - exact| over the pairs, (seq,).

    At most 2 (two cosines differ by at most 2); NaN where the dtype
    overflows.
    """
    low, _ = cos_sin_in(positions, inv_freq, dtype, position_dtype=position_dtype)
    exact, _ = exact_cos_sin(positions, inv_freq)
    return np.max(np.abs(low - exact), axis=1)


def rotation_error(
    x: object,
    positions: object,
    inv_freq: object,
    angle_dtype: str,
    *,
    value_dtype: str = "float32",
    position_dtype: str | None = None,
    layout: str = "interleaved",
) -> np.ndarray:
    """Relative error ||x'_low - x'_exact|| / ||x|| of each rotated row.

    ``x``: (seq, dim) numpy float64, one row per position; returns (seq,).
    x'_low is what a model computes: angles and their cos/sin in
    ``angle_dtype`` (positions stored in ``position_dtype``), cos/sin and x
    cast to ``value_dtype``, and :func:`posenc.rope.rotate_pairs` in
    ``value_dtype``. x'_exact rotates the float64 x by the exact cos/sin
    (:func:`exact_cos_sin`) in float64.
    """
    x = as_float_array(x, "x")
    positions = as_int_array(positions, "positions")
    inv_freq = _inv_freq(inv_freq)
    expected = (positions.size, 2 * inv_freq.size)
    if x.shape != expected:
        raise ValueError(f"x must have shape (seq, dim) = {expected}, got {x.shape}")
    values = _dtype(value_dtype, "value_dtype")
    cos, sin = cos_sin_in(
        positions, inv_freq, angle_dtype, position_dtype=position_dtype
    )
    low = rotate_pairs(
        torch.from_numpy(x).to(values),
        torch.from_numpy(cos).to(values),
        torch.from_numpy(sin).to(values),
        layout,
    )
    exact = rotate_pairs(x, *exact_cos_sin(positions, inv_freq), layout)
    error = np.linalg.norm(low.double().numpy() - exact, axis=1)
    return error / np.linalg.norm(x, axis=1)
