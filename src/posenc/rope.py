"""Rotary position embedding, RoPE (Su et al. 2021, RoFormer, sec. 3.2 and 3.4.2).

Pair ``i`` of a query or key at position ``m`` is rotated counter-clockwise by the angle
``m * theta_i``, ``theta_i = base ** (-2i / dim)``, ``i = 0 .. dim/2 - 1``. Vectors are
columns and matrices act on the left: ``x' = R_m x``. Two layouts decide which features
form a pair:

* ``"interleaved"``: pairs ``(x[2i], x[2i + 1])`` (RoFormer, GPT-J, Meta's LLaMA reference);
* ``"half"``: pairs ``(x[i], x[i + dim/2])`` (GPT-NeoX, Hugging Face LLaMA).

Everything here is numpy float64 except :func:`apply_rope`, which also takes torch
tensors and imports torch only when it is handed one. Angles ``position * theta_i`` are
always formed in float64 and only their cosines and sines are cast to the input's dtype.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from posenc._validation import (
    as_float_array,
    as_int_array,
    check_even_positive_int,
    check_int,
    check_positive_float,
    is_torch_tensor,
)
from posenc.rotation import LAYOUTS, block_diagonal_rotation, check_layout, cos_sin  # noqa: F401 (LAYOUTS re-exported)
from posenc.sinusoidal import frequencies


def rope_inv_freq(dim: int, base: float = 10000.0) -> np.ndarray:
    """Frequencies theta_i = base**(-2i/dim), i = 0 .. dim/2 - 1, in radians per position.

    Shape (dim/2,), float64. RoFormer sec. 3.2; the same numbers as the sinusoidal
    encoding's frequencies (:func:`posenc.sinusoidal.frequencies`), which compute them.
    """
    dim = check_even_positive_int(dim, "dim")
    return frequencies(dim, base)


def _resolve_inv_freq(dim: int, inv_freq: object, base: float) -> np.ndarray:
    if inv_freq is None:
        return rope_inv_freq(dim, base)
    if is_torch_tensor(inv_freq):
        inv_freq = inv_freq.detach().cpu().double().numpy()
    inv_freq = as_float_array(inv_freq, "inv_freq")
    if inv_freq.shape != (dim // 2,):
        raise ValueError(
            f"inv_freq must have shape (dim/2,) = ({dim // 2},), got {inv_freq.shape}"
        )
    return inv_freq


def rope_angles(positions: object, inv_freq: object) -> np.ndarray:
    """Rotation angles m * theta_i in radians, float64, shape (seq, dim/2).

    ``positions``: (seq,) integers; ``inv_freq``: (dim/2,) frequencies, for example
    :func:`rope_inv_freq`. The product is formed in float64 so that an angle at
    position 10**6 is right to about 1e-10 rad.
    """
    positions = as_int_array(positions, "positions")
    if is_torch_tensor(inv_freq):
        inv_freq = inv_freq.detach().cpu().double().numpy()
    inv_freq = as_float_array(inv_freq, "inv_freq")
    if inv_freq.ndim != 1:
        raise ValueError(
            f"inv_freq must be 1-D with shape (dim/2,), got shape {inv_freq.shape}"
        )
    return positions.astype(np.float64)[:, None] * inv_freq[None, :]


def rotation_matrix(angle: float | np.ndarray) -> np.ndarray:
    """Counter-clockwise rotation [[cos a, -sin a], [sin a, cos a]] acting on column vectors.

    ``angle`` in radians, a number (result (2, 2)) or an array (result angle.shape + (2, 2)).
    """
    cos, sin = cos_sin(as_float_array(angle, "angle")[..., None])  # one pair per angle
    return block_diagonal_rotation(cos, sin)


def rope_matrix(
    position: int,
    dim: int,
    base: float = 10000.0,
    *,
    inv_freq: object = None,
    layout: str = "interleaved",
) -> np.ndarray:
    """The (dim, dim) block-diagonal rotation R_m of RoFormer sec. 3.2 for one integer position m, float64.

    Block-diagonal for ``layout="interleaved"``: block i is ``rotation_matrix(m * theta_i)``
    on features (2i, 2i+1). For ``layout="half"`` the same rotations act on features
    (i, i + dim/2). ``R_m @ x`` rotates a column vector x; ``apply_rope`` does the same
    without building the matrix.
    """
    position = check_int(position, "position")
    dim = check_even_positive_int(dim, "dim")
    layout = check_layout(layout)
    theta = _resolve_inv_freq(dim, inv_freq, check_positive_float(base, "base"))
    return block_diagonal_rotation(*cos_sin(position * theta), layout)


def _check_x(x: Any) -> tuple[bool, tuple[int, ...]]:
    """Return (is_torch, shape) for a float array/tensor of shape (..., seq, dim)."""
    if is_torch_tensor(x):
        if not x.dtype.is_floating_point:
            raise TypeError(f"x must be a floating-point tensor, got dtype {x.dtype}")
        is_torch = True
    elif isinstance(x, np.ndarray):
        if not np.issubdtype(x.dtype, np.floating):
            raise TypeError(f"x must be a floating-point array, got dtype {x.dtype}")
        is_torch = False
    else:
        raise TypeError(
            f"x must be a numpy array or a torch tensor, got {type(x).__name__}"
        )
    shape = tuple(x.shape)
    if len(shape) < 2:
        raise ValueError(f"x must have shape (..., seq, dim), got shape {shape}")
    if shape[-1] == 0 or shape[-1] % 2:
        raise ValueError(
            f"x must have an even, positive last dimension dim, got shape {shape}"
        )
    return is_torch, shape


def apply_rope(
    x: Any,
    positions: object,
    *,
    inv_freq: object = None,
    base: float = 10000.0,
    attention_factor: float = 1.0,
    layout: str = "interleaved",
) -> Any:
    """Rotate every pair of features of ``x`` by position * theta_i.

    RoFormer sec. 3.4.2.
    ``x``: numpy array or torch tensor, shape (..., seq, dim), floating point.
    ``positions``: (seq,) integers, the position of each row on the seq axis.
    ``inv_freq``: (dim/2,) frequencies; default ``rope_inv_freq(dim, base)``.
    ``attention_factor``: multiplies cos and sin (YaRN's temperature), so a
    q.k logit scales by its square.
    ``layout``: ``"interleaved"`` or ``"half"`` (see the module).

    Elementwise, O(seq * dim): for a pair (a, b) with angle phi,
    a' = a cos phi - b sin phi, b' = a sin phi + b cos phi,
    i.e. ``rope_matrix(m) @ x[m]``.
    Returns the same type, dtype, device and shape as ``x``. A torch.Tensor
    subclass takes the reference formula and comes back as torch's own
    operators return it: a user's subclass stays one, an ``nn.Parameter``
    gives a plain tensor in the autograd graph (as ``parameter * 1`` does).
    """
    is_torch, shape = _check_x(x)
    dim = shape[-1]
    layout = check_layout(layout)
    positions = as_int_array(positions, "positions")
    if positions.shape[0] != shape[-2]:
        raise ValueError(
            f"positions must have one entry per row of x: x has seq = {shape[-2]} (shape {shape}), "
            f"positions has length {positions.shape[0]}"
        )
    theta = _resolve_inv_freq(dim, inv_freq, check_positive_float(base, "base"))
    attention_factor = check_positive_float(attention_factor, "attention_factor")
    angles = rope_angles(positions, theta)  # float64, (seq, dim/2)
    if is_torch:
        cos, sin = _torch_cos_sin(angles, attention_factor, x)
        return rotate_pairs(x, cos, sin, layout)
    cos, sin = cos_sin(angles, attention_factor)
    return rotate_pairs(x, cos.astype(x.dtype), sin.astype(x.dtype), layout)


def _torch_cos_sin(
    angles: np.ndarray, attention_factor: float, x: Any
) -> tuple[Any, Any]:
    """attention_factor * cos and sin of float64 angles, in x's dtype and device.

    torch evaluates cos and sin in float64 (vectorized: a few times faster
    than numpy; the two agree to one unit in the last float64 place). The
    casts to float32 or float64 happen in numpy: the same rounding as
    torch's, without waking torch's threads for a small table.
    """
    import torch

    cos, sin = (
        table.numpy() for table in cos_sin(torch.from_numpy(angles), attention_factor)
    )
    if x.dtype in (torch.float32, torch.float64):
        numpy_dtype = np.float32 if x.dtype == torch.float32 else np.float64
        cos = cos.astype(numpy_dtype, copy=False)
        sin = sin.astype(numpy_dtype, copy=False)
    cos = torch.from_numpy(cos).to(device=x.device, dtype=x.dtype)
    sin = torch.from_numpy(sin).to(device=x.device, dtype=x.dtype)
    return cos, sin


def rotate_pairs(x: Any, cos: Any, sin: Any, layout: str = "interleaved") -> Any:
    """The rotation behind :func:`apply_rope`, for callers that cache cos, sin.

    ``x``: (..., seq, dim) numpy array or torch tensor; ``cos``, ``sin``:
    (seq, dim/2) of the same kind (any shape that broadcasts against
    (..., seq, dim/2) works). Pair (a, b) becomes
    (a cos - b sin, a sin + b cos): counter-clockwise, column vectors.
    numpy arrays go through :func:`rotate_pairs_elementwise`; torch tensors
    through the faster kernels of :mod:`posenc.fast_rope`, which return the
    same values up to float rounding and fall back on the same formula
    where they do not apply. No argument checks beyond the layout:
    :func:`apply_rope` is the checked entry point.
    """
    layout = check_layout(layout)
    if is_torch_tensor(x):
        from posenc import fast_rope

        return fast_rope.rotate(x, cos, sin, layout, rotate_pairs_elementwise)
    return rotate_pairs_elementwise(x, cos, sin, layout)


def rotate_pairs_elementwise(
    x: Any, cos: Any, sin: Any, layout: str = "interleaved"
) -> Any:
    """The reference formula of :func:`rotate_pairs`, numpy or torch.

    Same arguments and result. Pair (a, b) becomes
    (a cos - b sin, a sin + b cos), written out term by term: a few
    temporaries, each a pass over memory.
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


def rope_decay_bound(distances: object, dim: int, base: float = 10000.0) -> np.ndarray:
    """RoFormer's "relative upper bound" (sec. 3.4.3), one value per distance.

    bound = (1 / (dim/2)) * sum_k |S_k| with
    S_k = sum_{i<k} exp(1j * (m - n) * theta_i), k = 1 .. dim/2, for the
    relative distance m - n. By Abel summation,
    |q'.k'| <= max_i |h_{i+1} - h_i| * (dim/2) * bound, where
    h_i = q_i conj(k_i) pairs q and k as complex numbers and h_{dim/2} = 0.
    ``distances``: (n,) integers; returns (n,) float64.
    """
    distances = as_int_array(distances, "distances")
    theta = rope_inv_freq(dim, base)
    partial_sums = np.cumsum(
        np.exp(1j * rope_angles(distances, theta)), axis=1
    )  # S_1 .. S_{dim/2}
    return np.abs(partial_sums).mean(axis=1)
