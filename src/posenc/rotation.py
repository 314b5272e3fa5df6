"""The formulas every rotation in the book is built from, each written once.

The lowest floor of ``posenc``: it imports nothing from the rest of the package but the
argument checks, and every module above (``sinusoidal``, ``fast_rope``, ``rope``,
``torch_rope``, ``scaling``) takes these from here.

* :func:`frequencies` and :func:`wavelengths`: omega_i = base**(-2i/d) and 2 pi / omega_i,
  the sinusoidal encoding's frequencies and RoPE's theta_i alike;
* :func:`rope_angles`: the angles m * theta_i, formed in float64 (numpy or torch);
* :func:`cos_sin`: their cosines and sines (times an attention factor);
* :func:`rotate_pairs_elementwise`: the reference rotation of every pair,
  (a, b) -> (a cos - b sin, a sin + b cos), numpy or torch;
* :func:`block_diagonal_rotation`: the same rotation as a matrix, one 2x2 block
  ``[[cos, -sin], [sin, cos]]`` per pair, counter-clockwise on column vectors. RoPE's
  R_m, the single rotation, the benchmark's matrices and the sinusoidal shift matrix are
  all this matrix.

Two layouts decide which features form pair ``i``: ``"interleaved"``, features
``(2i, 2i + 1)`` (RoFormer, GPT-J, Meta's LLaMA reference), and ``"half"``, features
``(i, i + dim/2)`` (GPT-NeoX, Hugging Face LLaMA).

**Dtype policy of the torch path.** Angles are formed in float64 on the tensor's own
device (:func:`angle_dtype`); on a device without float64 (Apple's MPS) in float32,
which at position m loses about m * 2**-24 rad: 6e-5 rad at m = 1000, 0.06 rad at
m = 10**6 (measured at d = 128 in ``tests/test_rope_torch.py``, the float32 path forced
on the CPU). Cosines and sines are evaluated in the angles' dtype, times the attention
factor, and cast to the input's dtype last.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from posenc._validation import (
    as_float_array,
    as_int_positions,
    check_choice,
    check_even_positive_int,
    check_positive_float,
    is_torch_tensor,
)

LAYOUTS = ("interleaved", "half")
NO_FLOAT64_DEVICES = ("mps",)  # device types whose tensors cannot hold float64


def check_layout(layout: object) -> str:
    """Return ``layout`` if it is one of :data:`LAYOUTS`, else a ValueError naming them."""
    return check_choice(layout, "layout", LAYOUTS)


def frequencies(d_model: int, base: float = 10000.0) -> np.ndarray:
    """Angular frequencies omega_i = base**(-2i/d_model) of the pairs.

    Pair index i = 0 .. d_model/2 - 1; radians per position; shape
    (d_model/2,), float64.
    """
    d_model = check_even_positive_int(d_model, "d_model")
    base = check_positive_float(base, "base")
    pair_index = np.arange(d_model // 2, dtype=np.float64)
    return base ** (-2.0 * pair_index / d_model)


def wavelengths(d_model: int, base: float = 10000.0) -> np.ndarray:
    """Wavelengths lambda_i = 2 pi / omega_i, in positions, shape (d_model/2,).

    lambda_i is the number of positions pair i needs for one full turn.
    """
    return 2.0 * np.pi / frequencies(d_model, base)


def angle_dtype(device: Any) -> Any:
    """The torch dtype angles are formed in on ``device``: float64, or float32 where
    the device has no float64 (:data:`NO_FLOAT64_DEVICES`)."""
    import torch

    kind = device.type if isinstance(device, torch.device) else str(device)
    return torch.float32 if kind in NO_FLOAT64_DEVICES else torch.float64


def rope_angles(positions: object, inv_freq: object) -> Any:
    """Rotation angles m * theta_i in radians, shape positions.shape + (dim/2,).

    ``positions``: integers, (seq,) or (batch, seq); ``inv_freq``: (dim/2,)
    frequencies, for example :func:`posenc.rope_inv_freq`. numpy positions give
    float64 numpy angles (a torch ``inv_freq`` is read as numbers). Torch positions
    give torch angles on their device, in :func:`angle_dtype` (float64 where the
    device has it), differentiable in a torch ``inv_freq``; nothing is copied to the
    host. The product is formed in float64 so that an angle at position 10**6 is
    right to about 1e-10 rad.
    """
    if is_torch_tensor(positions):
        return _torch_angles(positions, inv_freq)
    positions = as_int_positions(positions, "positions")
    if is_torch_tensor(inv_freq):
        inv_freq = inv_freq.detach().cpu().double().numpy()
    inv_freq = as_float_array(inv_freq, "inv_freq")
    if inv_freq.ndim != 1:
        raise ValueError(
            f"inv_freq must be 1-D with shape (dim/2,), got shape {inv_freq.shape}"
        )
    return positions.astype(np.float64)[..., None] * inv_freq


def _torch_angles(positions: Any, inv_freq: object) -> Any:
    import torch

    dtype = angle_dtype(positions.device)
    if isinstance(inv_freq, np.ndarray):  # as apply_rope checked it, or made it
        inv_freq = torch.from_numpy(np.asarray(inv_freq, dtype=np.float64))
    elif not is_torch_tensor(inv_freq):
        inv_freq = torch.from_numpy(as_float_array(inv_freq, "inv_freq"))
    if inv_freq.ndim != 1:
        raise ValueError(
            f"inv_freq must be 1-D with shape (dim/2,), got shape {tuple(inv_freq.shape)}"
        )
    theta = inv_freq.to(device=positions.device, dtype=dtype)
    return positions.to(dtype)[..., None] * theta


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


def rotate_pairs_elementwise(
    x: Any, cos: Any, sin: Any, layout: str = "interleaved"
) -> Any:
    """The reference rotation of every pair of ``x``, numpy or torch.

    ``x``: (..., seq, dim); ``cos``, ``sin``: (seq, dim/2) of the same kind (any
    shape that broadcasts against (..., seq, dim/2) works). Pair (a, b) becomes
    (a cos - b sin, a sin + b cos): counter-clockwise, column vectors, written out
    term by term (a few temporaries, each a pass over memory).
    """
    layout = check_layout(layout)
    half = x.shape[-1] // 2
    if is_torch_tensor(x):
        import torch

        stack, concat = torch.stack, torch.cat
    else:
        stack, concat = np.stack, np.concatenate
    if layout == "interleaved":
        a, b = x[..., 0::2], x[..., 1::2]
        pairs = (a * cos - b * sin, a * sin + b * cos)
        return stack(pairs, -1).reshape(x.shape)
    a, b = x[..., :half], x[..., half:]
    return concat((a * cos - b * sin, a * sin + b * cos), -1)


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
