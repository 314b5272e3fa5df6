"""The two formulas every rotation in the book is built from, each written once.

* :func:`cos_sin`: the cosines and sines of angles (times an attention factor), the
  table that RoPE, its cached module, the sinusoidal encoding and its shift matrix read.
* :func:`block_diagonal_rotation`: the matrix with one 2x2 block
  ``[[cos, -sin], [sin, cos]]`` per pair, counter-clockwise on column vectors. RoPE's
  R_m (:func:`posenc.rope.rope_matrix`), the single rotation
  (:func:`posenc.rope.rotation_matrix`), the benchmark's matrices and the sinusoidal
  shift matrix (:func:`posenc.sinusoidal.shift_matrix`) are all this matrix.

Two layouts decide which features form pair ``i`` (see :mod:`posenc.rope`):
``"interleaved"``, features ``(2i, 2i + 1)``, and ``"half"``, features ``(i, i + dim/2)``.
This module imports nothing from the rest of ``posenc`` but the argument checks, so
every other module can use it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from posenc._validation import check_choice, is_torch_tensor

LAYOUTS = ("interleaved", "half")


def check_layout(layout: object) -> str:
    """Return ``layout`` if it is one of :data:`LAYOUTS`, else a ValueError naming them."""
    return check_choice(layout, "layout", LAYOUTS)


def cos_sin(angles: Any, attention_factor: float = 1.0) -> tuple[Any, Any]:
    """``attention_factor * cos(angles)`` and ``attention_factor * sin(angles)``.

    ``angles`` in radians: a numpy array (numpy evaluates) or a torch tensor (torch
    evaluates, in the tensor's dtype); the results are of the same kind and shape.
    With the default factor 1 nothing is multiplied.
    """
    if is_torch_tensor(angles):
        import torch

        cos, sin = torch.cos(angles), torch.sin(angles)
    else:
        cos, sin = np.cos(angles), np.sin(angles)
    if attention_factor != 1.0:
        cos, sin = cos * attention_factor, sin * attention_factor
    return cos, sin


def block_diagonal_rotation(
    cos: np.ndarray, sin: np.ndarray, layout: str = "interleaved"
) -> np.ndarray:
    """The (..., dim, dim) matrix rotating pair i by the angle whose cosine and sine are given.

    ``cos``, ``sin``: numpy arrays of shape (..., dim/2), one entry per pair; leading
    axes give a stack of matrices. Pair i occupies features ``(p, q)`` =
    ``(2i, 2i + 1)`` (``"interleaved"``) or ``(i, i + dim/2)`` (``"half"``), and its
    block is ``[[cos_i, -sin_i], [sin_i, cos_i]]`` on those rows and columns: a
    counter-clockwise rotation of column vectors. Everything else is 0. float64.
    """
    layout = check_layout(layout)
    cos, sin = np.broadcast_arrays(
        np.asarray(cos, dtype=np.float64), np.asarray(sin, dtype=np.float64)
    )
    pairs = cos.shape[-1]
    if layout == "interleaved":
        first, second = 2 * np.arange(pairs), 2 * np.arange(pairs) + 1
    else:
        first, second = np.arange(pairs), np.arange(pairs) + pairs
    matrix = np.zeros((*cos.shape[:-1], 2 * pairs, 2 * pairs), dtype=np.float64)
    matrix[..., first, first] = cos
    matrix[..., first, second] = -sin
    matrix[..., second, first] = sin
    matrix[..., second, second] = cos
    return matrix
