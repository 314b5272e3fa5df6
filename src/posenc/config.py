"""A model's ``config.json`` read as RoPE: what its rotary embedding computes.

:func:`rope_from_config` takes the configuration as a dict (transformers' field
names) and returns a :class:`RopeConfig`: the method, the rotated dimensions, base,
factor, original context and options, and what :func:`posenc.rope_scaling` computes
from them (``inv_freq``, the factor on cos and sin) plus the extra multiplier some
models put on the softmax scale. The fields are read as ``transformers`` 5.24 reads
them, one reader per field in :mod:`posenc.config_fields` (whose docstring states each
rule).

The frequencies are those the rotary module holds after construction: dynamic NTK at
seq_len = max_position_embeddings (scale 1, so plain RoPE), LongRoPE with its short
factors; :meth:`RopeConfig.at_length` gives them for a longer sequence. A value that
transformers' validation flags (it logs a warning and computes anyway) is a ValueError
or TypeError here, naming the field.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

import numpy as np

from posenc.config_fields import (
    METHOD_OF_ROPE_TYPE,
    check_rope_keys,
    read_base,
    read_factor,
    read_head_dim,
    read_original_context,
    read_proportional_share,
    read_rope_block,
    read_rope_type,
    read_rotary_dim,
    read_softmax_scale,
    required_int,
)
from posenc.scaling import OPTIONS, SCALING_METHODS, rope_scaling


@dataclass(frozen=True)
class RopeConfig:
    """What a model's RoPE does, read from its config.json.

    ``method``: posenc's method (:data:`posenc.scaling.METHODS`); ``rotary_dim``: the
    rotated features per head (even; the rest pass through); ``head_dim``: the head it
    belongs to; ``base``: rope_theta; ``factor``: s; ``original_max_position``: L in
    positions; ``max_position``: max_position_embeddings; ``options``: the method's
    options as given. ``inv_freq`` (rotary_dim/2,), float64, radians per position, and
    ``attention_factor`` (on cos and sin) are :func:`posenc.rope_scaling`'s result;
    ``softmax_scale`` is what the attention multiplies q.k / sqrt(d) by beyond that
    (DeepSeek's yarn_mscale(s, mscale_all_dim)**2; 1.0 elsewhere).
    """

    method: str
    rotary_dim: int
    head_dim: int
    base: float
    factor: float
    original_max_position: int
    max_position: int
    options: Mapping[str, object] = field(default_factory=dict)
    inv_freq: np.ndarray = field(default_factory=lambda: np.zeros(0), repr=False)
    attention_factor: float = 1.0
    softmax_scale: float = 1.0

    def arguments(self) -> dict[str, object]:
        """The keyword arguments of :func:`posenc.rope_scaling` (seq_len aside)."""
        return {
            "method": self.method,
            "dim": self.rotary_dim,
            "base": self.base,
            "factor": self.factor,
            "original_max_position": self.original_max_position,
            **self.options,
        }

    def at_length(self, seq_len: int | None = None) -> tuple[np.ndarray, float]:
        """``(inv_freq, attention_factor)`` for sequences of ``seq_len`` positions.

        None gives the stored values. "dynamic" reads seq_len (at least
        max_position_embeddings, as transformers), "longrope" switches to its long
        factors past L; the other methods do not depend on it.
        """
        if seq_len is None:
            return self.inv_freq.copy(), self.attention_factor
        arguments = self.arguments()
        method, dim = arguments.pop("method"), arguments.pop("dim")
        if SCALING_METHODS[method].reads_seq_len:
            if method == "dynamic":
                seq_len = max(required_int(seq_len, "seq_len"), self.max_position)
            arguments["seq_len"] = seq_len
        return rope_scaling(method, dim, **arguments)


def rope_from_config(config: Mapping[str, object]) -> RopeConfig:
    """Read a config.json (a dict) as transformers 5.24 does; see the module docstring.

    Returns a :class:`RopeConfig`. A missing, mistyped or unknown RoPE field, a rope
    type posenc lacks, or a value transformers rejects or flags is a ValueError or
    TypeError whose message names the field.
    """
    if not isinstance(config, Mapping):
        raise TypeError(f"config must be a dict, got {type(config).__name__}")
    model_type = config.get("model_type")
    if model_type is not None and not isinstance(model_type, str):
        raise TypeError(f"model_type must be a string, got {model_type!r}")
    if model_type == "gptj":
        return _gptj(config)
    key, rope = read_rope_block(config)
    rope_type = read_rope_type(rope, key, model_type)
    check_rope_keys(rope, key, rope_type)
    method = METHOD_OF_ROPE_TYPE[rope_type]
    head_dim = read_head_dim(config)
    if method == "proportional":  # the whole head is the table, zeros included
        share = read_proportional_share(config, rope, key, model_type)
        rotary_dim = head_dim
        if head_dim % 2:
            raise ValueError(f"head_dim must be even for p-RoPE, got {head_dim}")
    else:
        rotary_dim = read_rotary_dim(config, rope, key, model_type, head_dim)
    base = read_base(config, rope, key, model_type)
    max_position = required_int(
        config.get("max_position_embeddings"), "max_position_embeddings"
    )
    original = read_original_context(config, rope, key, rope_type, model_type)
    factor = read_factor(rope, key, rope_type, max_position, original)
    options = {name: rope[name] for name in OPTIONS[method] if name in rope}
    if method == "proportional":
        options["partial_rotary_factor"] = share
    seq_len = max_position if method == "dynamic" else None
    inv_freq, attention_factor = _compute(
        key,
        method,
        rotary_dim,
        base,
        factor,
        original or max_position,
        seq_len,
        options,
    )
    return RopeConfig(
        method=method,
        rotary_dim=rotary_dim,
        head_dim=head_dim,
        base=base,
        factor=factor,
        original_max_position=original or max_position,
        max_position=max_position,
        options=MappingProxyType(options),
        inv_freq=inv_freq,
        attention_factor=attention_factor,
        softmax_scale=read_softmax_scale(rope, model_type, rope_type, factor),
    )


# ----------------------------------------------------------------- the fields


def _gptj(config: Mapping[str, object]) -> RopeConfig:
    """GPT-J (``gptj``): plain RoPE, base 10000, on the first ``rotary_dim`` features.

    GPTJConfig has no RoPE block: its ``rotary_dim`` (default 64) counts features, and
    its attention rotates ``config.rotary_dim or config.hidden_size`` of them with
    base 10000 fixed; rope_scaling and rope_theta are not read, so they are errors here.
    """
    for name in (
        "rope_scaling",
        "rope_parameters",
        "rope_theta",
        "partial_rotary_factor",
    ):
        if config.get(name) is not None:
            raise ValueError(
                f"{name} is not read by GPT-J (model_type 'gptj'): its attention uses "
                "plain RoPE with base 10000 on rotary_dim features"
            )
    # GPTJConfig's own names (hidden_size, num_attention_heads and
    # max_position_embeddings are aliases of them)
    names = {"hidden_size": "n_embd", "num_attention_heads": "n_head"}
    names["max_position_embeddings"] = "n_positions"
    fields = {alias: config.get(own, config.get(alias)) for alias, own in names.items()}
    head_dim = read_head_dim(fields)
    rotary_dim = config.get("rotary_dim", 64)
    if rotary_dim is None:
        rotary_dim = required_int(fields["hidden_size"], "n_embd")
    rotary_dim = required_int(rotary_dim, "rotary_dim")
    if rotary_dim % 2:
        raise ValueError(f"rotary_dim must be even, got {rotary_dim}")
    max_position = required_int(fields["max_position_embeddings"], "n_positions")
    inv_freq, attention_factor = rope_scaling("none", rotary_dim, base=10000.0)
    return RopeConfig(
        method="none",
        rotary_dim=rotary_dim,
        head_dim=head_dim,
        base=10000.0,
        factor=1.0,
        original_max_position=max_position,
        max_position=max_position,
        options=MappingProxyType({}),
        inv_freq=inv_freq,
        attention_factor=attention_factor,
    )


def _compute(
    key: str,
    method: str,
    rotary_dim: int,
    base: float,
    factor: float,
    original: int,
    seq_len: int | None,
    options: dict[str, object],
) -> tuple[np.ndarray, float]:
    """:func:`posenc.rope_scaling`, its errors renamed to the config's fields."""
    try:
        return rope_scaling(
            method,
            rotary_dim,
            base=base,
            factor=factor,
            original_max_position=original,
            seq_len=seq_len,
            **options,
        )
    except (TypeError, ValueError) as error:
        message = str(error)
        named = sorted((message.find(n), n) for n in options if n in message)
        field_name = f"{key}.{named[0][1]}" if named else key
        raise type(error)(f"{field_name}: {error}") from None
