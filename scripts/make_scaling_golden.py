"""Write tests/golden/rope_scaling_transformers.npz (and rope_proportional_transformers.npz):
RoPE scaling computed by Hugging Face transformers.

The tests compare ``posenc.rope_scaling`` with these values without needing transformers.
Run it in a throwaway environment, never in the book's .venv:

    python3 -m venv /tmp/golden-venv
    /tmp/golden-venv/bin/pip install torch==2.13.0 transformers==5.24.0 numpy
    PYTHONPATH=src /tmp/golden-venv/bin/python scripts/make_scaling_golden.py

It calls transformers' own rope initialisation (``ROPE_INIT_FUNCTIONS`` in
``transformers.modeling_rope_utils``, and the default RoPE of ``LlamaRotaryEmbedding``) on a
grid of methods, factors, head dimensions, bases, original contexts and options, on the
configurations of published models (:data:`PUBLISHED`), and stores the float32 ``inv_freq`` it
returns (exactly), the same code run in float64 (see :func:`torch_float_is_float64`), and the
attention factor (a Python float). Every stored case is one transformers accepts: its config
validation logs no warning about it (checked here). :data:`REJECTED` lists configurations
transformers does not accept (its validation logs a warning naming the argument, or its code
raises); the file records what transformers did with each, and posenc must reject them too.
The file was made with transformers 5.24.0 (the newest release when it was regenerated); the
code also runs with transformers 4.4x (``rope_scaling`` + ``rope_theta``), except the
``longrope`` cases, which are written for 5.x (``rope_parameters``).
The case lists are built by :func:`cases` and :func:`rejected_cases`, which the tests import
as well (no transformers there).

LongRoPE (rope type ``longrope``) is computed twice per case, and the two must agree exactly:
with posenc's factor as the ``factor`` of the rope parameters (and max_position_embeddings set
to the original context, so that only the explicit factor can give the attention factor), and
the way Phi-3's config.json gives it, without ``factor``, from max_position_embeddings /
original_max_position_embeddings (transformers then logs advice to set ``factor``, which is
not a rejection: :data:`LONGROPE_ADVICE`). Its published cases (:func:`published_longrope`)
are read from the model configurations in ``src/posenc/book/model_configs/``.

p-RoPE (rope type ``proportional``, the Gemma 4 family) goes to a file of its own,
``rope_proportional_transformers.npz`` (:func:`proportional_cases`,
:func:`proportional_rejected_cases`), so that the first file, which chapter 5 summarises
case by case, is unchanged. Its validation flags a ``factor`` in the rope parameters as an
unrecognised key while its code divides by it: the cases with a factor other than 1 are
stored with that one warning (:data:`PROPORTIONAL_FACTOR_WARNING`), those with factor 1 leave
the key out and log nothing. One more case builds Gemma 4's own rotary module
(``Gemma4TextRotaryEmbedding`` of a default ``Gemma4TextConfig``) and stores the frequencies
of its full-attention layers, to show that the generic call is what the model computes.
"""

from __future__ import annotations

import contextlib
import inspect
import itertools
import json
import logging
import math
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
OUTPUT = ROOT / "tests" / "golden" / "rope_scaling_transformers.npz"
PROPORTIONAL_OUTPUT = ROOT / "tests" / "golden" / "rope_proportional_transformers.npz"
MODEL_CONFIGS = ROOT / "src" / "posenc" / "book" / "model_configs"

FACTORS = (2.0, 3.5, 8.0, 16.0, 40.0)
DIMS = (64, 128)
BASES = (10000.0, 500000.0, 1000000.0)
ORIGINALS = (2048, 8192, 32768)
DYNAMIC_SEQ_MULTIPLES = (0.5, 1.0, 1.37, 4.0, 16.0)
YARN_OPTION_SETS = (
    # both mscales given and non-zero: the ratio of the two factors
    {"mscale": 1.0, "mscale_all_dim": 1.0},
    {"mscale": 0.707, "mscale_all_dim": 1.0},
    {"mscale": 1.0, "mscale_all_dim": 0.707},
    {"mscale": -1.0, "mscale_all_dim": 1.0},
    # a zero or a missing one: transformers falls back to 0.1 ln s + 1
    {"mscale": 1.0, "mscale_all_dim": 0.0},
    {"mscale": 0.0, "mscale_all_dim": 1.0},
    {"mscale": 0.0, "mscale_all_dim": 0.0},
    {"mscale": 0.707},
    {"mscale_all_dim": 0.707},
    # a given attention_factor is used as is, and the mscales are ignored
    {"attention_factor": 1.25},
    {"attention_factor": 1.25, "mscale": 0.707, "mscale_all_dim": 1.0},
    {"attention_factor": 0.0},
    {"beta_fast": 16.0, "beta_slow": 2.0},
    {"beta_fast": 64.0, "beta_slow": 0.5, "truncate": False},
    # equal betas are allowed; zero betas mean the defaults 32 and 1
    {"beta_fast": 8.0, "beta_slow": 8.0},
    {"beta_fast": 0.0, "beta_slow": 0.0},
)
LLAMA3_OPTION_SETS = (
    {"low_freq_factor": 2.0, "high_freq_factor": 8.0},
    {"low_freq_factor": 0.5, "high_freq_factor": 16.0},
    # L / low_freq_factor < 0 is below every wavelength: transformers divides every pair
    {"low_freq_factor": -1.0, "high_freq_factor": 4.0},
)

LONGROPE_DIMS = (64, 96, 128)
LONGROPE_ORIGINALS = (2048, 4096, 32768)
LONGROPE_FACTORS = (1.0, 2.0, 3.5, 16.0, 64.0)  # 32 is in the length grid
LONGROPE_OPTION_SETS = (
    {"attention_factor": 1.25},
    {"attention_factor": 0.0},
    {"attention_factor": 2},  # an int, as transformers' validation allows for longrope
)
# Phi-3's config.json has no "factor": transformers takes max_position_embeddings /
# original_max_position_embeddings and logs this advice (a recommendation, not a rejection).
LONGROPE_ADVICE = (
    "to be used together with `max_position_embeddings` to determine a scaling"
)
# Published LongRoPE models: their stored config.json fields (src/posenc/book/model_configs/).
PUBLISHED_LONGROPE = ("phi-3-mini-128k-instruct", "phi-3.5-mini-instruct")


def longrope_lists(dim: int, factor: float) -> dict:
    """Made-up short and long factors of dim/2 pairs, shaped like Phi-3's (rising with i).

    short_factor rises from 1 to about 1.5, long_factor from 1 to about ``factor``; both wobble
    (LongRoPE's searched factors are not smooth). Rounded to 6 digits, so they survive JSON.
    """
    n = dim // 2
    short = [round(1.0 + 0.5 * (i / n) ** 2 + 0.05 * (i % 3), 6) for i in range(n)]
    long = [
        round(1.0 + (factor - 1.0) * (i / (n - 1)) ** 1.5 + 0.0625 * ((7 * i) % 5), 6)
        for i in range(n)
    ]
    return {"short_factor": short, "long_factor": long}


def published_longrope() -> list[dict]:
    """The LongRoPE models of :data:`PUBLISHED_LONGROPE` as posenc arguments, short and long.

    Derived here the way transformers reads a Phi-3 config.json: head dim hidden_size /
    num_attention_heads, base rope_theta, original context original_max_position_embeddings,
    factor max_position_embeddings / original_max_position_embeddings (rope_scaling has no
    factor), and the lists as stored. Two cases each: no seq_len (short factors) and seq_len =
    max_position_embeddings (long factors).
    """
    out = []
    for name in PUBLISHED_LONGROPE:
        config = json.loads((MODEL_CONFIGS / f"{name}.json").read_text())["config"]
        scaling = config["rope_scaling"]
        assert scaling["type"] in ("longrope", "su") and "factor" not in scaling, name
        original = config["original_max_position_embeddings"]
        case = {
            "method": "longrope",
            "dim": config["hidden_size"] // config["num_attention_heads"],
            "base": float(config["rope_theta"]),
            "factor": config["max_position_embeddings"] / original,
            "original_max_position": original,
            "short_factor": scaling["short_factor"],
            "long_factor": scaling["long_factor"],
        }
        out += [case, {**case, "seq_len": config["max_position_embeddings"]}]
    return out


# Configurations of published models, as posenc.rope_scaling arguments (types as in config.json).
PUBLISHED = (
    # DeepSeek-V3: https://huggingface.co/deepseek-ai/DeepSeek-V3/blob/main/config.json
    # "rope_scaling": {"beta_fast": 32, "beta_slow": 1, "factor": 40, "mscale": 1.0, "mscale_all_dim": 1.0,
    # "original_max_position_embeddings": 4096, "type": "yarn"}, "rope_theta": 10000,
    # "qk_rope_head_dim": 64 (the rotary part of each head; transformers' DeepseekV3Config sets
    # head_dim = qk_rope_head_dim).
    {
        "method": "yarn",
        "dim": 64,
        "base": 10000.0,
        "factor": 40,
        "original_max_position": 4096,
        "beta_fast": 32,
        "beta_slow": 1,
        "mscale": 1.0,
        "mscale_all_dim": 1.0,
    },
    # DeepSeek-V2: https://huggingface.co/deepseek-ai/DeepSeek-V2/blob/main/config.json
    # the same, with "mscale": 0.707, "mscale_all_dim": 0.707.
    {
        "method": "yarn",
        "dim": 64,
        "base": 10000.0,
        "factor": 40,
        "original_max_position": 4096,
        "beta_fast": 32,
        "beta_slow": 1,
        "mscale": 0.707,
        "mscale_all_dim": 0.707,
    },
    # gpt-oss: https://huggingface.co/openai/gpt-oss-20b/blob/main/config.json (gpt-oss-120b the same)
    # "rope_scaling": {"beta_fast": 32.0, "beta_slow": 1.0, "factor": 32.0,
    # "original_max_position_embeddings": 4096, "rope_type": "yarn", "truncate": false},
    # "rope_theta": 150000, "head_dim": 64 (also the defaults of transformers' GptOssConfig).
    {
        "method": "yarn",
        "dim": 64,
        "base": 150000.0,
        "factor": 32.0,
        "original_max_position": 4096,
        "beta_fast": 32.0,
        "beta_slow": 1.0,
        "truncate": False,
    },
    # Qwen2.5 with YaRN: https://huggingface.co/Qwen/Qwen2.5-7B-Instruct, model card, "Processing
    # Long Texts": add "rope_scaling": {"factor": 4.0, "original_max_position_embeddings": 32768,
    # "type": "yarn"} to config.json; there "rope_theta": 1000000.0, hidden_size 3584 over 28 heads = 128.
    {
        "method": "yarn",
        "dim": 128,
        "base": 1000000.0,
        "factor": 4.0,
        "original_max_position": 32768,
    },
    # Llama 3.1: https://huggingface.co/meta-llama/Llama-3.1-8B/blob/main/config.json
    # "rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
    # "original_max_position_embeddings": 8192, "rope_type": "llama3"}, "rope_theta": 500000.0,
    # hidden_size 4096 over 32 heads = 128.
    {
        "method": "llama3",
        "dim": 128,
        "base": 500000.0,
        "factor": 8.0,
        "original_max_position": 8192,
        "low_freq_factor": 1.0,
        "high_freq_factor": 4.0,
    },
    # Llama 3.2 1B Instruct: src/posenc/book/model_configs/llama-3.2-1b-instruct.json (read from
    # kevinstephano/thunder_model_blocks, llama/llama_config.py): "rope_scaling": {"factor":
    # 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0, "original_max_position_embeddings":
    # 8192, "rope_type": "llama3"}, "rope_theta": 500000.0, "head_dim": 64.
    {
        "method": "llama3",
        "dim": 64,
        "base": 500000.0,
        "factor": 32.0,
        "original_max_position": 8192,
        "low_freq_factor": 1.0,
        "high_freq_factor": 4.0,
    },
)

_YARN = {
    "method": "yarn",
    "dim": 64,
    "base": 10000.0,
    "factor": 8.0,
    "original_max_position": 4096,
}
_LONGROPE = {
    "method": "longrope",
    "dim": 64,
    "base": 10000.0,
    "factor": 32.0,
    "original_max_position": 4096,
    **longrope_lists(64, 32.0),
}
_LLAMA3 = {
    "method": "llama3",
    "dim": 128,
    "base": 500000.0,
    "factor": 8.0,
    "original_max_position": 8192,
}
# Configurations transformers does not accept, with the argument posenc's error must name.
REJECTED = (
    # validation: factor >= 1
    (
        {"method": "linear", "dim": 64, "base": 10000.0, "factor": 0.5},
        "factor",
    ),
    # validation: beta_fast < beta_slow
    (
        {**_YARN, "beta_fast": 1.0, "beta_slow": 2.0},
        "beta_fast",
    ),
    # math.log of a negative number: ValueError
    (
        {**_YARN, "beta_slow": -1.0},
        "beta_slow",
    ),
    # validation: attention_factor < 0
    (
        {**_YARN, "attention_factor": -1.0},
        "attention_factor",
    ),
    # 0.1 * -10 * ln(e) + 1 == 0 exactly: ZeroDivisionError
    (
        {**_YARN, "factor": math.e, "mscale": 1.0, "mscale_all_dim": -10.0},
        "mscale_all_dim",
    ),
    # validation: high_freq_factor <= low_freq_factor; the smoothing divides by their difference
    ({**_LLAMA3, "low_freq_factor": 2.0, "high_freq_factor": 2.0}, "high_freq_factor"),
    # L / 0: ZeroDivisionError
    (
        {**_LLAMA3, "low_freq_factor": 0.0},
        "low_freq_factor",
    ),
    # LongRoPE: validation warns about lists that are not dim/2 numbers, a factor below 1 and
    # a negative attention_factor; a missing list is a KeyError; ln(1) = 0 a ZeroDivisionError
    (
        {**_LONGROPE, "short_factor": _LONGROPE["short_factor"][:-1]},
        "short_factor",
    ),
    (
        {**_LONGROPE, "long_factor": [*_LONGROPE["long_factor"], 2.0]},
        "long_factor",
    ),
    ({**_LONGROPE, "short_factor": "1.0"}, "short_factor"),
    (
        {**_LONGROPE, "long_factor": ["1.0", *_LONGROPE["long_factor"][1:]]},
        "long_factor",
    ),
    ({**_LONGROPE, "factor": 0.5}, "factor"),
    ({**_LONGROPE, "attention_factor": -1.0}, "attention_factor"),
    (
        {k: v for k, v in _LONGROPE.items() if k != "long_factor"},
        "long_factor",
    ),
    ({**_LONGROPE, "original_max_position": 1}, "original_max_position"),
)


def cases() -> list[dict]:
    """Every case as a dict of posenc.rope_scaling arguments (method, dim, base, factor, ...)."""
    out: list[dict] = []
    for dim, base in itertools.product(DIMS, BASES):
        out.append({"method": "none", "dim": dim, "base": base})
    for factor, dim, base in itertools.product(FACTORS, DIMS, BASES):
        out.append({"method": "linear", "dim": dim, "base": base, "factor": factor})
    for factor, dim, base, original in itertools.product(
        FACTORS, DIMS, BASES, ORIGINALS
    ):
        for multiple in DYNAMIC_SEQ_MULTIPLES:
            if dim == 128 and multiple in (0.5, 1.37):
                continue  # keep the file small: these lengths are covered at dim 64
            out.append(
                {
                    "method": "dynamic",
                    "dim": dim,
                    "base": base,
                    "factor": factor,
                    "original_max_position": original,
                    "seq_len": int(round(multiple * original)),
                }
            )
        for truncate in (True, False):
            out.append(
                {
                    "method": "yarn",
                    "dim": dim,
                    "base": base,
                    "factor": factor,
                    "original_max_position": original,
                    "truncate": truncate,
                }
            )
        out.append(
            {
                "method": "llama3",
                "dim": dim,
                "base": base,
                "factor": factor,
                "original_max_position": original,
            }
        )
    for options, factor, dim, original in itertools.product(
        YARN_OPTION_SETS, (4.0, 40.0), DIMS, (4096, 32768)
    ):
        out.append(
            {
                "method": "yarn",
                "dim": dim,
                "base": 10000.0,
                "factor": factor,
                "original_max_position": original,
                **options,
            }
        )
    for options, factor, dim, original in itertools.product(
        LLAMA3_OPTION_SETS, (8.0, 32.0), DIMS, (8192,)
    ):
        out.append(
            {
                "method": "llama3",
                "dim": dim,
                "base": 500000.0,
                "factor": factor,
                "original_max_position": original,
                **options,
            }
        )
    out.extend(longrope_cases())
    out.extend(dict(case) for case in PUBLISHED)
    out.extend(published_longrope())
    return out


def longrope_cases() -> list[dict]:
    """LongRoPE on a grid: lengths below, at and above the original context, then factors
    (the attention factor's default), given attention factors, and integer lists."""
    out: list[dict] = []
    for dim, base, original in itertools.product(
        LONGROPE_DIMS, BASES, LONGROPE_ORIGINALS
    ):
        lengths = (None, original // 2, original, original + 1, 4 * original)
        for seq_len in lengths:
            case = {
                "method": "longrope",
                "dim": dim,
                "base": base,
                "factor": 32.0,
                "original_max_position": original,
                **longrope_lists(dim, 32.0),
            }
            out.append(case if seq_len is None else {**case, "seq_len": seq_len})
    for factor, dim, original in itertools.product(
        LONGROPE_FACTORS, LONGROPE_DIMS, (2048, 4096)
    ):
        out.append(
            {
                "method": "longrope",
                "dim": dim,
                "base": 10000.0,
                "factor": factor,
                "original_max_position": original,
                **longrope_lists(dim, factor),
            }
        )
    for options, seq_len in itertools.product(LONGROPE_OPTION_SETS, (None, 8192)):
        case = {**_LONGROPE, **options}
        out.append(case if seq_len is None else {**case, "seq_len": seq_len})
    # whole numbers, as a config may hold them; long factors all s: Position Interpolation
    for seq_len in (None, 8192):
        case = {
            **_LONGROPE,
            "factor": 8,
            "short_factor": [1] * 32,
            "long_factor": [8] * 32,
        }
        out.append(case if seq_len is None else {**case, "seq_len": seq_len})
    return out


# p-RoPE: shares of rotated pairs (0.58 * 100 = 57.99999999999999 in floating point: 28
# pairs, not 29; 1/3 is not a whole number of pairs for any of these heads), heads (512 is
# Gemma 4's full-attention head), factors and bases.
PROPORTIONAL_SHARES = (0.0, 0.125, 0.25, 0.3, 1 / 3, 0.5, 0.58, 0.75, 1.0)
PROPORTIONAL_DIMS = (64, 100, 128, 256, 512)
PROPORTIONAL_FACTORS = (1.0, 2.0, 8.0)
PROPORTIONAL_WHOLE = {  # integers, as a config may hold them
    "method": "proportional",
    "dim": 64,
    "base": 10000,
    "factor": 4,
    "partial_rotary_factor": 1,
}
PROPORTIONAL_FACTOR_WARNING = (
    "Unrecognized keys in `rope_parameters` for 'rope_type'='proportional': {'factor'}"
)
# Gemma 4 (transformers 5.24, models/gemma4/configuration_gemma4.py, Gemma4TextConfig):
# the full-attention layers' default rope parameters {"rope_type": "proportional",
# "partial_rotary_factor": 0.25, "rope_theta": 1_000_000.0} on global_head_dim = 512.
GEMMA4_FULL_ATTENTION = {
    "method": "proportional",
    "dim": 512,
    "base": 1000000.0,
    "factor": 1.0,
    "partial_rotary_factor": 0.25,
    "model": "gemma4_text",
}


def proportional_cases() -> list[dict]:
    """p-RoPE on a grid, integer arguments, and Gemma 4's full-attention layers."""
    out = [
        {
            "method": "proportional",
            "dim": dim,
            "base": base,
            "factor": factor,
            "partial_rotary_factor": share,
        }
        for dim, share, factor, base in itertools.product(
            PROPORTIONAL_DIMS, PROPORTIONAL_SHARES, PROPORTIONAL_FACTORS, (1e4, 1e6)
        )
    ]
    return [*out, dict(PROPORTIONAL_WHOLE), dict(GEMMA4_FULL_ATTENTION)]


_PROPORTIONAL = {
    "method": "proportional",
    "dim": 64,
    "base": 10000.0,
    "factor": 2.0,
    "partial_rotary_factor": 0.25,
}
#: p-RoPE configurations transformers does not accept, and the argument posenc names.
PROPORTIONAL_REJECTED = (
    # validation: partial_rotary_factor is None (it then computes with 1.0)
    (
        {k: v for k, v in _PROPORTIONAL.items() if k != "partial_rotary_factor"},
        "partial_rotary_factor",
    ),
    # int(p * dim // 2) pairs outside 0 .. dim/2: a table of the wrong length
    ({**_PROPORTIONAL, "partial_rotary_factor": 1.5}, "partial_rotary_factor"),
    ({**_PROPORTIONAL, "partial_rotary_factor": -0.25}, "partial_rotary_factor"),
    # int(nan): ValueError; a string: TypeError
    ({**_PROPORTIONAL, "partial_rotary_factor": math.nan}, "partial_rotary_factor"),
    ({**_PROPORTIONAL, "partial_rotary_factor": "0.25"}, "partial_rotary_factor"),
    # the factor key is flagged (as every factor is for this type); this one is below 1
    ({**_PROPORTIONAL, "factor": 0.5}, "factor"),
)


def proportional_rejected_cases() -> list[dict]:
    """Each p-RoPE configuration transformers rejects, as {"case", "argument"}."""
    return [
        {"case": dict(case), "argument": argument}
        for case, argument in PROPORTIONAL_REJECTED
    ]


def proportional_values(
    case: dict, *, float64: bool = False
) -> tuple[np.ndarray, float, list[str]]:
    """inv_freq, attention factor and the warnings transformers logs, for a p-RoPE case.

    A case with a factor other than 1 must log :data:`PROPORTIONAL_FACTOR_WARNING` and
    nothing else; one with factor 1 (the key left out) nothing at all.
    """
    with rope_warnings() as messages:
        inv_freq, attention_factor = _proportional_call(case, float64=float64)
    expected = [] if case["factor"] == 1 else [PROPORTIONAL_FACTOR_WARNING]
    assert messages == expected, (case, messages)
    dtype = np.float64 if float64 else np.float32
    assert inv_freq.shape == (case["dim"] // 2,) and inv_freq.dtype == dtype, case
    return inv_freq, attention_factor, messages


def proportional_rejection(case: dict, argument: str) -> str:
    """How transformers rejects a p-RoPE case: it raises, warns naming ``argument``, or
    returns a table of the wrong length. An AssertionError if it accepts the case."""
    with rope_warnings() as messages:
        try:
            inv_freq, _ = _proportional_call(case, float64=True)
        except Exception as error:  # any error is a rejection; its text is kept
            return f"raises {type(error).__name__}: {error}"
    naming = [message for message in messages if argument in message]
    if naming:
        return f"warns: {naming[0]}"
    assert inv_freq.shape != (case["dim"] // 2,), (case, argument, messages)
    return (
        f"returns {inv_freq.shape[0]} frequencies for dim/2 = {case['dim'] // 2} pairs"
    )


def _proportional_call(case: dict, *, float64: bool) -> tuple[np.ndarray, float]:
    """transformers' ``proportional`` function on a LlamaConfig with the case's rope
    parameters (factor left out when it is 1), or Gemma 4's own rotary module."""
    import torch
    from transformers import LlamaConfig
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

    with torch_float_is_float64() if float64 else contextlib.nullcontext():
        if case.get("model") == "gemma4_text":
            from transformers import Gemma4TextConfig
            from transformers.models.gemma4.modeling_gemma4 import (
                Gemma4TextRotaryEmbedding,
            )

            config = Gemma4TextConfig(num_hidden_layers=6)
            rope = config.rope_parameters["full_attention"]
            assert rope == {
                "rope_type": "proportional",
                "partial_rotary_factor": case["partial_rotary_factor"],
                "rope_theta": case["base"],
            }, rope
            assert config.per_layer_config["full_attention"].head_dim == case["dim"]
            module = Gemma4TextRotaryEmbedding(config)
            inv_freq = module.full_attention_inv_freq
            attention_factor = module.full_attention_attention_scaling
        else:
            parameters = {
                "rope_type": "proportional",
                "rope_theta": case["base"],
            }
            if "partial_rotary_factor" in case:
                parameters["partial_rotary_factor"] = case["partial_rotary_factor"]
            if case["factor"] != 1:
                parameters["factor"] = case["factor"]
            config = LlamaConfig(
                hidden_size=case["dim"] * 4,
                num_attention_heads=4,
                head_dim=case["dim"],
                max_position_embeddings=2048,
                num_hidden_layers=1,
                vocab_size=32,
                rope_parameters=parameters,
            )
            inv_freq, attention_factor = ROPE_INIT_FUNCTIONS["proportional"](
                config, None
            )
    assert isinstance(inv_freq, torch.Tensor)
    return inv_freq.detach().cpu().numpy(), float(attention_factor)


def rejected_cases() -> list[dict]:
    """Each configuration transformers rejects, as {"case": arguments, "argument": name}."""
    return [{"case": dict(case), "argument": argument} for case, argument in REJECTED]


TRANSFORMERS_TYPE = {
    "none": "default",
    "linear": "linear",
    "dynamic": "dynamic",
    "yarn": "yarn",
    "llama3": "llama3",
    "longrope": "longrope",
    "proportional": "proportional",
}
OPTION_DEFAULTS = {"llama3": {"low_freq_factor": 1.0, "high_freq_factor": 4.0}}


@contextlib.contextmanager
def torch_float_is_float64():
    """Make ``torch.float`` and ``torch.float32`` mean float64 while transformers' code runs.

    transformers' rope functions name their dtype as ``torch.float``/``torch.float32``,
    looked up on the torch module at call time. Rebinding the two names runs exactly the
    same code in float64: the result separates transformers' logic (floor/ceil, clamps,
    ramps) from its float32 rounding.
    """
    import torch

    saved = torch.float, torch.float32, torch.Tensor.float
    torch.float = torch.float32 = torch.float64
    # longrope calls Tensor.float() (not looked up on the module): make that float64 too
    torch.Tensor.float = lambda self, *args, **kwargs: self.to(torch.float64)
    try:
        yield
    finally:
        torch.float, torch.float32, torch.Tensor.float = saved


@contextlib.contextmanager
def rope_warnings():
    """Collect the messages transformers' rope code logs (its config validation warns there)."""
    messages: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            messages.append(record.getMessage())

    handler = Collect(logging.WARNING)
    logger = logging.getLogger("transformers.modeling_rope_utils")
    logger.addHandler(handler)
    try:
        yield messages
    finally:
        logger.removeHandler(handler)


def transformers_values(
    case: dict, *, float64: bool = False
) -> tuple[np.ndarray, float]:
    """inv_freq and attention factor from transformers for one case it accepts.

    float32 as transformers returns it; with ``float64`` the same code run in float64.
    A warning from its rope validation is an AssertionError: the case is not accepted.
    LongRoPE is computed both ways (see the module docstring), and they must agree exactly.
    """
    with rope_warnings() as messages:
        inv_freq, attention_factor = _values(case, float64=float64)
    assert not messages, (case, messages)
    if case["method"] == "longrope":
        with rope_warnings() as messages:
            phi3_way = _values(case, float64=float64, factor_from_lengths=True)
        assert not [m for m in messages if LONGROPE_ADVICE not in m], (case, messages)
        assert np.array_equal(phi3_way[0], inv_freq), case
        assert phi3_way[1] == attention_factor, case
    return inv_freq, attention_factor


def transformers_rejection(case: dict, argument: str) -> str:
    """How transformers rejects a case: the error it raises, or its warning naming ``argument``.

    An AssertionError if it accepts the case silently.
    """
    with rope_warnings() as messages:
        try:
            _values(case, float64=True)
        except Exception as error:  # any error is a rejection; its text is kept
            return f"raises {type(error).__name__}: {error}"
    naming = [message for message in messages if argument in message]
    assert naming, (case, argument, messages)
    return f"warns: {naming[0]}"


def _values(
    case: dict, *, float64: bool, factor_from_lengths: bool = False
) -> tuple[np.ndarray, float]:
    """One call of transformers' rope initialisation for ``case``, through a LlamaConfig.

    ``factor_from_lengths`` (longrope only): leave ``factor`` out of the rope parameters and
    set max_position_embeddings = factor * original context, as Phi-3's config.json does.
    """
    from transformers import LlamaConfig

    method, dim, base = case["method"], case["dim"], case["base"]
    rope_type = TRANSFORMERS_TYPE[method]
    options = {
        k: v
        for k, v in case.items()
        if k
        not in ("method", "dim", "base", "factor", "original_max_position", "seq_len")
    }
    options = {**OPTION_DEFAULTS.get(method, {}), **options}
    parameters: dict = {"rope_type": rope_type}
    if method != "none" and not factor_from_lengths:
        parameters["factor"] = case["factor"]
    original = case.get("original_max_position", 2048)
    if method in ("yarn", "llama3"):
        parameters["original_max_position_embeddings"] = original
        max_position = int(original * case["factor"])
    elif method == "longrope":
        parameters["original_max_position_embeddings"] = original
        max_position = (
            original  # the explicit factor alone must set the attention factor
        )
        if factor_from_lengths:
            max_position = int(original * case["factor"])
            assert max_position / original == case["factor"], case
    else:
        # dynamic NTK reads the original context from max_position_embeddings
        # (yarn and llama3 read original_max_position_embeddings); both are
        # posenc's original_max_position
        max_position = original
    parameters.update(options)

    num_heads = 4
    kwargs = dict(
        hidden_size=dim * num_heads,
        num_attention_heads=num_heads,
        head_dim=dim,
        max_position_embeddings=max_position,
        num_hidden_layers=1,
        vocab_size=32,
    )
    # transformers 5.x
    if "rope_parameters" in inspect.signature(LlamaConfig.__init__).parameters:
        config = LlamaConfig(
            **kwargs, rope_parameters={**parameters, "rope_theta": base}
        )
    else:  # transformers 4.x: rope_theta next to rope_scaling
        config = LlamaConfig(
            **kwargs,
            rope_theta=base,
            rope_scaling=None if method == "none" else parameters,
        )

    with torch_float_is_float64() if float64 else contextlib.nullcontext():
        inv_freq, attention_factor = _call(config, rope_type, case)
    expected = np.float64 if float64 else np.float32
    assert (
        inv_freq.shape == (dim // 2,)
        and inv_freq.detach().cpu().numpy().dtype == expected
    ), (case, inv_freq.dtype)
    return inv_freq.detach().cpu().numpy(), float(attention_factor)


def _call(config, rope_type: str, case: dict):
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding

    if rope_type == "default":
        if "default" in ROPE_INIT_FUNCTIONS:
            inv_freq, attention_factor = ROPE_INIT_FUNCTIONS["default"](config, None)
        else:
            inv_freq, attention_factor = (
                LlamaRotaryEmbedding.compute_default_rope_parameters(config)
            )
    elif rope_type == "dynamic":
        inv_freq, attention_factor = ROPE_INIT_FUNCTIONS[rope_type](
            config, None, seq_len=case["seq_len"]
        )
    elif rope_type == "longrope":
        inv_freq, attention_factor = ROPE_INIT_FUNCTIONS[rope_type](
            config, None, seq_len=case.get("seq_len")
        )
    else:
        inv_freq, attention_factor = ROPE_INIT_FUNCTIONS[rope_type](config, None)
    return inv_freq, attention_factor


def main() -> None:
    import torch
    import transformers

    all_cases = cases()
    inv_freqs, inv_freqs64, factors = [], [], []
    for case in all_cases:
        inv_freq, attention_factor = transformers_values(case)
        inv_freq64, attention_factor64 = transformers_values(case, float64=True)
        assert attention_factor64 == attention_factor, case
        inv_freqs.append(inv_freq)
        inv_freqs64.append(inv_freq64)
        factors.append(attention_factor)
    offsets = np.cumsum([0] + [len(f) for f in inv_freqs]).astype(np.int64)
    rejected = [
        {**row, "transformers": transformers_rejection(row["case"], row["argument"])}
        for row in rejected_cases()
    ]
    meta = {
        "transformers": transformers.__version__,
        "torch": torch.__version__,
        "python": sys.version.split()[0],
        "made_by": "scripts/make_scaling_golden.py",
        "cases": all_cases,
        "rejected": rejected,
    }
    OUTPUT.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(
        OUTPUT,
        meta=np.array(json.dumps(meta, sort_keys=True)),
        inv_freq=np.concatenate(inv_freqs),
        inv_freq_float64=np.concatenate(inv_freqs64),
        offsets=offsets,
        attention_factor=np.array(factors, dtype=np.float64),
    )
    print(
        f"wrote {len(all_cases)} cases ({offsets[-1]} frequencies) and {len(rejected)} rejected ones "
        f"to {OUTPUT} with transformers {transformers.__version__}, torch {torch.__version__}"
    )
    write_proportional()


def write_proportional() -> None:
    """The p-RoPE cases and rejections to :data:`PROPORTIONAL_OUTPUT`."""
    import torch
    import transformers

    all_cases = proportional_cases()
    inv_freqs, inv_freqs64, factors, warnings = [], [], [], []
    for case in all_cases:
        inv_freq, attention_factor, messages = proportional_values(case)
        inv_freq64, attention_factor64, _ = proportional_values(case, float64=True)
        assert attention_factor64 == attention_factor, case
        inv_freqs.append(inv_freq)
        inv_freqs64.append(inv_freq64)
        factors.append(attention_factor)
        warnings.append(messages)
    offsets = np.cumsum([0] + [len(f) for f in inv_freqs]).astype(np.int64)
    rejected = [
        {**row, "transformers": proportional_rejection(row["case"], row["argument"])}
        for row in proportional_rejected_cases()
    ]
    meta = {
        "transformers": transformers.__version__,
        "torch": torch.__version__,
        "python": sys.version.split()[0],
        "made_by": "scripts/make_scaling_golden.py (write_proportional)",
        "cases": all_cases,
        "warnings": warnings,
        "rejected": rejected,
    }
    np.savez_compressed(
        PROPORTIONAL_OUTPUT,
        meta=np.array(json.dumps(meta, sort_keys=True)),
        inv_freq=np.concatenate(inv_freqs),
        inv_freq_float64=np.concatenate(inv_freqs64),
        offsets=offsets,
        attention_factor=np.array(factors, dtype=np.float64),
    )
    print(
        f"wrote {len(all_cases)} p-RoPE cases ({offsets[-1]} frequencies) and "
        f"{len(rejected)} rejected ones to {PROPORTIONAL_OUTPUT}"
    )


if __name__ == "__main__":
    if sys.argv[1:] == ["--proportional"]:
        write_proportional()  # only the p-RoPE file
    else:
        main()
