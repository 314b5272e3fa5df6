"""Context extension for RoPE: new frequencies (and an attention factor).

A model trained with RoPE at context ``L = original_max_position`` meets
positions up to ``L' = s L``, ``s = factor``. Every method here returns new
frequencies ``theta'_i`` (and a number that multiplies cos and sin) to use
in place of ``theta_i = base**(-2i/dim)``:

* ``"none"``: plain RoPE, theta_i;
* ``"linear"``: Position Interpolation (Chen et al. 2023), theta_i / s;
* ``"ntk"``: NTK-aware scaling (bloc97 2023),
  base' = base * s**(dim / (dim - 2));
* ``"dynamic"``: dynamic NTK (emozilla 2023) in the form transformers
  computes it;
* ``"ntk_by_parts"``: YaRN's frequencies without its temperature
  (Peng et al. 2023);
* ``"yarn"``: YaRN, the same frequencies plus the attention factor
  0.1 ln s + 1;
* ``"llama3"``: Llama 3.1's rule from Meta's reference code;
* ``"longrope"``: LongRoPE (Ding et al. 2024, arXiv:2402.13753), as Phi-3
  uses it: a searched factor per pair, theta_i / lambda_i, one list for
  short and one for long sequences, and the attention factor
  sqrt(1 + ln s / ln L);
* ``"proportional"``: p-RoPE (Barbero et al., ICLR 2025, "Round and Round We
  Go!"), transformers' rope type of the Gemma 4 family: the fastest
  int(p * dim // 2) pairs keep theta_i, the slower ones are not rotated
  (theta'_i = 0), and all are divided by s.

Each method is one small function, ``compute_<method>``, that takes the
checked arguments (:class:`RopeArguments`) and the method's options and
returns ``(inv_freq, attention_factor)``. The table
:data:`SCALING_METHODS` maps a method's name to its function and the
options it takes; :data:`METHODS` and :data:`OPTIONS` are read from it.
:func:`rope_scaling` checks its arguments once, for every method, looks the
method up and calls its function: a new method is a new function and a
new entry in the table.

Notation follows the YaRN paper (arXiv:2309.00071v2): pair index i (the
paper's d; its head dimension is |D|), wavelength lambda_i = 2 pi / theta_i
in positions, rotations per pair within the original context
r_i = L / lambda_i, and a ramp gamma in [0, 1] where gamma = 1 keeps theta_i
(extrapolation) and gamma = 0 divides it by s (interpolation):

    h(theta_i) = (1 - gamma_i) theta_i / s + gamma_i theta_i.

The paper defines gamma linear in r between alpha and beta
(:func:`ramp_rotations`). The reference implementations (the YaRN
repository, Hugging Face ``transformers``) ramp linearly in the pair index
between bounds found from beta_fast and beta_slow, rounded outwards with
floor and ceil (:func:`correction_range`, :func:`ramp_pair_index`). The
methods ``"ntk_by_parts"`` and ``"yarn"`` follow the reference, so that
they agree with deployed models; ``"llama3"`` is exactly the paper's form
with alpha = 1, beta = 4.

Everything is numpy float64.

Compatibility with ``transformers`` (5.24: ``_compute_*_parameters`` and the
``_validate_*_rope_parameters`` checks of ``modeling_rope_utils.py``), stated
here once for every function of this module:

* Option names are those of its rope parameters, and every configuration it
  accepts gives its result, even where its rule is surprising.
* ``beta_fast`` / ``beta_slow`` are read as ``value or default``: None or 0
  mean 32 / 1. beta_fast may equal beta_slow (its validation flags only
  beta_fast < beta_slow).
* YaRN's attention factor, in its order: a given ``attention_factor`` as is
  (both mscales are then ignored; 0 is allowed); else, if ``mscale`` and
  ``mscale_all_dim`` are both given and non-zero (it tests ``mscale and
  mscale_all_dim`` for truth; DeepSeek's convention), yarn_mscale(s, mscale) /
  yarn_mscale(s, mscale_all_dim), where like its ``get_mscale`` an mscale may
  be any finite number; else 0.1 ln s + 1.
* LongRoPE's attention factor: a given ``attention_factor`` as is, at every s;
  else sqrt(1 + ln s / ln L) for s > 1 and 1 for s = 1, the default of
  ``_compute_longrope_parameters`` (its comment calls it the paper's
  suggestion). For Phi-3, s = max_position_embeddings /
  original_max_position_embeddings. It does not depend on the current
  length; the long factors are used when seq_len > L, the short ones when
  seq_len <= L or seq_len is not given (its rotary module passes the longest
  position + 1).
* Dynamic NTK is emozilla's code in the YaRN repository
  (scaled_rope/LlamaDynamicScaledRotaryEmbedding.py), which it took over; it
  reads L from the config field ``max_position_embeddings``.
* Llama 3.1: a negative low_freq_factor divides every pair by s, as there.
* A value its validation flags as invalid (it logs a warning and computes
  anyway: factor < 1, beta_fast < beta_slow, a negative attention_factor,
  high_freq_factor <= low_freq_factor, a short_factor or long_factor that is
  not a list of dim/2 numbers) or that makes its code raise
  (ZeroDivisionError: a low_freq_factor or high_freq_factor of 0, an
  mscale_all_dim that zeroes the denominator, L = 1 for LongRoPE with s > 1;
  NaN: high_freq_factor equal to low_freq_factor) is a ValueError here, naming
  the argument.
* Stricter or looser on purpose: ``truncate`` must be True or False (it takes
  any value for its truth, None as False); LongRoPE's ``short_factor`` and
  ``long_factor`` must hold finite numbers > 0 (it takes 0, a negative number,
  NaN and True without a warning and computes an infinite, negative or NaN
  frequency), and may be a tuple or a 1-D numpy array as well as a list (it
  warns about anything but a list).
* p-RoPE (``_compute_proportional_rope_parameters``): the rotated pairs are
  int(partial_rotary_factor * dim // 2), that float expression exactly (0.58 *
  100 is 57.99999999999999 in floating point, so 28 pairs, not 29); the
  exponent is over the whole head, base**(-2i/dim), and every entry, the zeros
  too, is divided by ``factor``. ``partial_rotary_factor`` is required (its
  validation warns when it is missing and it computes with 1.0, Position
  Interpolation) and must lie in [0, 1] (0 rotates nothing; outside [0, 1] its
  code returns a table of the wrong length). Its validation flags a ``factor``
  key as unrecognised while its code divides by it: here ``factor`` is the
  formula's s, :func:`posenc.rope_from_config` rejects the key.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

import numpy as np

from posenc._validation import (
    as_float_array,
    check_bool,
    check_choice,
    check_even_positive_int,
    check_factor,
    check_options,
    check_positive_float,
    check_positive_int,
    check_real,
)
from posenc.rotation import frequencies, wavelengths

# ------------------------------------------------------- per-pair quantities


def rotations_per_pair(
    dim: int, base: float = 10000.0, context_length: int = 2048
) -> np.ndarray:
    """Full turns r_i = L / lambda_i of pair i within L positions, (dim/2,).

    YaRN paper, NTK-by-parts: r(d) = L / lambda_d, with
    lambda_i = 2 pi base**(2i/dim) (:func:`posenc.wavelengths`) and
    L = ``context_length`` in positions. A pair with r < 1 never completes
    a turn in training; one with r > 32 has seen every angle many times.
    """
    context_length = check_positive_int(context_length, "context_length")
    return context_length / wavelengths(dim, base)


def unseen_angle_pairs(
    inv_freq: np.ndarray,
    dim: int,
    base: float,
    original_max_position: int,
    new_length: int,
) -> np.ndarray:
    """Indices of the pairs that meet rotation angles not met in training.

    Training uses positions 0 .. L - 1, L = ``original_max_position``, so
    pair i meets the angles 0 .. (L - 1) theta_i. The convention here counts
    the arc [0, L theta_i] as seen: up to one step past the last trained
    position, so that Position Interpolation's fractional positions below L
    count as seen. If that arc is less than a full turn (r_i < 1), the rest
    of the circle is new. With frequencies ``inv_freq`` (theta'_i) and
    positions below ``new_length`` the pair reaches
    (new_length - 1) theta'_i. Returns the i with r_i < 1 and
    (new_length - 1) theta'_i > L theta_i, as an int array. Position
    Interpolation to new_length = s L returns none (its last position maps
    to L - 1/s).
    """
    theta = frequencies(dim, base)
    inv_freq = as_float_array(inv_freq, "inv_freq")
    if inv_freq.shape != theta.shape:
        raise ValueError(
            f"inv_freq must have shape (dim/2,) = {theta.shape}, got {inv_freq.shape}"
        )
    original_max_position = check_positive_int(
        original_max_position, "original_max_position"
    )
    new_length = check_positive_int(new_length, "new_length")
    trained_max = original_max_position * theta
    partial_turn = rotations_per_pair(dim, base, original_max_position) < 1
    reached = (new_length - 1) * inv_freq
    return np.flatnonzero(partial_turn & (reached > trained_max))


def correction_dim(
    num_rotations: float,
    dim: int,
    base: float = 10000.0,
    original_max_position: int = 2048,
) -> float:
    """The (fractional) pair index that makes ``num_rotations`` turns in L.

    Solves L / lambda_i = n for i: i = dim * ln(L / (2 pi n)) / (2 ln base).
    It is the inverse of :func:`rotations_per_pair` and may lie outside
    0 .. dim/2 - 1.
    """
    num_rotations = check_positive_float(num_rotations, "num_rotations")
    dim = check_even_positive_int(dim, "dim")
    base = check_positive_float(base, "base")
    if base == 1.0:
        raise ValueError(
            "base must differ from 1 (with base 1 every pair has the same wavelength)"
        )
    original_max_position = check_positive_int(
        original_max_position, "original_max_position"
    )
    log_argument = original_max_position / (num_rotations * 2 * math.pi)
    return dim * math.log(log_argument) / (2 * math.log(base))


def correction_range(
    dim: int,
    *,
    base: float = 10000.0,
    original_max_position: int = 2048,
    beta_fast: float = 32.0,
    beta_slow: float = 1.0,
    truncate: bool = True,
) -> tuple[float, float]:
    """Pair-index bounds (low, high) of the reference YaRN ramp.

    low is where pairs make ``beta_fast`` turns in L (faster pairs keep
    theta_i), high where they make ``beta_slow`` turns (slower pairs are
    divided by s); see :func:`correction_dim`. With ``truncate`` the bounds
    are rounded outwards, low = floor, high = ceil, as in the YaRN
    repository. Then, exactly as the reference does, low is raised to at
    least 0 and high lowered to at most dim - 1; each bound is clamped on
    one side only, so the result need not lie in [0, dim - 1]. Note dim - 1,
    not dim/2 - 1: a high beyond the last pair is kept (gamma then never
    reaches 0: the last pair is not fully interpolated). A very short or
    very long context gives low > high: dim 64, base 10 000 gives (0, -1)
    for L = 4 (pair 0 makes under one turn) and (69, 63) for L = 1e11
    (the fast bound lies past dim - 1); :func:`ramp_pair_index` says what
    the ramp then does. Returns floats (whole numbers when ``truncate``).
    beta_fast < beta_slow is a ValueError; equal is allowed.
    """
    beta_fast = check_positive_float(beta_fast, "beta_fast")
    beta_slow = check_positive_float(beta_slow, "beta_slow")
    if beta_fast < beta_slow:
        raise ValueError(
            "beta_fast must be at least beta_slow, got "
            f"beta_fast={beta_fast}, beta_slow={beta_slow}"
        )
    truncate = check_bool(truncate, "truncate")
    low = correction_dim(beta_fast, dim, base, original_max_position)
    high = correction_dim(beta_slow, dim, base, original_max_position)
    if truncate:
        low, high = float(math.floor(low)), float(math.ceil(high))
    return max(low, 0.0), min(high, float(dim - 1))


def ramp_pair_index(dim: int, low: float, high: float) -> np.ndarray:
    """The reference ramp gamma_i, linear in the pair index i, (dim/2,).

    gamma_i = 1 - clip((i - low) / (high - low), 0, 1): 1 (keep theta_i)
    for i <= low, 0 (divide by s) for i >= high. The reference's
    ``linear_ramp`` is 1 - gamma; like it, ``high`` is nudged by 0.001 when
    low == high, and low > high is computed as written, which reverses the
    ramp: gamma is 0 for i <= high and 1 for i >= low. From
    :func:`correction_range` low > high arises in two ways only, and in
    both every pair lands on one side of the reversed ramp:

    * high < 0, when pair 0 makes fewer than beta_slow turns in L (with
      ``truncate``, few enough that ceil keeps the bound below 0; for
      example (0, -1) at L = 4): gamma = 1 for every pair, the reference
      keeps every frequency unchanged;
    * low > dim - 1, when the fast bound lies past dim - 1, so that high
      is clamped below it (for example (69, 63) for dim 64 at L = 1e11):
      gamma = 0 for every pair, the reference interpolates every pair.

    This function does the same in both cases.
    """
    dim = check_even_positive_int(dim, "dim")
    low, high = float(low), float(high)
    if not (math.isfinite(low) and math.isfinite(high)):
        raise ValueError(f"low and high must be finite, got low={low}, high={high}")
    if low == high:
        high += 0.001
    pair_index = np.arange(dim // 2, dtype=np.float64)
    return 1.0 - np.clip((pair_index - low) / (high - low), 0.0, 1.0)


def ramp_rotations(rotations: np.ndarray, alpha: float, beta: float) -> np.ndarray:
    """The paper's ramp gamma(r), linear in the rotations r; shape of r.

    YaRN paper, NTK-by-parts: gamma(r) = 0 if r < alpha, 1 if r > beta,
    (r - alpha) / (beta - alpha) otherwise. Llama 3.1 uses the same
    function with alpha = low_freq_factor, beta = high_freq_factor.
    """
    rotations = as_float_array(rotations, "rotations")
    alpha = check_positive_float(alpha, "alpha")
    beta = check_positive_float(beta, "beta")
    if beta <= alpha:
        raise ValueError(
            f"beta must be larger than alpha, got alpha={alpha}, beta={beta}"
        )
    return np.clip((rotations - alpha) / (beta - alpha), 0.0, 1.0)


def blend_frequencies(
    inv_freq: np.ndarray, factor: float, gamma: np.ndarray
) -> np.ndarray:
    """h(theta_i) = (1 - gamma_i) theta_i / s + gamma_i theta_i.

    The NTK-by-parts rule of the YaRN paper, shape of ``inv_freq``:
    gamma = 1 keeps a frequency, gamma = 0 interpolates it (Position
    Interpolation), values between mix the two.
    """
    inv_freq = as_float_array(inv_freq, "inv_freq")
    factor = check_factor(factor)
    gamma = as_float_array(gamma, "gamma")
    if gamma.shape != inv_freq.shape:
        raise ValueError(
            f"gamma must have the shape of inv_freq {inv_freq.shape}, got {gamma.shape}"
        )
    if np.any(gamma < 0) or np.any(gamma > 1):
        raise ValueError("gamma must lie in [0, 1]")
    return (1.0 - gamma) * inv_freq / factor + gamma * inv_freq


# -------------------------------------------- bases and the attention factor


def ntk_aware_base(base: float, dim: int, factor: float) -> float:
    """NTK-aware base b' = b * s**(dim / (dim - 2)).

    bloc97 2023; YaRN paper, NTK-aware. The exponent makes the slowest
    pair, i = dim/2 - 1, exactly s times slower, while pair 0 keeps
    theta_0 = 1. Needs dim >= 4 (with one pair there is nothing to spread).
    """
    base = check_positive_float(base, "base")
    dim = check_even_positive_int(dim, "dim")
    if dim < 4:
        raise ValueError(
            "dim must be at least 4 for NTK-aware scaling "
            f"(the exponent dim/(dim-2)), got {dim}"
        )
    factor = check_factor(factor)
    return base * factor ** (dim / (dim - 2))


def dynamic_scale(factor: float, original_max_position: int, seq_len: int) -> float:
    """The scale dynamic NTK feeds into the NTK-aware base.

    s_dyn = factor * l / L - (factor - 1), l = max(seq_len, L), with
    L = original_max_position. It is 1 up to l = L and grows with slope
    factor / L after; with factor = 1 it is the paper's dynamic
    s = max(1, l / L).
    """
    factor = check_factor(factor)
    original_max_position = check_positive_int(
        original_max_position, "original_max_position"
    )
    seq_len = check_positive_int(seq_len, "seq_len")
    length = max(seq_len, original_max_position)
    return factor * length / original_max_position - (factor - 1)


def yarn_mscale(factor: float, mscale: float = 1.0) -> float:
    """sqrt(1/t) = 0.1 * mscale * ln(s) + 1 for s > 1, and 1 for s <= 1.

    YaRN paper: the recommended attention temperature for LLaMA,
    sqrt(1/t) = 0.1 ln s + 1 (``mscale`` = 1). It multiplies cos and sin,
    so q.k logits scale by its square, 1/t. ``mscale`` may be any finite
    number (0 gives 1, a negative one a factor below 1).
    """
    factor = check_positive_float(factor, "factor")
    mscale = check_real(mscale, "mscale")
    if factor <= 1:
        return 1.0
    return 0.1 * mscale * math.log(factor) + 1.0


def yarn_attention_factor(
    factor: float,
    *,
    mscale: float | None = None,
    mscale_all_dim: float | None = None,
    attention_factor: float | None = None,
) -> float:
    """The number YaRN multiplies cos and sin by (the module docstring says
    why in this order).

    1. ``attention_factor`` if given (not None; finite and >= 0), as is;
    2. else yarn_mscale(s, mscale) / yarn_mscale(s, mscale_all_dim) if both
       are given and non-zero (a denominator of exactly 0 is a ValueError
       naming ``mscale_all_dim``);
    3. else yarn_mscale(s) = 0.1 ln s + 1.
    """
    factor = check_factor(factor)
    if mscale is not None:
        mscale = check_real(mscale, "mscale")
    if mscale_all_dim is not None:
        mscale_all_dim = check_real(mscale_all_dim, "mscale_all_dim")
    if attention_factor is not None:
        return _check_attention_factor(attention_factor)
    if not (mscale and mscale_all_dim):
        return yarn_mscale(factor)
    denominator = yarn_mscale(factor, mscale_all_dim)
    if denominator == 0.0:
        raise ValueError(
            f"mscale_all_dim={mscale_all_dim} makes the denominator "
            f"0.1 * mscale_all_dim * ln(factor) + 1 zero at factor={factor}"
        )
    return float(yarn_mscale(factor, mscale) / denominator)


def _check_attention_factor(value: object) -> float:
    """A given attention_factor: finite and >= 0."""
    value = check_real(value, "attention_factor")
    if value < 0:
        raise ValueError(
            "attention_factor must be a finite number >= 0 (transformers "
            f"flags a negative one), got {value}"
        )
    return value


def _beta(value: object, name: str, default: float) -> float:
    """beta_fast or beta_slow: ``value``, or ``default`` for None and 0."""
    if value is None:
        return default
    value = check_real(value, name)
    return value if value != 0 else default


def llama3_ramp(
    rotations: np.ndarray, low_freq_factor: float, high_freq_factor: float
) -> np.ndarray:
    """gamma of Llama 3.1's rule for turns r_i = L / lambda_i, shape of r.

    Meta's rule: pairs with wavelength below L / high_freq_factor are kept
    (gamma = 1), those above L / low_freq_factor are divided by s
    (gamma = 0), and those in between are mixed with
    (r - low_freq_factor) / (high_freq_factor - low_freq_factor): the
    paper's ramp :func:`ramp_rotations` with alpha = low_freq_factor,
    beta = high_freq_factor. A negative low_freq_factor puts L /
    low_freq_factor below every wavelength, so every pair is divided
    (gamma = 0). ValueError, naming the argument, for either factor 0 or
    high_freq_factor <= low_freq_factor.
    """
    low = check_real(low_freq_factor, "low_freq_factor")
    high = check_real(high_freq_factor, "high_freq_factor")
    for name, value in (("low_freq_factor", low), ("high_freq_factor", high)):
        if value == 0:
            raise ValueError(
                f"{name} must not be 0 (the rule divides the original context by it)"
            )
    if high <= low:
        raise ValueError(
            "high_freq_factor must be larger than low_freq_factor, "
            f"got high_freq_factor={high} <= low_freq_factor={low}"
        )
    rotations = as_float_array(rotations, "rotations")
    if low < 0:
        return np.zeros_like(rotations)
    return ramp_rotations(rotations, low, high)


def longrope_factors(value: object, name: str, dim: int) -> np.ndarray:
    """LongRoPE's per-pair factors lambda_i, checked, as float64, (dim/2,).

    ``value``: a list, tuple or 1-D numpy array of dim/2 finite real
    numbers > 0, one per pair i = 0 .. dim/2 - 1 (``short_factor`` or
    ``long_factor`` of a Phi-3 ``config.json``); ``name`` is the argument's
    name for the errors. None, a string, a mapping or any other object is a
    TypeError (None: the option is missing); a wrong length, a bool or
    non-number entry, 0, a negative number, NaN or infinity is a ValueError
    or TypeError naming ``name`` and the index of the entry. Nothing is
    broadcast: a single number is not a list of factors.
    """
    dim = check_even_positive_int(dim, "dim")
    expected = f"a list of dim/2 = {dim // 2} numbers > 0, one per pair"
    if isinstance(value, np.ndarray):
        if value.ndim != 1:
            raise ValueError(f"{name} must be {expected}, got shape {value.shape}")
        if value.dtype == bool or not (
            np.issubdtype(value.dtype, np.integer)
            or np.issubdtype(value.dtype, np.floating)
        ):
            raise TypeError(f"{name} must hold real numbers, got dtype {value.dtype}")
        entries = [float(entry) for entry in value]
    elif isinstance(value, (list, tuple)):
        for index, entry in enumerate(value):
            if isinstance(entry, bool) or not isinstance(entry, numbers.Real):
                raise TypeError(
                    f"{name} must hold real numbers, got {entry!r} of type "
                    f"{type(entry).__name__} at index {index}"
                )
        entries = [float(entry) for entry in value]
    else:
        raise TypeError(f"{name} must be {expected}, got {type(value).__name__}")
    if len(entries) != dim // 2:
        raise ValueError(f"{name} must be {expected}, got {len(entries)} entries")
    for index, entry in enumerate(entries):
        if not (math.isfinite(entry) and entry > 0):
            raise ValueError(
                f"{name} must hold finite numbers > 0, got {entry} at index {index}"
            )
    return np.array(entries, dtype=np.float64)


def longrope_attention_factor(
    factor: float, original_max_position: int, attention_factor: float | None = None
) -> float:
    """The number LongRoPE multiplies cos and sin by.

    ``attention_factor`` if given (not None; finite and >= 0), as is, at
    every s. Otherwise sqrt(1 + ln s / ln L) for s = ``factor`` > 1 and
    L = ``original_max_position`` in positions, and 1 for s = 1 (Phi-3-mini-128k:
    s = 131072 / 4096 = 32 gives sqrt(1 + 5/12) = 1.1902). L = 1 with s > 1
    divides by ln 1 = 0: a ValueError naming ``original_max_position``.
    """
    factor = check_factor(factor)
    original_max_position = check_positive_int(
        original_max_position, "original_max_position"
    )
    if attention_factor is not None:
        return _check_attention_factor(attention_factor)
    if factor == 1.0:
        return 1.0
    if original_max_position == 1:
        raise ValueError(
            "original_max_position must be at least 2 for LongRoPE's attention "
            "factor sqrt(1 + ln(factor) / ln(original_max_position)), got 1"
        )
    return math.sqrt(1.0 + math.log(factor) / math.log(original_max_position))


# --------------------------------------------------- one function per method


@dataclass(frozen=True)
class RopeArguments:
    """The checked arguments every method's function receives.

    ``dim``: even head dimension; ``base``: RoPE base b; ``factor``: s >= 1;
    ``original_max_position``: L, the trained context in positions;
    ``seq_len``: the current length (set for methods that read it, when
    given; else None). :func:`rope_scaling` builds it after its one shared check.
    """

    dim: int
    base: float
    factor: float
    original_max_position: int
    seq_len: int | None = None

    @property
    def theta(self) -> np.ndarray:
        """The plain RoPE frequencies theta_i = base**(-2i/dim), (dim/2,)."""
        return frequencies(self.dim, self.base)


def compute_none(rope: RopeArguments) -> tuple[np.ndarray, float]:
    """Plain RoPE, theta_i = base**(-2i/dim) (RoFormer sec. 3.2).

    ``transformers``' rope type "default".
    """
    return rope.theta, 1.0


def compute_linear(rope: RopeArguments) -> tuple[np.ndarray, float]:
    """Position Interpolation (Chen et al. 2023): theta'_i = theta_i / s.

    Position m is read as m / s, which is the same as dividing every
    frequency by s. ``transformers``' rope type "linear".
    """
    return rope.theta / rope.factor, 1.0


def compute_ntk(rope: RopeArguments) -> tuple[np.ndarray, float]:
    """NTK-aware scaling (bloc97 2023; YaRN paper, NTK-aware).

    Plain RoPE with the base b' = b * s**(dim / (dim - 2)) of
    :func:`ntk_aware_base`.
    """
    new_base = ntk_aware_base(rope.base, rope.dim, rope.factor)
    return frequencies(rope.dim, new_base), 1.0


def compute_dynamic(rope: RopeArguments) -> tuple[np.ndarray, float]:
    """Dynamic NTK (emozilla 2023) as ``transformers``' rope type "dynamic".

    NTK-aware scaling with s_dyn = factor * l / L - (factor - 1),
    l = max(seq_len, L) (:func:`dynamic_scale`), instead of s.
    """
    scale = dynamic_scale(rope.factor, rope.original_max_position, rope.seq_len)
    new_base = ntk_aware_base(rope.base, rope.dim, scale)
    return frequencies(rope.dim, new_base), 1.0


def compute_ntk_by_parts(
    rope: RopeArguments,
    *,
    beta_fast: float | None,
    beta_slow: float | None,
    truncate: bool,
) -> tuple[np.ndarray, float]:
    """NTK-by-parts (YaRN paper), frequencies only.

    h(theta_i) = (1 - gamma_i) theta_i / s + gamma_i theta_i with the
    reference ramp gamma, linear in the pair index between the bounds of
    :func:`correction_range`; no attention factor. beta_fast / beta_slow
    None or 0 mean 32 / 1.
    """
    low, high = correction_range(
        rope.dim,
        base=rope.base,
        original_max_position=rope.original_max_position,
        beta_fast=_beta(beta_fast, "beta_fast", 32.0),
        beta_slow=_beta(beta_slow, "beta_slow", 1.0),
        truncate=truncate,
    )
    gamma = ramp_pair_index(rope.dim, low, high)
    return blend_frequencies(rope.theta, rope.factor, gamma), 1.0


def compute_yarn(
    rope: RopeArguments,
    *,
    beta_fast: float | None,
    beta_slow: float | None,
    truncate: bool,
    mscale: float | None,
    mscale_all_dim: float | None,
    attention_factor: float | None,
) -> tuple[np.ndarray, float]:
    """YaRN (Peng et al. 2023): NTK-by-parts frequencies and sqrt(1/t).

    The paper's sqrt(1/t) = 0.1 ln s + 1 multiplies cos and sin, or the
    factor the options choose (:func:`yarn_attention_factor`).
    """
    inv_freq, _ = compute_ntk_by_parts(
        rope, beta_fast=beta_fast, beta_slow=beta_slow, truncate=truncate
    )
    return inv_freq, yarn_attention_factor(
        rope.factor,
        mscale=mscale,
        mscale_all_dim=mscale_all_dim,
        attention_factor=attention_factor,
    )


def compute_llama3(
    rope: RopeArguments, *, low_freq_factor: float, high_freq_factor: float
) -> tuple[np.ndarray, float]:
    """Llama 3.1's rule (Meta's reference code), no attention factor.

    The YaRN paper's NTK-by-parts with the paper's ramp, linear in the
    turns r_i = L / lambda_i, alpha = low_freq_factor and
    beta = high_freq_factor (:func:`llama3_ramp`).
    """
    turns = rotations_per_pair(rope.dim, rope.base, rope.original_max_position)
    gamma = llama3_ramp(turns, low_freq_factor, high_freq_factor)
    return blend_frequencies(rope.theta, rope.factor, gamma), 1.0


def compute_longrope(
    rope: RopeArguments,
    *,
    short_factor: object,
    long_factor: object,
    attention_factor: float | None,
) -> tuple[np.ndarray, float]:
    """LongRoPE (Ding et al. 2024) as Phi-3 runs it.

    theta'_i = theta_i / lambda_i, one searched factor lambda_i per pair
    (:func:`longrope_factors`): ``long_factor`` when seq_len > L =
    original_max_position, ``short_factor`` when seq_len <= L or seq_len is
    not given. Both lists are checked whichever is used. The attention factor is
    :func:`longrope_attention_factor` of s = ``rope.factor``: pass the
    target context over L as the factor (Phi-3's max_position_embeddings /
    original_max_position_embeddings). Equal factors lambda_i = s are
    Position Interpolation, theta_i / s.
    """
    short = longrope_factors(short_factor, "short_factor", rope.dim)
    long = longrope_factors(long_factor, "long_factor", rope.dim)
    is_long = rope.seq_len is not None and rope.seq_len > rope.original_max_position
    inv_freq = rope.theta / (long if is_long else short)
    return inv_freq, longrope_attention_factor(
        rope.factor, rope.original_max_position, attention_factor
    )


def compute_proportional(
    rope: RopeArguments, *, partial_rotary_factor: float | None
) -> tuple[np.ndarray, float]:
    """p-RoPE (Barbero et al., ICLR 2025) as ``transformers``' rope type "proportional".

    With k = int(p * dim // 2), p = ``partial_rotary_factor`` in [0, 1] (that
    floating-point expression, as transformers writes it): theta'_i = theta_i / s for
    i < k, theta'_i = 0 for the other dim/2 - k pairs (not rotated), theta_i =
    base**(-2i/dim) over the whole head. No attention factor.
    """
    share = check_real(partial_rotary_factor, "partial_rotary_factor")
    if not 0.0 <= share <= 1.0:
        raise ValueError(
            f"partial_rotary_factor must lie in [0, 1] (the share of pairs rotated), "
            f"got {share}"
        )
    rotated = int(share * rope.dim // 2)
    inv_freq = rope.theta.copy()
    inv_freq[rotated:] = 0.0
    return inv_freq / rope.factor, 1.0


# ------------------------------------------------------------------ the table


@dataclass(frozen=True)
class ScalingMethod:
    """One entry of :data:`SCALING_METHODS`: a method and what it takes.

    ``function`` gets the checked :class:`RopeArguments` and, as keywords,
    every option in ``options`` (given or default; None means "not given")
    and returns ``(inv_freq, attention_factor)``. ``needs_seq_len``: the
    method reads ``seq_len``, which is then required; ``optional_seq_len``:
    the method reads ``seq_len`` if it is given and works without it (every
    method with neither rejects it); ``takes_factor``: False if the factor
    must be 1; ``required``: the options that must be given (not None).
    """

    function: Callable[..., tuple[np.ndarray, float]]
    options: Mapping[str, object] = field(default_factory=dict)
    needs_seq_len: bool = False
    takes_factor: bool = True
    optional_seq_len: bool = False
    required: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        read_only = MappingProxyType(dict(self.options))
        object.__setattr__(self, "options", read_only)
        object.__setattr__(self, "required", tuple(self.required))
        unknown = sorted(set(self.required) - set(read_only))
        if unknown:
            raise ValueError(f"required options {unknown} are not among the options")
        if self.needs_seq_len and self.optional_seq_len:
            raise ValueError("needs_seq_len and optional_seq_len exclude each other")

    @property
    def reads_seq_len(self) -> bool:
        """Whether the method takes ``seq_len`` at all (required or optional)."""
        return self.needs_seq_len or self.optional_seq_len


_RAMP = {"beta_fast": 32.0, "beta_slow": 1.0, "truncate": True}

#: Every method of :func:`rope_scaling`: its name, its function, its options.
SCALING_METHODS: dict[str, ScalingMethod] = {
    "none": ScalingMethod(compute_none, takes_factor=False),
    "linear": ScalingMethod(compute_linear),
    "ntk": ScalingMethod(compute_ntk),
    "dynamic": ScalingMethod(compute_dynamic, needs_seq_len=True),
    "ntk_by_parts": ScalingMethod(compute_ntk_by_parts, _RAMP),
    "yarn": ScalingMethod(
        compute_yarn,
        {**_RAMP, "mscale": None, "mscale_all_dim": None, "attention_factor": None},
    ),
    "llama3": ScalingMethod(
        compute_llama3, {"low_freq_factor": 1.0, "high_freq_factor": 4.0}
    ),
    "longrope": ScalingMethod(
        compute_longrope,
        {"short_factor": None, "long_factor": None, "attention_factor": None},
        optional_seq_len=True,
        required=("short_factor", "long_factor"),
    ),
    "proportional": ScalingMethod(
        compute_proportional,
        {"partial_rotary_factor": None},
        required=("partial_rotary_factor",),
    ),
}

#: The method names, in the order of :data:`SCALING_METHODS`.
METHODS = tuple(SCALING_METHODS)

#: The options each method takes, with their defaults (None: "not given").
OPTIONS: dict[str, dict[str, object]] = {
    name: dict(method.options) for name, method in SCALING_METHODS.items()
}


# ------------------------------------------------------------- the contract


def _check_arguments(
    method: object,
    dim: object,
    base: object,
    factor: object,
    original_max_position: object,
    seq_len: object,
    options: Mapping[str, object],
) -> tuple[RopeArguments, dict[str, object]]:
    """The one check of :func:`rope_scaling`'s arguments, for every method.

    Returns the checked arguments and the method's options, defaults
    filled in. A required option (the table's ``required``) that is
    missing or None is a ValueError naming it; the options' values are
    checked by the functions that use them (:func:`correction_range`,
    :func:`yarn_attention_factor`, :func:`llama3_ramp`,
    :func:`longrope_factors`).
    """
    method = check_choice(method, "method", SCALING_METHODS)
    entry = SCALING_METHODS[method]
    dim = check_even_positive_int(dim, "dim")
    base = check_positive_float(base, "base")
    factor = check_factor(factor)
    original_max_position = check_positive_int(
        original_max_position, "original_max_position"
    )
    check_options(options, entry.options, f"method {method!r}")
    missing = [name for name in entry.required if options.get(name) is None]
    if missing:
        raise ValueError(
            f"method {method!r} requires the option(s) {missing} (missing or None)"
        )
    if entry.needs_seq_len and seq_len is None:
        raise ValueError(
            f"seq_len is required for method {method!r} (the current sequence length)"
        )
    if entry.reads_seq_len:
        if seq_len is not None:
            seq_len = check_positive_int(seq_len, "seq_len")
    elif seq_len is not None:
        users = [
            repr(name) for name, entry in SCALING_METHODS.items() if entry.reads_seq_len
        ]
        raise ValueError(
            f"seq_len is only used by method {', '.join(users)}, "
            f"got seq_len={seq_len!r} for {method!r}"
        )
    if not entry.takes_factor and factor != 1.0:
        raise ValueError(
            f"method {method!r} takes no factor (it must be 1), got factor={factor}"
        )
    rope = RopeArguments(dim, base, factor, original_max_position, seq_len)
    return rope, {**entry.options, **options}


def rope_scaling(
    method: str,
    dim: int,
    *,
    base: float = 10000.0,
    factor: float = 1.0,
    original_max_position: int = 2048,
    seq_len: int | None = None,
    **options: object,
) -> tuple[np.ndarray, float]:
    """Frequencies and attention factor of a RoPE context-extension method.

    ``method``: one of :data:`METHODS`; ``dim``: even head dimension;
    ``base``: RoPE base; ``factor``: s >= 1; ``original_max_position``: L,
    the trained context in positions; ``seq_len``: current length, needed
    by ``"dynamic"``, optional for ``"longrope"`` (long factors when
    seq_len > original_max_position, else short), rejected by the others;
    ``options``: those the method takes in :data:`SCALING_METHODS`
    (beta_fast, beta_slow, truncate, mscale, mscale_all_dim,
    attention_factor, low_freq_factor, high_freq_factor, short_factor,
    long_factor, partial_rotary_factor). For ``"longrope"``, ``factor`` is
    the target context over original_max_position (Phi-3:
    max_position_embeddings / original_max_position_embeddings); it sets
    only the attention factor. ``"proportional"`` (p-RoPE) returns 0 for
    the pairs it does not rotate.

    Returns ``(inv_freq, attention_factor)``: inv_freq, shape (dim/2,),
    float64, in radians per position; attention_factor multiplies cos and
    sin (q.k logits scale by its square) and is 1.0 for every method but
    ``"yarn"`` and ``"longrope"``. Pass both to :func:`posenc.apply_rope`.

    Options are read as ``transformers`` reads them (the module docstring
    states how, once).

    Checks the arguments once (:func:`_check_arguments`), looks the
    method up in :data:`SCALING_METHODS` and calls its function.
    """
    rope, settings = _check_arguments(
        method, dim, base, factor, original_max_position, seq_len, options
    )
    compute = SCALING_METHODS[method].function
    return compute(rope, **settings)
