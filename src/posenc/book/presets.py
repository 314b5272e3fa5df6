"""Published models' RoPE settings, read from the package data posenc/book/model_configs/.

Each file in ``posenc/book/model_configs/`` (package data; the repository's
``book/data/model_configs`` links to it) holds one model: the RoPE-relevant fields
of its ``config.json`` as published (``config``), where they were read
(``sources``), the model's name, its hub revision if known and its config.json URL.
:func:`load_presets` reads them all; :func:`preset_from_data` checks one file and
reads its ``config`` with :func:`posenc.rope_from_config` (the one place that reads
config.json fields as ``transformers`` does), into a :class:`Preset`.

Malformed data is a ValueError (or TypeError) whose message names the file and the field:
a missing or mistyped field or an unknown key (the JSON Schema ``model_config.schema.json``
beside the files), a rope type posenc lacks or a field transformers rejects
(:func:`posenc.rope_from_config`).
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

from posenc.config import RopeConfig, rope_from_config

#: Where the model files live (one JSON file per model; the file name is the key):
#: package data of ``posenc.book``, found through importlib.resources.
MODEL_CONFIGS = resources.files("posenc.book") / "model_configs"
#: The JSON Schema every model file must satisfy (the form of the file and the types of its
#: fields; what the fields mean is read by :func:`posenc.rope_from_config`).
SCHEMA = resources.files("posenc.book") / "model_config.schema.json"


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
    revision = data.get("revision")
    sources = tuple(MappingProxyType(dict(entry)) for entry in data["sources"])
    notes = data.get("notes", "")
    model, config_url = data["model"], data["config_url"]

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
