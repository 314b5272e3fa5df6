"""Published models' RoPE settings, read from book/data/model_configs/.

Each file in ``book/data/model_configs/`` holds one model: the RoPE-relevant fields
of its ``config.json`` as published (``config``), where they were read
(``sources``), the model's name, its hub revision if known and its config.json URL.
:func:`load_presets` reads them all; :func:`preset_from_data` checks one file and
reads its ``config`` with :func:`posenc.rope_from_config` (the one place that reads
config.json fields as ``transformers`` does), into a :class:`Preset`.

Malformed data (a missing or mistyped field, an unknown key, a rope type posenc
lacks) is a ValueError or TypeError whose message names the file and the field.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

import numpy as np

from posenc.config import RopeConfig, rope_from_config

#: Where the model files live (one JSON file per model; the file name is the key).
MODEL_CONFIGS = Path(__file__).resolve().parents[3] / "book" / "data" / "model_configs"

#: The config.json fields a model file may hold (everything RoPE reads).
CONFIG_FIELDS = (
    "model_type",
    "hidden_size",
    "num_attention_heads",
    "head_dim",
    "qk_rope_head_dim",
    "partial_rotary_factor",
    "rotary_pct",
    "rotary_emb_base",
    "rope_theta",
    "max_position_embeddings",
    "original_max_position_embeddings",
    "rope_scaling",
    "rope_parameters",
)

_FILE_KEYS = {"model", "revision", "config_url", "config", "sources", "notes"}


@dataclass(frozen=True)
class Preset:
    """One published model's RoPE: its config.json fields and what they compute.

    ``rope`` is :func:`posenc.rope_from_config` of ``config`` (the stored fields as
    read); ``method``, ``dim`` (rotated dimensions per head), ``base``, ``factor``
    (s), ``original_max_position`` (L, in positions), ``max_position``
    (max_position_embeddings) and ``options`` repeat its fields; ``model``,
    ``revision``, ``config_url``, ``sources`` and ``notes`` say where the values
    come from.
    """

    name: str
    model: str
    rope: RopeConfig
    revision: str | None = None
    config_url: str = ""
    sources: tuple[Mapping[str, str], ...] = ()
    notes: str = ""
    config: Mapping[str, object] = field(default_factory=dict)

    method = property(lambda self: self.rope.method)
    dim = property(lambda self: self.rope.rotary_dim)
    base = property(lambda self: self.rope.base)
    factor = property(lambda self: self.rope.factor)
    original_max_position = property(lambda self: self.rope.original_max_position)
    max_position = property(lambda self: self.rope.max_position)
    options = property(lambda self: self.rope.options)

    def arguments(self) -> dict[str, object]:
        """The keyword arguments of :func:`posenc.rope_scaling` (seq_len aside)."""
        return self.rope.arguments()

    def compute(self, seq_len: int | None = None) -> tuple[np.ndarray, float]:
        """``(inv_freq, attention_factor)``, (dim/2,): :meth:`RopeConfig.at_length`.

        ``seq_len`` (positions) matters to "dynamic" and "longrope" (long factors
        past L); None gives what the model's rotary module holds when built.
        """
        return self.rope.at_length(seq_len)


def load_presets(folder: Path | str = MODEL_CONFIGS) -> dict[str, Preset]:
    """Every ``*.json`` file in ``folder`` as a :class:`Preset`, keyed by file stem.

    Sorted by name. A folder without model files is a ValueError.
    """
    folder = Path(folder)
    paths = sorted(folder.glob("*.json"))
    if not paths:
        raise ValueError(f"no model files (*.json) in {folder}")
    presets = {}
    for path in paths:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as error:
            raise ValueError(f"{path.name}: not valid JSON ({error})") from None
        presets[path.stem] = preset_from_data(path.stem, data)
    return presets


def preset_from_data(name: str, data: object) -> Preset:
    """One model file's content (a dict) as a :class:`Preset`; see the module docstring."""
    where = f"{name}:"
    data = _mapping(data, f"{where} the file")
    _known_keys(data, _FILE_KEYS, f"{where} the file")
    for key in ("model", "config_url", "config", "sources"):
        if key not in data:
            raise ValueError(f"{where} '{key}' is missing")
    model = _text(data["model"], f"{where} 'model'")
    config_url = _text(data["config_url"], f"{where} 'config_url'")
    if not config_url.startswith("https://huggingface.co/"):
        raise ValueError(
            f"{where} 'config_url' must be a https://huggingface.co/ address, got {config_url!r}"
        )
    revision = data.get("revision")
    if revision is not None:
        revision = _text(revision, f"{where} 'revision'")
    sources = _sources(data["sources"], where)
    notes = _text(data.get("notes", ""), f"{where} 'notes'", empty=True)
    config = _mapping(data["config"], f"{where} 'config'")
    _known_keys(config, CONFIG_FIELDS, f"{where} 'config'")

    try:
        rope = rope_from_config(config)
    except (TypeError, ValueError) as error:
        raise type(error)(f"{where} config.{error}") from None
    return Preset(
        name=name,
        model=model,
        rope=rope,
        revision=revision,
        config_url=config_url,
        sources=sources,
        notes=notes,
        config=MappingProxyType(dict(config)),
    )


# ----------------------------------------------------------------- field checks


def _mapping(value: object, name: str) -> Mapping[str, object]:
    if not isinstance(value, Mapping):
        raise TypeError(f"{name} must be a JSON object, got {type(value).__name__}")
    return value


def _known_keys(value: Mapping[str, object], allowed: object, name: str) -> None:
    unknown = sorted(set(value) - set(allowed))
    if unknown:
        raise ValueError(
            f"{name} has unknown field(s) {unknown}; allowed: {sorted(allowed)}"
        )


def _text(value: object, name: str, *, empty: bool = False) -> str:
    if not isinstance(value, str) or (not empty and not value):
        raise TypeError(f"{name} must be a non-empty string, got {value!r}")
    return value


def _sources(value: object, where: str) -> tuple[Mapping[str, str], ...]:
    """A non-empty list of {what, repository and/or url, ...} with string values."""
    if not isinstance(value, list) or not value:
        raise ValueError(f"{where} 'sources' must be a non-empty list")
    out = []
    for k, entry in enumerate(value):
        entry = _mapping(entry, f"{where} sources[{k}]")
        if "what" not in entry or not ({"repository", "url"} & set(entry)):
            raise ValueError(
                f"{where} sources[{k}] needs 'what' and a 'repository' or 'url'"
            )
        for key, text in entry.items():
            _text(text, f"{where} sources[{k}].{key}")
        out.append(MappingProxyType(dict(entry)))
    return tuple(out)
