"""How transformers 5.24 reads the RoPE fields of a model's ``config.json``, one field each.

These are the readers :func:`posenc.rope_from_config` calls (:mod:`posenc.config`); each
returns one value or raises a ValueError or TypeError naming the field. Sources:
``modeling_rope_utils.py`` (``RotaryEmbeddingConfigMixin`` standardises and validates, the
``_compute_*_parameters`` functions compute) and the config classes of the models named
below.
* the RoPE block: ``rope_parameters`` (transformers 5) or ``rope_scaling`` (its old
  name); absent or null is plain RoPE. Its type is ``rope_type``, else the old key
  ``type``, else "default". The keys a type reads are those transformers' validation
  accepts; any other key is a ValueError naming it (transformers logs "Unrecognized
  keys"), and so is a missing required one (transformers raises KeyError);
* rope_theta: in the block, else at the top level, else the model's default
  (10000; 150000 for ``gpt_oss``). GPT-NeoX (``gpt_neox``, ``gpt_neox_japanese``)
  names it ``rotary_emb_base``;
* the head: ``qk_rope_head_dim`` (DeepSeek's rotated part of each head; its config
  class sets head_dim to it), else ``head_dim``, else hidden_size //
  num_attention_heads;
* the rotated share: ``partial_rotary_factor`` in the block, else at the top level,
  else the model's default (1; 0.5 for ``phi``); GPT-NeoX names it ``rotary_pct``
  (default 0.25 for ``gpt_neox``, 1 for ``gpt_neox_japanese``). transformers rotates
  rotary_dim = int(head_dim * factor) features, truncating;
* the original context L for llama3, yarn and longrope: a top-level
  ``original_max_position_embeddings`` (Phi-3's place; it wins, and ``phi3``'s class
  defaults it to 4096), else the block's, else ``max_position_embeddings``; dynamic
  NTK reads ``max_position_embeddings`` as L;
* factor s: the block's ``factor`` (required but for longrope, where it defaults to
  max_position_embeddings / L, Phi-3's way);
* GPT-J (``gptj``) has no RoPE block: it rotates ``rotary_dim`` features (default 64)
  with base 10000;
* Phi-3 (``phi3``) renames the types "su" and "yarn" to "longrope" (after it fills in
  the original context, so the block must then hold one) and accepts only "default"
  and "longrope";
* p-RoPE, rope type "proportional" (the Gemma 4 family's full-attention layers): the
  whole head is the table (``_compute_proportional_rope_parameters`` returns head_dim/2
  frequencies, 0 for the pairs it does not rotate), so rotary_dim = head_dim and
  partial_rotary_factor (block, else top level) is the method's option, not a cut of
  the head. A missing one is an error (transformers warns and computes with 1.0); so is
  a ``factor`` key (its validation calls it unrecognised, though its code divides by
  it), and the type on GPT-NeoX and Phi, whose attention cuts the head by the share
  (not checked against transformers);
* a block nested by layer type (Gemma 3 and 4: ``{"full_attention": {...},
  "sliding_attention": {...}}``, one RoPE per kind of layer, each with its own head
  size through ``per_layer_config``) is an error naming the first nested key:
  :func:`posenc.rope_from_config` returns one RoPE, so pass one layer type's block as
  ``rope_parameters`` with that layer's ``head_dim``.
"""

from __future__ import annotations

from collections.abc import Mapping

from posenc._validation import (
    check_factor,
    check_positive_float,
    check_positive_int,
    check_real,
)
from posenc.scaling import yarn_mscale

#: transformers' rope types and posenc's method for each.
METHOD_OF_ROPE_TYPE = {
    "default": "none",
    "linear": "linear",
    "dynamic": "dynamic",
    "yarn": "yarn",
    "llama3": "llama3",
    "longrope": "longrope",
    "proportional": "proportional",
}

#: The keys of the RoPE block each rope type reads (transformers'
#: ``_validate_<type>_rope_parameters``: required, then optional keys). ``rope_type``,
#: ``type``, ``rope_theta`` and ``partial_rotary_factor`` are allowed for every type.
ROPE_KEYS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "default": ((), ()),
    "linear": (("factor",), ()),
    "dynamic": (("factor",), ()),
    "yarn": (
        ("factor",),
        ("original_max_position_embeddings", "attention_factor", "beta_fast")
        + ("beta_slow", "mscale", "mscale_all_dim", "truncate"),
    ),
    "longrope": (
        ("short_factor", "long_factor"),
        ("original_max_position_embeddings", "attention_factor", "factor"),
    ),
    "llama3": (
        ("factor", "low_freq_factor", "high_freq_factor"),
        ("original_max_position_embeddings",),
    ),
    "proportional": ((), ()),  # rope_theta and partial_rotary_factor: every type's
}
_EVERY_TYPE = ("rope_type", "type", "rope_theta", "partial_rotary_factor")
_WITH_ORIGINAL = ("yarn", "llama3", "longrope")

#: Model types whose attention (transformers 5.24, ``self.scaling =
#: yarn_apply_mscale(config.rope_parameters, qk_head_dim ** -0.5)``) multiplies the
#: softmax scale by yarn_mscale(s, mscale_all_dim) ** 2 when the type is not "default"
#: and mscale_all_dim is non-zero: DeepSeek-V2/V3 and the models built on their code.
SOFTMAX_MSCALE_MODEL_TYPES = frozenset(
    "axk1 bailing_hybrid deepseek_v2 deepseek_v3 glm4_moe_lite longcat_flash minicpm3 "
    "mistral4 youtu".split()
)

_DEFAULT_THETA = {"gpt_oss": 150000.0}
_DEFAULT_ROTARY_SHARE = {"phi": 0.5, "gpt_neox": 0.25, "gpt_neox_japanese": 1.0}
_NEOX = ("gpt_neox", "gpt_neox_japanese")


def read_rope_block(config: Mapping[str, object]) -> tuple[str, Mapping[str, object]]:
    """``(name, block)``: rope_parameters or rope_scaling ({} when absent or null)."""
    given = [
        k for k in ("rope_parameters", "rope_scaling") if config.get(k) is not None
    ]
    if len(given) == 2:
        raise ValueError(
            "config has both rope_parameters and rope_scaling; give one "
            "(rope_scaling is the old name of rope_parameters)"
        )
    if not given:
        return "rope_scaling", {}
    block = config[given[0]]
    if not isinstance(block, Mapping):
        raise TypeError(
            f"{given[0]} must be a dict (a JSON object), got {type(block).__name__}"
        )
    layer_types = config.get("layer_types") or ()
    for name, value in block.items():
        if isinstance(value, Mapping) or (
            isinstance(layer_types, (list, tuple)) and name in layer_types
        ):
            raise ValueError(
                f"{given[0]}.{name}: the block is nested by layer type (one RoPE per "
                "kind of layer, as in Gemma 3 and 4); posenc reads one RoPE per config: "
                f"pass one layer type's block as {given[0]}, with that layer's head_dim"
            )
    return given[0], block


def read_rope_type(rope: Mapping[str, object], key: str, model_type: str | None) -> str:
    """rope_type, else the old key type, else "default"; Phi-3's renamings. Both given:
    rope_type wins, as transformers 5.24 reads them (``setdefault("rope_type", type)``)."""
    new, old = rope.get("rope_type"), rope.get("type")
    rope_type = new if new is not None else old if old is not None else "default"
    if not isinstance(rope_type, str):
        raise TypeError(f"{key}.rope_type must be a string, got {rope_type!r}")
    if model_type == "phi3":
        if rope_type in ("su", "yarn"):
            if rope.get("original_max_position_embeddings") is None:
                raise ValueError(
                    f"{key}.original_max_position_embeddings is missing: Phi3Config "
                    f"renames {rope_type!r} to 'longrope' only after filling in the "
                    "original context, so transformers raises KeyError"
                )
            rope_type = "longrope"  # Phi3Config's renaming of its older names
        if rope_type not in ("default", "longrope"):
            raise ValueError(
                f"{key}.rope_type {rope_type!r}: Phi-3 (model_type phi3) takes only "
                "'default' or 'longrope' (Phi3Config raises)"
            )
    if rope_type not in METHOD_OF_ROPE_TYPE:
        raise ValueError(
            f"{key}.rope_type {rope_type!r} is not one of {sorted(METHOD_OF_ROPE_TYPE)} "
            "(posenc has no method for it)"
        )
    return rope_type


def check_rope_keys(rope: Mapping[str, object], key: str, rope_type: str) -> None:
    """Every key of the block is one the type reads; the required ones are there."""
    required, optional = ROPE_KEYS[rope_type]
    allowed = set(required) | set(optional) | set(_EVERY_TYPE)
    for name in rope:
        if name not in allowed:
            raise ValueError(
                f"{key}.{name} is not read by rope type {rope_type!r} (it reads "
                f"{sorted(set(required) | set(optional)) or 'no options'}; "
                "transformers warns of unrecognized keys)"
            )
    for name in required:
        if rope.get(name) is None:
            raise ValueError(f"{key}.{name} is missing (rope type {rope_type!r})")


def read_head_dim(config: Mapping[str, object]) -> int:
    """qk_rope_head_dim, else head_dim, else hidden_size // num_attention_heads."""
    for name in ("qk_rope_head_dim", "head_dim"):
        if config.get(name) is not None:
            return required_int(config[name], name)
    hidden = required_int(config.get("hidden_size"), "hidden_size")
    heads = required_int(config.get("num_attention_heads"), "num_attention_heads")
    if hidden % heads:
        raise ValueError(
            f"hidden_size {hidden} is not a multiple of num_attention_heads {heads} "
            "(and no head_dim is given)"
        )
    return hidden // heads


def read_rotary_dim(
    config: Mapping[str, object],
    rope: Mapping[str, object],
    key: str,
    model_type: str | None,
    head_dim: int,
) -> int:
    """int(head_dim * partial_rotary_factor), which must be even and > 0."""
    name, share = _rotary_share(config, rope, key, model_type)
    share = check_real(share, name)
    if not 0 < share <= 1:
        raise ValueError(f"{name} must lie in (0, 1], got {share}")
    rotary_dim = int(head_dim * share)  # transformers truncates
    if rotary_dim < 2 or rotary_dim % 2:
        raise ValueError(
            f"{name} {share} gives int({head_dim} * {share}) = {rotary_dim} rotated "
            "features per head; RoPE needs an even number of at least 2"
        )
    return rotary_dim


def read_proportional_share(
    config: Mapping[str, object],
    rope: Mapping[str, object],
    key: str,
    model_type: str | None,
) -> float:
    """p-RoPE's partial_rotary_factor: the block's, else the top level's; required."""
    if model_type in _NEOX or model_type in _DEFAULT_ROTARY_SHARE:
        raise ValueError(
            f"{key}.rope_type 'proportional' on model_type {model_type!r}: its attention "
            "cuts the head by the rotated share itself; posenc reads p-RoPE only where "
            "the whole head is the table"
        )
    for name, value in (
        (f"{key}.partial_rotary_factor", rope.get("partial_rotary_factor")),
        ("partial_rotary_factor", config.get("partial_rotary_factor")),
    ):
        if value is not None:
            return check_real(value, name)
    raise ValueError(
        f"{key}.partial_rotary_factor is missing for rope type 'proportional' "
        "(transformers warns and computes with 1.0, Position Interpolation)"
    )


def _rotary_share(
    config: Mapping[str, object],
    rope: Mapping[str, object],
    key: str,
    model_type: str | None,
) -> tuple[str, object]:
    """The field that sets the rotated share, and its value (a default if absent)."""
    if rope.get("partial_rotary_factor") is not None:
        return f"{key}.partial_rotary_factor", rope["partial_rotary_factor"]
    if model_type in _NEOX:
        _same_if_both(config, "rotary_pct", "partial_rotary_factor")
        if config.get("rotary_pct") is not None:
            return "rotary_pct", config["rotary_pct"]
        return "rotary_pct", _DEFAULT_ROTARY_SHARE[model_type]
    _neox_only(config, "rotary_pct", model_type)
    if config.get("partial_rotary_factor") is not None:
        return "partial_rotary_factor", config["partial_rotary_factor"]
    return "partial_rotary_factor", _DEFAULT_ROTARY_SHARE.get(model_type, 1.0)


def read_base(
    config: Mapping[str, object],
    rope: Mapping[str, object],
    key: str,
    model_type: str | None,
) -> float:
    """rope_theta (block, then top level; GPT-NeoX: rotary_emb_base), else the default."""
    if rope.get("rope_theta") is not None:
        return check_positive_float(rope["rope_theta"], f"{key}.rope_theta")
    top = "rotary_emb_base" if model_type in _NEOX else "rope_theta"
    if model_type in _NEOX:
        _same_if_both(config, "rotary_emb_base", "rope_theta")
    else:
        _neox_only(config, "rotary_emb_base", model_type)
    if config.get(top) is not None:
        return check_positive_float(config[top], top)
    return _DEFAULT_THETA.get(model_type, 10000.0)


def read_original_context(
    config: Mapping[str, object],
    rope: Mapping[str, object],
    key: str,
    rope_type: str,
    model_type: str | None,
) -> int | None:
    """L for llama3, yarn and longrope (None for the others: max_position is used)."""
    if rope_type not in _WITH_ORIGINAL:
        return None
    if config.get("original_max_position_embeddings") is not None:
        return required_int(
            config["original_max_position_embeddings"],
            "original_max_position_embeddings",
        )
    if model_type == "phi3":
        return 4096  # Phi3Config's default, which takes priority over the block's
    if rope.get("original_max_position_embeddings") is not None:
        return required_int(
            rope["original_max_position_embeddings"],
            f"{key}.original_max_position_embeddings",
        )
    return None


def read_factor(
    rope: Mapping[str, object],
    key: str,
    rope_type: str,
    max_position: int,
    original: int | None,
) -> float:
    """s: the block's factor; longrope without one: max_position / L."""
    if rope_type == "default":
        return 1.0
    L = original or max_position
    if rope.get("factor") is None:  # longrope (_check_keys), or proportional: 1
        return check_factor(max_position / L, "max_position_embeddings / L")
    factor = check_factor(rope["factor"], f"{key}.factor")
    if rope_type == "yarn":
        implicit = max_position / L
        if implicit not in (1.0, factor):
            raise ValueError(
                f"{key}.factor {factor} differs from max_position_embeddings / "
                f"original_max_position_embeddings = {max_position} / {L} = {implicit} "
                "(transformers warns and uses the factor)"
            )
        attention = rope.get("attention_factor")
        if attention is not None and not isinstance(attention, float):
            raise TypeError(
                f"{key}.attention_factor must be a float for yarn, got {attention!r} "
                "(transformers' validation warns)"
            )
    if rope_type == "llama3" and L >= max_position:
        raise ValueError(
            f"original_max_position_embeddings {L} must be less than "
            f"max_position_embeddings {max_position} for llama3 (transformers warns)"
        )
    return factor


def read_softmax_scale(
    rope: Mapping[str, object], model_type: str | None, rope_type: str, factor: float
) -> float:
    """DeepSeek's yarn_mscale(s, mscale_all_dim)**2 on the softmax scale; else 1."""
    if model_type not in SOFTMAX_MSCALE_MODEL_TYPES or rope_type == "default":
        return 1.0
    mscale_all_dim = rope.get("mscale_all_dim")
    if not mscale_all_dim:  # transformers tests it for truth: None or 0 mean none
        return 1.0
    return yarn_mscale(factor, mscale_all_dim) ** 2


# ----------------------------------------------------------------- field checks


def _same_if_both(config: Mapping[str, object], read: str, ignored: str) -> None:
    """GPT-NeoX reads ``read``; an ``ignored`` field that says otherwise is an error."""
    if config.get(ignored) is not None and config.get(read) is not None:
        if config[ignored] != config[read]:
            raise ValueError(
                f"{ignored} {config[ignored]!r} disagrees with {read} {config[read]!r}; "
                f"GPT-NeoX reads {read} and ignores {ignored}"
            )


def _neox_only(config: Mapping[str, object], name: str, model_type: str | None) -> None:
    if config.get(name) is not None:
        raise ValueError(
            f"{name} is GPT-NeoX's field (model_type 'gpt_neox'); transformers ignores "
            f"it for model_type {model_type!r}"
        )


def required_int(value: object, name: str) -> int:
    """A required positive integer field (missing: ValueError naming it)."""
    if value is None:
        raise ValueError(f"{name} is missing")
    return check_positive_int(value, name)
