"""posenc: positional encodings from the sinusoidal encoding to RoPE and YaRN.

The library behind the book "Positional Encoding, Executed". Every formula the book
uses lives here once, in numpy float64. ``import posenc`` imports neither torch nor
matplotlib; ``posenc.plotting`` is imported by name.
"""

from posenc.attention import causal_mask, scaled_dot_product_attention, self_attention, softmax
from posenc.notebook import set_print_options, setup_notebook
from posenc.rope import apply_rope, rope_inv_freq, rope_matrix, rotation_matrix
from posenc.scaling import rope_scaling
from posenc.sinusoidal import frequencies, sinusoidal_encoding, wavelengths

__all__ = [
    "apply_rope",
    "causal_mask",
    "frequencies",
    "rope_inv_freq",
    "rope_matrix",
    "rope_scaling",
    "rotation_matrix",
    "scaled_dot_product_attention",
    "self_attention",
    "set_print_options",
    "setup_notebook",
    "sinusoidal_encoding",
    "softmax",
    "wavelengths",
]

__version__ = "0.1.0"
