"""The RoPE forms ``make bench`` times against :func:`posenc.apply_rope`.

Imports torch; import by name: ``from posenc.bench import forms``. Each form computes
the same rotation (the tests check it): block-diagonal matrices, the complex product,
and the formula of Hugging Face ``transformers`` transcribed as it is written there.
Angles are formed in float64 everywhere (:func:`posenc.rope.rope_angles`) and only
cos, sin or the rotors are cast. :func:`memory_floor` is the yardstick: one read and
one write of x.
"""

from __future__ import annotations

import numpy as np
import torch

from posenc._validation import (
    check_even_positive_int,
)
from posenc.fast_rope import complex_rotors, rotate_by_rotors
from posenc.rope import rope_angles, rope_inv_freq
from posenc.rotation import block_diagonal_rotation, cos_sin


def _cos_sin(positions: object, dim: int, base: float) -> tuple[np.ndarray, np.ndarray]:
    inv_freq = rope_inv_freq(check_even_positive_int(dim, "dim"), base)
    return cos_sin(rope_angles(positions, inv_freq))


def cos_sin_tables(
    positions: object,
    dim: int,
    *,
    base: float = 10000.0,
    dtype: torch.dtype = torch.float32,
) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin of m * theta_i, each (seq, dim/2) in ``dtype``.

    The tables :func:`posenc.rope.rotate_pairs` takes; computed in float64,
    then cast.
    """
    cos, sin = _cos_sin(positions, dim, base)
    return torch.from_numpy(cos).to(dtype), torch.from_numpy(sin).to(dtype)


def rope_matrices(
    positions: object,
    dim: int,
    *,
    base: float = 10000.0,
    dtype: torch.dtype = torch.float32,
) -> torch.Tensor:
    """The block-diagonal R_m of every position, shape (seq, dim, dim).

    Interleaved pairs, the form of note 000 and RoFormer eq. 13: block i of
    R_m is [[cos, -sin], [sin, cos]] of the angle m * theta_i. Equal to
    stacking :func:`posenc.rope_matrix`, built at once.
    """
    matrices = block_diagonal_rotation(*_cos_sin(positions, dim, base))
    return torch.from_numpy(matrices).to(dtype)


def rotate_by_matrices(x: torch.Tensor, matrices: torch.Tensor) -> torch.Tensor:
    """x' = R_m x for every row, O(dim²) per row.

    ``x``: (..., seq, dim); ``matrices``: (seq, dim, dim).
    """
    return torch.einsum("sij,...sj->...si", matrices, x)


def rotor_table(
    positions: object,
    dim: int,
    *,
    base: float = 10000.0,
    dtype: torch.dtype = torch.complex64,
) -> torch.Tensor:
    """exp(j m theta_i) for every position and pair, shape (seq, dim/2).

    As Meta's LLaMA code caches them: :func:`posenc.fast_rope.complex_rotors`
    of the cos and sin tables in the matching real precision.
    """
    if dtype not in (torch.complex64, torch.complex128):
        raise ValueError(
            f"dtype must be torch.complex64 or torch.complex128, got {dtype}"
        )
    real_dtype = torch.float64 if dtype == torch.complex128 else torch.float32
    return complex_rotors(*cos_sin_tables(positions, dim, base=base, dtype=real_dtype))


def rotate_complex(x: torch.Tensor, rotors: torch.Tensor) -> torch.Tensor:
    """Interleaved RoPE in the complex form of Meta's reference code.

    RoFormer sec. 3.4.2. ``x``: (..., seq, dim) float32 or float64 with a
    contiguous last dimension; ``rotors``: (seq, dim/2) complex of the
    matching precision, cached beforehand (:func:`rotor_table`). The
    product is :func:`posenc.fast_rope.rotate_by_rotors`.
    """
    return rotate_by_rotors(x, rotors)


def transformers_cos_sin(
    positions: object,
    dim: int,
    *,
    base: float = 10000.0,
    dtype: torch.dtype = torch.float32,
) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin of shape (seq, dim), as transformers caches them.

    Each angle appears twice: the angles of pairs 0 .. dim/2 - 1, repeated.
    """
    cos, sin = cos_sin_tables(positions, dim, base=base, dtype=dtype)
    return torch.cat((cos, cos), dim=-1), torch.cat((sin, sin), dim=-1)


def rotate_half_as_in_transformers(x: torch.Tensor) -> torch.Tensor:
    """transformers' ``rotate_half``, transcribed: (x1, x2) -> (-x2, x1) for the two halves.

    A deliberate copy of Hugging Face transformers' helper (``modeling_llama.py``),
    kept so that the benchmark times that library's formula as it is written;
    posenc's own half layout is :func:`posenc.rope.rotate_pairs`.
    """
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def transformers_formula(
    x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor
) -> torch.Tensor:
    """Half-layout RoPE as transformers' ``apply_rotary_pos_emb`` writes it, transcribed.

    q * cos + rotate_half(q) * sin, with ``cos``, ``sin`` (seq, dim) from
    :func:`transformers_cos_sin`: a deliberate copy of that library's formula,
    the baseline the benchmark compares with.
    """
    return x * cos + rotate_half_as_in_transformers(x) * sin


def memory_floor(x: torch.Tensor) -> torch.Tensor:
    """One pass that reads x and writes a new tensor of its size: x * 2.0."""
    return x * 2.0
