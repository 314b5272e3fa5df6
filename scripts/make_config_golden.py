"""Write tests/golden/rope_config_transformers.npz: config.json files read by transformers.

The tests compare ``posenc.rope_from_config`` with these values without needing transformers.
Run it in a throwaway environment, never in the book's .venv:

    python3 -m venv /tmp/golden-venv
    /tmp/golden-venv/bin/pip install torch==2.13.0 transformers==5.24.0 numpy
    PYTHONPATH=src /tmp/golden-venv/bin/python scripts/make_config_golden.py

For each configuration of :func:`cases` it builds the model's own config class from the dict
(``AutoConfig.for_model(model_type, **config)``, as ``from_pretrained`` does with a
config.json) and the model's own rotary module (the ``...RotaryEmbedding`` class of its
modeling file), and stores the module's ``inv_freq`` in float32 (as transformers returns it)
and the same code run in float64 (``torch_float_is_float64`` of make_scaling_golden.py), and
its ``attention_scaling``. A case with a ``seq_len`` calls the rope type's function of
``ROPE_INIT_FUNCTIONS`` with it (the module does so for dynamic NTK and LongRoPE when a
sequence outgrows the stored frequencies). For DeepSeek it also builds
``DeepseekV3Attention`` (with the case's RoPE fields and small layer sizes) and stores
``scaling * sqrt(qk_head_dim)``, the multiplier beyond 1/sqrt(d). Every stored case is one
transformers accepts: its validation logs nothing but Phi-3's advice to set ``factor``.
:func:`rejected_cases` are configurations transformers raises on or warns about (naming the
field); the file records which, and posenc must reject them naming the field.

The configurations are the model files of ``book/data/model_configs/`` (their ``config``, as
read from the published config.json) and a few variants of them that take the other paths
through the reading rules (:data:`VARIANTS`). A file without ``model_type`` would be read
with LlamaConfig (every file has one).
"""

from __future__ import annotations

import copy
import importlib
import importlib.util
import json
import math
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
OUTPUT = ROOT / "tests" / "golden" / "rope_config_transformers.npz"
MODEL_CONFIGS = ROOT / "book" / "data" / "model_configs"
DEEPSEEK_TYPES = ("deepseek_v2", "deepseek_v3")


def preset_configs() -> dict[str, dict]:
    """Every model file's ``config``, by file stem, sorted."""
    return {
        path.stem: json.loads(path.read_text(encoding="utf-8"))["config"]
        for path in sorted(MODEL_CONFIGS.glob("*.json"))
    }


def _with(config: dict, **changes) -> dict:
    """A deep copy of ``config`` with top-level ``changes`` (None deletes a key)."""
    out = copy.deepcopy(config)
    for key, value in changes.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = value
    return out


def variants(presets: dict[str, dict]) -> dict[str, dict]:
    """Configurations that take the other reading paths, built from the model files."""
    llama, deepseek = presets["llama-3.1-8b"], presets["deepseek-v3"]
    phi3, phi2, neox = (
        presets["phi-3-mini-128k-instruct"],
        presets["phi-2"],
        presets["pythia-6.9b-deduped"],
    )
    qwen = presets["qwen2.5-7b-instruct-yarn"]
    scaling = llama["rope_scaling"]
    return {
        # transformers 5's name, rope_theta inside the block
        "llama-3.1 as rope_parameters": _with(
            llama,
            rope_scaling=None,
            rope_theta=None,
            rope_parameters={**scaling, "rope_theta": llama["rope_theta"]},
        ),
        # the old key "type"
        "llama-3.1 with type": _with(
            llama,
            rope_scaling={
                **{k: v for k, v in scaling.items() if k != "rope_type"},
                "type": "llama3",
            },
        ),
        # a top-level original context wins over the block's (any model type)
        "llama-3.1 top-level original 4096": _with(
            llama, original_max_position_embeddings=4096
        ),
        # linear and dynamic on Llama 2's head
        "llama linear 4": _with(
            presets["llama-2-7b"], rope_scaling={"rope_type": "linear", "factor": 4.0}
        ),
        "llama dynamic 4": _with(
            presets["llama-2-7b"], rope_scaling={"rope_type": "dynamic", "factor": 4.0}
        ),
        # DeepSeek-V2's mscales (0.707 both), same geometry as V3
        "deepseek mscale 0.707": _with(
            deepseek,
            rope_scaling={
                **deepseek["rope_scaling"],
                "mscale": 0.707,
                "mscale_all_dim": 0.707,
            },
        ),
        # DeepSeek without mscale_all_dim: no extra softmax factor
        "deepseek without mscale_all_dim": _with(
            deepseek,
            rope_scaling={
                k: v
                for k, v in deepseek["rope_scaling"].items()
                if k != "mscale_all_dim"
            },
        ),
        # Phi-3: the top-level original context wins over the block's
        "phi-3 block original ignored": _with(
            phi3,
            rope_scaling={
                **phi3["rope_scaling"],
                "original_max_position_embeddings": 2048,
            },
        ),
        # Phi-3 without a top-level original context: Phi3Config's default 4096
        "phi-3 no original, factor 16": _with(
            phi3,
            original_max_position_embeddings=None,
            max_position_embeddings=65536,
        ),
        # Phi-3's old name "su" (with the block's original context, which it then needs)
        "phi-3 su": _with(
            phi3,
            rope_scaling={
                **phi3["rope_scaling"],
                "type": "su",
                "original_max_position_embeddings": 2048,
            },
        ),
        # Phi without partial_rotary_factor: PhiConfig's default 0.5
        "phi without partial_rotary_factor": _with(phi2, partial_rotary_factor=None),
        # GPT-NeoX without rotary_pct / rotary_emb_base: 0.25 and 10000
        "gpt-neox defaults": _with(neox, rotary_pct=None, rotary_emb_base=None),
        "gpt-neox rotary_pct 0.5, base 5e5": _with(
            neox, rotary_pct=0.5, rotary_emb_base=500000
        ),
        # partial rotary with YaRN (in the block) and a head_dim that is not hidden/heads
        "qwen yarn, partial 0.5 in the block": _with(
            qwen,
            head_dim=64,
            rope_scaling={**qwen["rope_scaling"], "partial_rotary_factor": 0.5},
        ),
        # gpt-oss without rope_theta: GptOssConfig's default 150000
        "gpt-oss without rope_theta": _with(presets["gpt-oss-20b"], rope_theta=None),
    }


#: (name of a case, seq_len): frequencies for a longer sequence.
LENGTHS = (
    ("phi-3-mini-128k-instruct", 131072),
    ("phi-4-mini-instruct", 4097),
    ("phi-4-mini-instruct", 4096),
    ("llama dynamic 4", 16384),
    ("llama dynamic 4", 5000),
)


def cases() -> list[dict]:
    """Every case: {"name", "config", "seq_len"} (seq_len None: the module as built)."""
    presets = preset_configs()
    configs = {**presets, **variants(presets)}
    out = [{"name": n, "config": c, "seq_len": None} for n, c in configs.items()]
    out += [{"name": n, "config": configs[n], "seq_len": L} for n, L in LENGTHS]
    return out


def rejected_cases() -> list[dict]:
    """Configurations transformers rejects: {"name", "config", "field"}; posenc must raise
    an error naming ``field``."""
    p = preset_configs()
    llama, qwen, phi3, ds = (
        p["llama-3.1-8b"],
        p["qwen2.5-7b-instruct-yarn"],
        p["phi-3-mini-128k-instruct"],
        p["deepseek-v3"],
    )
    rope = llama["rope_scaling"]
    rows = [
        (
            "llama3 without low_freq_factor",
            _with(
                llama,
                rope_scaling={k: v for k, v in rope.items() if k != "low_freq_factor"},
            ),
            "low_freq_factor",
        ),
        (
            "llama3 with an unknown key",
            _with(llama, rope_scaling={**rope, "finetuned": True}),
            "finetuned",
        ),
        (
            "llama3 factor below 1",
            _with(llama, rope_scaling={**rope, "factor": 0.5}),
            "factor",
        ),
        (
            "llama3 original not below max_position",
            _with(llama, max_position_embeddings=8192),
            "original_max_position_embeddings",
        ),
        (
            "llama3 without an original context",
            _with(
                llama,
                rope_scaling={
                    k: v
                    for k, v in rope.items()
                    if k != "original_max_position_embeddings"
                },
            ),
            "original_max_position_embeddings",
        ),
        (
            "yarn without factor",
            _with(
                qwen,
                rope_scaling={
                    k: v for k, v in qwen["rope_scaling"].items() if k != "factor"
                },
            ),
            "factor",
        ),
        (
            "yarn factor against the lengths",
            _with(ds, max_position_embeddings=65536),
            "factor",
        ),
        (
            "yarn beta_fast below beta_slow",
            _with(ds, rope_scaling={**ds["rope_scaling"], "beta_fast": 0.5}),
            "beta_fast",
        ),
        (
            "yarn integer attention_factor",
            _with(qwen, rope_scaling={**qwen["rope_scaling"], "attention_factor": 1}),
            "attention_factor",
        ),
        (
            "default with a factor",
            _with(llama, rope_scaling={"rope_type": "default", "factor": 2.0}),
            "factor",
        ),
        (
            "linear with an original context",
            _with(
                llama,
                rope_scaling={
                    "rope_type": "linear",
                    "factor": 2.0,
                    "original_max_position_embeddings": 8192,
                },
            ),
            "original_max_position_embeddings",
        ),
        ("phi3 with llama3", _with(phi3, rope_scaling=rope), "rope_type"),
        (
            "phi3 su without the block's original context",
            _with(phi3, rope_scaling={**phi3["rope_scaling"], "type": "su"}),
            "original_max_position_embeddings",
        ),
        (
            "longrope list too short",
            _with(
                phi3,
                rope_scaling={
                    **phi3["rope_scaling"],
                    "short_factor": phi3["rope_scaling"]["short_factor"][:-1],
                },
            ),
            "short_factor",
        ),
        (
            "longrope without long_factor",
            _with(
                phi3,
                rope_scaling={
                    k: v for k, v in phi3["rope_scaling"].items() if k != "long_factor"
                },
            ),
            "long_factor",
        ),
    ]
    return [{"name": n, "config": c, "field": f} for n, c, f in rows]


def _golden_helpers():
    spec = importlib.util.spec_from_file_location(
        "make_scaling_golden", ROOT / "scripts" / "make_scaling_golden.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _config(fields: dict):
    from transformers import AutoConfig

    fields = copy.deepcopy(fields)  # transformers edits the dicts it is given
    return AutoConfig.for_model(fields.pop("model_type", "llama"), **fields)


def _modeling(config):
    name = config.model_type
    return importlib.import_module(f"transformers.models.{name}.modeling_{name}")


def _rotary(config):
    module = _modeling(config)
    names = [n for n in dir(module) if n.endswith("RotaryEmbedding")]
    (name,) = [
        n
        for n in names
        if n.lower() == f"{config.model_type}rotaryembedding".replace("_", "")
    ] or names[:1]
    return getattr(module, name)(config=config)


def transformers_values(case: dict, *, float64: bool) -> tuple[np.ndarray, float]:
    """inv_freq and attention factor of the model's rotary module (or its rope function at
    ``seq_len``), float32 or the same code in float64; a logged warning other than Phi-3's
    advice is an AssertionError (the case is not accepted)."""
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

    helpers = _golden_helpers()
    with helpers.rope_warnings() as messages:
        config = _config(case["config"])
        context = helpers.torch_float_is_float64() if float64 else _nothing()
        with context:
            if case["seq_len"] is None:
                rotary = _rotary(config)
                inv_freq, attention = rotary.inv_freq, rotary.attention_scaling
            else:
                function = ROPE_INIT_FUNCTIONS[config.rope_parameters["rope_type"]]
                inv_freq, attention = function(config, None, seq_len=case["seq_len"])
    unexpected = [m for m in messages if helpers.LONGROPE_ADVICE not in m]
    assert not unexpected, (case["name"], unexpected)
    return inv_freq.detach().cpu().numpy(), float(attention)


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def deepseek_softmax_multiplier(fields: dict) -> float:
    """DeepseekV3Attention's (or V2's) scaling * sqrt(qk_head_dim), with small layers."""
    small = {
        **fields,
        "hidden_size": 64,
        "num_attention_heads": 2,
        "num_key_value_heads": 2,
        "q_lora_rank": 16,
        "kv_lora_rank": 16,
        "qk_nope_head_dim": 16,
        "v_head_dim": 16,
        "num_hidden_layers": 1,
        "vocab_size": 32,
    }
    config = _config(small)
    module = _modeling(config)
    (name,) = [
        n for n in dir(module) if n.endswith("V3Attention") or n.endswith("V2Attention")
    ]
    attention = getattr(module, name)(config, layer_idx=0)
    return float(attention.scaling * math.sqrt(config.qk_head_dim))


def transformers_rejection(row: dict) -> str:
    """How transformers rejects a configuration: the error it raises, or its warning naming
    the field. An AssertionError if it accepts it silently."""
    helpers = _golden_helpers()
    with helpers.rope_warnings() as messages:
        try:
            config = _config(row["config"])
            _rotary(config)
        except Exception as error:  # any error is a rejection; its text is kept
            return f"raises {type(error).__name__}: {error}"
    naming = [m for m in messages if row["field"] in m]
    assert naming, (row["name"], messages)
    return f"warns: {naming[0]}"


def main() -> None:
    import torch
    import transformers

    all_cases = cases()
    inv32, inv64, factors, softmax = [], [], [], []
    for case in all_cases:
        a, factor = transformers_values(case, float64=False)
        b, factor64 = transformers_values(case, float64=True)
        assert factor == factor64, case["name"]
        inv32.append(a)
        inv64.append(b)
        factors.append(factor)
        model_type = case["config"].get("model_type")
        softmax.append(
            deepseek_softmax_multiplier(case["config"])
            if model_type in DEEPSEEK_TYPES
            else 1.0  # no other model here changes its softmax scale (head_dim ** -0.5)
        )
    offsets = np.cumsum([0] + [len(f) for f in inv32]).astype(np.int64)
    rejected = [
        {**row, "transformers": transformers_rejection(row)} for row in rejected_cases()
    ]
    meta = {
        "transformers": transformers.__version__,
        "torch": torch.__version__,
        "python": sys.version.split()[0],
        "made_by": "scripts/make_config_golden.py",
        "cases": all_cases,
        "rejected": rejected,
    }
    OUTPUT.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(
        OUTPUT,
        meta=np.array(json.dumps(meta, sort_keys=True)),
        inv_freq=np.concatenate(inv32),
        inv_freq_float64=np.concatenate(inv64),
        offsets=offsets,
        attention_factor=np.array(factors, dtype=np.float64),
        softmax_scale=np.array(softmax, dtype=np.float64),
    )
    print(
        f"wrote {len(all_cases)} cases and {len(rejected)} rejected ones to {OUTPUT} "
        f"with transformers {transformers.__version__}, torch {torch.__version__}"
    )


if __name__ == "__main__":
    main()
