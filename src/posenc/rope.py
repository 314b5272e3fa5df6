"""Rotary position embedding, RoPE (Su et al. 2021, RoFormer, sec. 3.2 and 3.4.2).

Pair ``i`` of a query or key at position ``m`` is rotated counter-clockwise by the angle
``m * theta_i``, ``theta_i = base ** (-2i / dim)``, ``i = 0 .. dim/2 - 1``. Vectors are
columns and matrices act on the left: ``x' = R_m x``. Two layouts decide which features
form a pair:

* ``"interleaved"``: pairs ``(x[2i], x[2i + 1])`` (RoFormer, GPT-J, Meta's LLaMA reference);
* ``"half"``: pairs ``(x[i], x[i + dim/2])`` (GPT-NeoX, Hugging Face LLaMA).

Everything here is numpy float64 except :func:`apply_rope` and :func:`rotate_pairs`, which
also take torch tensors, compute on the tensor's device and import torch only when they are
handed one. Angles ``position * theta_i`` are formed in float64 (on a device without float64,
float32) and only their cosines and sines are cast to the input's dtype
(:mod:`posenc.rotation` states the policy). The frequencies, angles, cos/sin and the
reference rotation come from :mod:`posenc.rotation`; the fast torch kernels from
:mod:`posenc.fast_rope`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from posenc._validation import (
    as_float_array,
    as_int_array,
    as_int_positions,
    check_even_positive_int,
    check_int,
    check_positive_float,
    is_torch_tensor,
)
from posenc.rotation import (
    LAYOUTS,
    block_diagonal_rotation,
    check_layout,
    cos_sin,
    frequencies,
    rope_angles,
    rotate_pairs_elementwise,
)

__all__ = [
    "LAYOUTS",
    "apply_rope",
    "broadcast_tables",
    "check_rotary_dim",
    "resolve_inv_freq",
    "rope_angles",
    "rope_decay_bound",
    "rope_inv_freq",
    "rope_matrix",
    "rotate_pairs",
    "rotate_pairs_elementwise",
    "rotation_matrix",
]


def rope_inv_freq(dim: int, base: float = 10000.0) -> np.ndarray:
    """Frequencies theta_i = base**(-2i/dim), i = 0 .. dim/2 - 1, in radians per position.

    Shape (dim/2,), float64. RoFormer sec. 3.2; the same numbers as the sinusoidal
    encoding's frequencies (:func:`posenc.rotation.frequencies`), which compute them.
    """
    dim = check_even_positive_int(dim, "dim")
    return frequencies(dim, base)


def resolve_inv_freq(
    dim: int, inv_freq: object, base: float, *, keep_tensor: bool = False
) -> Any:
    """The (dim/2,) frequencies to rotate by: ``rope_inv_freq(dim, base)`` if
    ``inv_freq`` is None, else ``inv_freq`` checked.

    With ``keep_tensor`` a floating-point torch ``inv_freq`` comes back as it is (its
    device, dtype and autograd graph: a learned frequency gets its gradient);
    anything else becomes a float64 numpy array.
    """
    if inv_freq is None:
        return rope_inv_freq(dim, base)
    if is_torch_tensor(inv_freq):
        if not inv_freq.dtype.is_floating_point:
            raise TypeError(
                f"inv_freq must be a floating-point tensor, got dtype {inv_freq.dtype}"
            )
        if tuple(inv_freq.shape) != (dim // 2,):
            raise ValueError(
                f"inv_freq must have shape (dim/2,) = ({dim // 2},), "
                f"got {tuple(inv_freq.shape)}"
            )
        if keep_tensor:
            return inv_freq
        inv_freq = inv_freq.detach().cpu().double().numpy()
    inv_freq = as_float_array(inv_freq, "inv_freq")
    if inv_freq.shape != (dim // 2,):
        raise ValueError(
            f"inv_freq must have shape (dim/2,) = ({dim // 2},), got {inv_freq.shape}"
        )
    return inv_freq


def check_rotary_dim(rotary_dim: object, dim: int) -> int:
    """``rotary_dim`` as an int: ``dim`` if None, else an even integer 2 .. dim."""
    if rotary_dim is None:
        return dim
    rotary_dim = check_even_positive_int(rotary_dim, "rotary_dim")
    if rotary_dim > dim:
        raise ValueError(
            f"rotary_dim must be at most x's last dimension {dim}, got {rotary_dim}"
        )
    return rotary_dim


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
    theta = resolve_inv_freq(dim, inv_freq, check_positive_float(base, "base"))
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
    rotary_dim: int | None = None,
) -> Any:
    """Rotate every pair of the first ``rotary_dim`` features of ``x`` by position * theta_i.

    RoFormer sec. 3.4.2.
    ``x``: numpy array or torch tensor, shape (..., seq, dim), floating point.
    ``positions``: integers, (seq,), the position of each row on the seq axis, or
    (batch, seq), one row of positions per entry of x's first axis (transformers'
    ``position_ids``); a torch tensor must be on x's device and is not copied to the
    host.
    ``inv_freq``: (rotary_dim/2,) frequencies; default ``rope_inv_freq(rotary_dim,
    base)``. A torch tensor that requires grad receives its gradient.
    ``attention_factor``: multiplies cos and sin (YaRN's temperature), so a
    q.k logit scales by its square.
    ``layout``: ``"interleaved"`` or ``"half"`` (see the module).
    ``rotary_dim``: rotate only the first rotary_dim features (even, default all),
    pairing them in ``layout`` among themselves, and pass the rest through
    (GPT-NeoX's ``rotary_pct``, GPT-J's ``rotary_dim``, Phi's
    ``partial_rotary_factor``).

    Elementwise, O(seq * dim): for a pair (a, b) with angle phi,
    a' = a cos phi - b sin phi, b' = a sin phi + b cos phi,
    i.e. ``rope_matrix(m) @ x[m]``. Torch tensors: angles in float64 on x's device
    (float32 where it has no float64), cos and sin cast to x's dtype last (see
    :mod:`posenc.rotation`). Returns the same type, dtype, device and shape as
    ``x``. A torch.Tensor subclass takes the reference formula and comes back as
    torch's own operators return it: a user's subclass stays one, an
    ``nn.Parameter`` gives a plain tensor in the autograd graph (as
    ``parameter * 1`` does).
    """
    is_torch, shape = _check_x(x)
    layout = check_layout(layout)
    rotary_dim = check_rotary_dim(rotary_dim, shape[-1])
    base = check_positive_float(base, "base")
    attention_factor = check_positive_float(attention_factor, "attention_factor")
    theta = resolve_inv_freq(rotary_dim, inv_freq, base, keep_tensor=is_torch)
    if is_torch and _on_the_host(positions, theta, x):
        positions = as_int_positions(positions)
        _check_positions_shape(positions.shape, shape)
        cos, sin = _host_tables(rope_angles(positions, theta), attention_factor, x)
    elif is_torch:
        positions = _torch_positions(positions, x)
        _check_positions_shape(tuple(positions.shape), shape)
        cos, sin = cos_sin(rope_angles(positions, theta), attention_factor)
        cos, sin = cos.to(x.dtype), sin.to(x.dtype)
    else:
        positions = as_int_positions(positions)
        _check_positions_shape(positions.shape, shape)
        cos, sin = cos_sin(rope_angles(positions, theta), attention_factor)
        cos, sin = cos.astype(x.dtype), sin.astype(x.dtype)
    cos, sin = broadcast_tables(cos, sin, len(shape))
    return rotate_pairs(x, cos, sin, layout, rotary_dim)


def _on_the_host(positions: object, theta: Any, x: Any) -> bool:
    """Positions and frequencies given as numbers, x on the CPU, no torch.compile tracing."""
    import torch

    return (
        not is_torch_tensor(positions)
        and not is_torch_tensor(theta)
        and x.device.type == "cpu"
        and not torch.compiler.is_compiling()
    )


def _host_tables(angles: np.ndarray, attention_factor: float, x: Any) -> tuple:
    """cos and sin of float64 numpy angles for a CPU tensor x, in its dtype.

    The same numbers as the device path (torch evaluates cos and sin in float64,
    then the cast), with the angles formed and the casts done in numpy: no torch
    threads woken for a small table on a busy machine.
    """
    import torch

    cos, sin = (t.numpy() for t in cos_sin(torch.from_numpy(angles), attention_factor))
    if x.dtype in (torch.float32, torch.float64):
        numpy_dtype = np.float32 if x.dtype == torch.float32 else np.float64
        cos = cos.astype(numpy_dtype, copy=False)
        sin = sin.astype(numpy_dtype, copy=False)
    return (
        torch.from_numpy(cos).to(dtype=x.dtype),
        torch.from_numpy(sin).to(dtype=x.dtype),
    )


def _torch_positions(positions: object, x: Any) -> Any:
    """Positions as an integer tensor on x's device: a tensor as it is, else copied there."""
    import torch

    if is_torch_tensor(positions):
        dtype = positions.dtype
        if dtype.is_floating_point or dtype.is_complex or dtype == torch.bool:
            raise TypeError(
                f"positions must hold integers, got a tensor of dtype {dtype}"
            )
        if positions.device != x.device:
            raise ValueError(
                f"positions must be on x's device {x.device}, got {positions.device}"
            )
        if positions.ndim not in (1, 2):
            raise ValueError(
                "positions must have shape (seq,) or (batch, seq), "
                f"got {tuple(positions.shape)}"
            )
        return positions
    return torch.from_numpy(as_int_positions(positions)).to(x.device)


def _check_positions_shape(positions: tuple[int, ...], x: tuple[int, ...]) -> None:
    if positions[-1] != x[-2]:
        raise ValueError(
            f"positions must have one entry per row of x: x has seq = {x[-2]} "
            f"(shape {x}), positions has length {positions[-1]}"
        )
    if len(positions) == 2 and (len(x) < 3 or positions[0] not in (1, x[0])):
        raise ValueError(
            "positions must have shape (seq,), or (batch, seq) with x of shape "
            f"(batch, ..., seq, dim): got positions {positions} for x of shape {x}"
        )


def broadcast_tables(cos: Any, sin: Any, ndim: int) -> tuple[Any, Any]:
    """cos and sin tables laid out to broadcast against an x with ``ndim`` axes.

    (seq, h) tables broadcast as they are. (batch, seq, h) tables, one per row of
    (batch, seq) positions, become (batch, 1, ..., 1, seq, h), matching x of shape
    (batch, ..., seq, dim) (the heads axis of (batch, heads, seq, dim), as
    transformers unsqueezes it). numpy arrays or torch tensors.
    """
    if cos.ndim != 3 or ndim <= 3:
        return cos, sin
    batch, seq, half = cos.shape
    shape = (batch,) + (1,) * (ndim - 3) + (seq, half)
    return cos.reshape(shape), sin.reshape(shape)


def rotate_pairs(
    x: Any,
    cos: Any,
    sin: Any,
    layout: str = "interleaved",
    rotary_dim: int | None = None,
) -> Any:
    """The rotation behind :func:`apply_rope`, for callers that cache cos, sin.

    ``x``: (..., seq, dim) numpy array or torch tensor; ``cos``, ``sin``:
    (seq, rotary_dim/2) of the same kind (any shape that broadcasts against
    (..., seq, rotary_dim/2) works). Pair (a, b) of the first ``rotary_dim``
    features (default all) becomes (a cos - b sin, a sin + b cos):
    counter-clockwise, column vectors; the other features pass through.
    numpy arrays go through :func:`posenc.rotation.rotate_pairs_elementwise`;
    torch tensors through the faster kernels of :mod:`posenc.fast_rope`, which
    return the same values up to float rounding and fall back on the same formula
    where they do not apply. No argument checks beyond the layout and
    ``rotary_dim``: :func:`apply_rope` is the checked entry point.
    """
    layout = check_layout(layout)
    dim = x.shape[-1]
    rotary_dim = check_rotary_dim(rotary_dim, dim)
    if rotary_dim < dim:
        rotated = rotate_pairs(x[..., :rotary_dim], cos, sin, layout)
        if is_torch_tensor(x):
            import torch

            return torch.cat((rotated, x[..., rotary_dim:]), dim=-1)
        return np.concatenate((rotated, x[..., rotary_dim:]), axis=-1)
    if is_torch_tensor(x):
        from posenc import fast_rope

        return fast_rope.rotate(x, cos, sin, layout)
    return rotate_pairs_elementwise(x, cos, sin, layout)


def rope_decay_bound(distances: object, dim: int, base: float = 10000.0) -> np.ndarray:
    """RoFormer's "relative upper bound" (sec. 3.4.3), one value per distance.

    bound = (1 / (dim/2)) * sum_k |S_k| with
    S_k = sum_{i<k} exp(1j * (n - m) * theta_i), k = 1 .. dim/2, for the
    relative distance n - m. By Abel summation,
    |q'.k'| <= max_i |h_{i+1} - h_i| * (dim/2) * bound, where
    h_i = conj(q_i) k_i pairs q and k as complex numbers and h_{dim/2} = 0.
    ``distances``: (n,) integers; returns (n,) float64.
    """
    distances = as_int_array(distances, "distances")
    theta = rope_inv_freq(dim, base)
    partial_sums = np.cumsum(
        np.exp(1j * rope_angles(distances, theta)), axis=1
    )  # S_1 .. S_{dim/2}
    return np.abs(partial_sums).mean(axis=1)
