"""posenc: positional encodings from the sinusoidal encoding to RoPE and YaRN.

The library behind the book "Positional Encoding, Executed". Every formula the book
uses lives here once, in numpy float64. ``import posenc`` imports neither torch nor
matplotlib. The chapters' own tools live in :mod:`posenc.book`, the experiment of chapter 6
in :mod:`posenc.experiments`; both are imported by name.
"""

from posenc.alibi import alibi_bias, alibi_slopes
from posenc.attention import (
    causal_mask,
    scaled_dot_product_attention,
    self_attention,
    softmax,
)
from posenc.config import RopeConfig, rope_from_config
from posenc.rope import apply_rope, rope_inv_freq, rope_matrix, rotation_matrix
from posenc.rotation import frequencies, wavelengths
from posenc.scaling import rope_scaling
from posenc.sinusoidal import (
    add_sinusoidal_encoding,
    dot_product_by_offset,
    shift_matrix,
    sinusoidal_encoding,
    sinusoidal_encoding_at,
)
from posenc.t5_bias import t5_relative_position_bucket

__all__ = [
    "RopeConfig",
    "add_sinusoidal_encoding",
    "alibi_bias",
    "alibi_slopes",
    "apply_rope",
    "causal_mask",
    "dot_product_by_offset",
    "frequencies",
    "rope_from_config",
    "rope_inv_freq",
    "rope_matrix",
    "rope_scaling",
    "rotation_matrix",
    "scaled_dot_product_attention",
    "self_attention",
    "shift_matrix",
    "sinusoidal_encoding",
    "sinusoidal_encoding_at",
    "softmax",
    "t5_relative_position_bucket",
    "wavelengths",
]

__version__ = "0.1.0"
