"""Published models' RoPE settings as :func:`posenc.rope_scaling` arguments.

Each file in ``posenc/book/model_configs/`` (package data; the repository's
``book/data/model_configs`` links to it) holds one model: the RoPE-relevant fields of its
``config.json`` as published (``config``), where they were read (``sources``), the
model's name, its hub revision if known and its config.json URL. The file's form is the
JSON Schema ``posenc/book/model_config.schema.json``. :func:`load_presets` reads them
all; :func:`preset_from_data` checks one against the schema and turns it into a
:class:`Preset` the way ``transformers`` (5.24.0, ``modeling_rope_utils.py`` and the
config classes) reads those fields:

* rope type: ``rope_scaling`` (or ``rope_parameters``) ``rope_type``, else its old
  name ``type``; none, null or "default" is posenc's ``"none"``; Phi-3 also
  called LongRoPE "su" (``Phi3Config`` renames it, and "yarn", to "longrope");
* dim: ``qk_rope_head_dim`` (DeepSeek: only that part of a head rotates; its
  config class sets head_dim to it), else ``head_dim``, else ``hidden_size //
  num_attention_heads``, times ``partial_rotary_factor`` if given;
* base: ``rope_theta`` (in ``rope_parameters`` or at the top), else 10000;
* original context L: for yarn, llama3 and longrope a top-level
  ``original_max_position_embeddings`` (Phi-3's; it takes priority), else the one
  in ``rope_scaling``, else ``max_position_embeddings``; for the other types
  ``max_position_embeddings`` (dynamic NTK reads it as L);
* factor: ``rope_scaling.factor``; for longrope and yarn without one,
  max_position_embeddings / L, as transformers computes it for Phi-3 (131072 /
  4096 = 32); 1 for "none";
* options: the method's options present in ``rope_scaling`` (beta_fast,
  short_factor, ...).

Malformed data is a ValueError whose message names the file and the field: a missing
or mistyped field or an unknown key (the schema), a rope type posenc lacks, an option
the method does not take, dimensions that do not divide (the derivation).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from types import MappingProxyType

import numpy as np

from posenc.scaling import OPTIONS, rope_scaling

#: Where the model files live (one JSON file per model; the file name is the key):
#: package data of ``posenc.book``, found through importlib.resources.
MODEL_CONFIGS = resources.files("posenc.book") / "model_configs"
#: The JSON Schema every model file must satisfy.
SCHEMA = resources.files("posenc.book") / "model_config.schema.json"

#: transformers' rope types and posenc's method for each.
METHOD_OF_ROPE_TYPE = {
    "default": "none",
    "linear": "linear",
    "dynamic": "dynamic",
    "yarn": "yarn",
    "llama3": "llama3",
    "longrope": "longrope",
}

_RESERVED_ROPE_KEYS = {
    "type",
    "rope_type",
    "factor",
    "original_max_position_embeddings",
    "rope_theta",
    "partial_rotary_factor",
}
_REQUIRED_OPTIONS = {
    "llama3": ("low_freq_factor", "high_freq_factor"),
    "longrope": ("short_factor", "long_factor"),
}
_DEFAULT_THETA = 10000.0


@dataclass(frozen=True)
class Preset:
    """One published model's RoPE, as :func:`posenc.rope_scaling` arguments.

    ``method``, ``dim`` (rotated dimensions per head), ``base``, ``factor`` (s),
    ``original_max_position`` (L, in positions) and ``options`` are passed to
    :func:`posenc.rope_scaling` by :meth:`compute`; ``max_position`` is the
    config's ``max_position_embeddings`` (the context the model is published
    for); ``model``, ``revision``, ``config_url``, ``sources`` and ``notes`` say
    where the values come from; ``config`` holds the stored fields as read.
    """

    name: str
    model: str
    method: str
    dim: int
    base: float
    factor: float
    original_max_position: int
    max_position: int
    options: Mapping[str, object] = field(default_factory=dict)
    revision: str | None = None
    config_url: str = ""
    sources: tuple[Mapping[str, str], ...] = ()
    notes: str = ""
    config: Mapping[str, object] = field(default_factory=dict)

    def arguments(self) -> dict[str, object]:
        """The keyword arguments of :func:`posenc.rope_scaling` (seq_len aside)."""
        return {
            "method": self.method,
            "dim": self.dim,
            "base": self.base,
            "factor": self.factor,
            "original_max_position": self.original_max_position,
            **self.options,
        }

    def compute(self, seq_len: int | None = None) -> tuple[np.ndarray, float]:
        """``(inv_freq, attention_factor)`` from :func:`posenc.rope_scaling`, (dim/2,).

        ``seq_len`` (positions) is passed on: needed by "dynamic", used by
        "longrope" (long factors past L), rejected by the others.
        """
        arguments = self.arguments()
        method, dim = arguments.pop("method"), arguments.pop("dim")
        if seq_len is not None:
            arguments["seq_len"] = seq_len
        return rope_scaling(method, dim, **arguments)


def load_presets(folder: Traversable | Path | str = MODEL_CONFIGS) -> dict[str, Preset]:
    """Every ``*.json`` file in ``folder`` (default :data:`MODEL_CONFIGS`) as a
    :class:`Preset`, keyed by file stem.

    Sorted by name. A folder without model files is a ValueError.
    """
    folder = Path(folder) if isinstance(folder, str) else folder
    files = sorted(
        (entry for entry in folder.iterdir() if entry.name.endswith(".json")),
        key=lambda entry: entry.name,
    )
    if not files:
        raise ValueError(f"no model files (*.json) in {folder}")
    presets = {}
    for entry in files:
        try:
            data = json.loads(entry.read_text(encoding="utf-8"))
        except json.JSONDecodeError as error:
            raise ValueError(f"{entry.name}: not valid JSON ({error})") from None
        name = entry.name.removesuffix(".json")
        presets[name] = preset_from_data(name, data)
    return presets


@cache
def _validator():
    import jsonschema

    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def check_model_file(name: str, data: object) -> None:
    """ValueError naming the file and the field if ``data`` does not satisfy the schema."""
    import jsonschema

    error = jsonschema.exceptions.best_match(_validator().iter_errors(data))
    if error is not None:
        raise ValueError(f"{name}: {error.json_path}: {error.message}")


def preset_from_data(name: str, data: object) -> Preset:
    """One model file's content (a dict) as a :class:`Preset`; see the module docstring."""
    where = f"{name}:"
    check_model_file(name, data)
    config = data["config"]
    rope = _rope_dict(config, where)
    method = _method(rope, config, where)
    dim = _rotary_dim(config, rope, where)
    base = _base(config, rope)
    max_position = config["max_position_embeddings"]
    original = _original_context(config, rope, method, max_position)
    factor = _factor(rope, method, max_position, original, where)
    options = _options(rope, method, where)
    return Preset(
        name=name,
        model=data["model"],
        method=method,
        dim=dim,
        base=base,
        factor=factor,
        original_max_position=original,
        max_position=max_position,
        options=MappingProxyType(options),
        revision=data.get("revision"),
        config_url=data["config_url"],
        sources=tuple(MappingProxyType(dict(entry)) for entry in data["sources"]),
        notes=data.get("notes", ""),
        config=MappingProxyType(dict(config)),
    )


# ----------------------------------------------------------------- the derivation
# The fields' types and ranges have been checked against the schema.


def _rope_dict(config: Mapping[str, object], where: str) -> Mapping[str, object]:
    """``rope_parameters`` (transformers 5) or ``rope_scaling``; {} when absent or null."""
    if "rope_parameters" in config and "rope_scaling" in config:
        raise ValueError(f"{where} config has both rope_parameters and rope_scaling")
    key = "rope_parameters" if "rope_parameters" in config else "rope_scaling"
    return config.get(key) or {}


def _method(
    rope: Mapping[str, object], config: Mapping[str, object], where: str
) -> str:
    """posenc's method for the config's rope type (see the module docstring)."""
    rope_type = rope.get("rope_type", rope.get("type", "default"))
    if rope_type == "su" or (
        rope_type == "yarn" and config.get("model_type") == "phi3"
    ):
        rope_type = "longrope"  # Phi3Config's renaming of its older names
    if rope_type not in METHOD_OF_ROPE_TYPE:
        raise ValueError(
            f"{where} config.rope_scaling.rope_type {rope_type!r} is not one of "
            f"{sorted(METHOD_OF_ROPE_TYPE)} (posenc has no method for it)"
        )
    return METHOD_OF_ROPE_TYPE[rope_type]


def _rotary_dim(
    config: Mapping[str, object], rope: Mapping[str, object], where: str
) -> int:
    """Rotated dimensions per head: qk_rope_head_dim, head_dim or hidden/heads, times the
    partial rotary factor; it must come out a whole, even number."""
    if config.get("qk_rope_head_dim") is not None:
        head_dim = config["qk_rope_head_dim"]
    elif config.get("head_dim") is not None:
        head_dim = config["head_dim"]
    else:
        for key in ("hidden_size", "num_attention_heads"):
            if key not in config:
                raise ValueError(
                    f"{where} config.{key} is missing (and no head_dim is given)"
                )
        hidden, heads = config["hidden_size"], config["num_attention_heads"]
        if hidden % heads:
            raise ValueError(
                f"{where} config.hidden_size {hidden} is not a multiple of "
                f"config.num_attention_heads {heads} (and no head_dim is given)"
            )
        head_dim = hidden // heads
    fraction = rope.get("partial_rotary_factor", config.get("partial_rotary_factor"))
    if fraction is not None:
        rotated = head_dim * fraction
        if rotated != int(rotated):
            raise ValueError(
                f"{where} config.partial_rotary_factor {fraction} must give a whole "
                f"number of dimensions of {head_dim}, got {rotated}"
            )
        head_dim = int(rotated)
    if head_dim % 2:
        raise ValueError(f"{where} the rotary dimension {head_dim} must be even")
    return head_dim


def _base(config: Mapping[str, object], rope: Mapping[str, object]) -> float:
    """rope_theta from rope_parameters or the top level; transformers' 10000 if absent."""
    for value in (rope.get("rope_theta"), config.get("rope_theta")):
        if value is not None:
            return float(value)
    return _DEFAULT_THETA


def _original_context(
    config: Mapping[str, object],
    rope: Mapping[str, object],
    method: str,
    max_position: int,
) -> int:
    """L: see the module docstring (Phi-3's top-level field takes priority)."""
    if method not in ("yarn", "llama3", "longrope"):
        return max_position
    for value in (
        config.get("original_max_position_embeddings"),
        rope.get("original_max_position_embeddings"),
    ):
        if value is not None:
            return value
    return max_position


def _factor(
    rope: Mapping[str, object],
    method: str,
    max_position: int,
    original: int,
    where: str,
) -> float:
    """s: rope_scaling.factor, or max_position / L for longrope and yarn without one."""
    value = rope.get("factor")
    if method == "none":
        if value not in (None, 1, 1.0):
            raise ValueError(
                f"{where} config.rope_scaling.factor {value!r} with no rope type"
            )
        return 1.0
    if value is None:
        if method not in ("longrope", "yarn"):
            raise ValueError(
                f"{where} config.rope_scaling.factor is required for {method}"
            )
        return max_position / original
    return float(value)


def _options(rope: Mapping[str, object], method: str, where: str) -> dict[str, object]:
    """The method's options present in the rope dict; any other key is an error."""
    taken = OPTIONS[method]
    options = {}
    for key, value in rope.items():
        if key in _RESERVED_ROPE_KEYS:
            continue
        if key not in taken:
            raise ValueError(
                f"{where} config.rope_scaling.{key} is not read by method {method!r} "
                f"(it takes {sorted(taken) or 'no options'})"
            )
        options[key] = value
    for key in _REQUIRED_OPTIONS.get(method, ()):
        if key not in options:
            raise ValueError(f"{where} config.rope_scaling.{key} is missing ({method})")
    return options
