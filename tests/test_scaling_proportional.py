"""p-RoPE (rope type "proportional") against transformers' golden values, by formula, and read from a config."""

import json
import math
from pathlib import Path

import numpy as np
import pytest
from scripts_module import load_script

from posenc import rope_from_config, rope_scaling
from posenc.rotation import frequencies

GOLDEN = (
    Path(__file__).resolve().parent / "golden" / "rope_proportional_transformers.npz"
)


@pytest.fixture(scope="module")
def golden():
    data = np.load(GOLDEN, allow_pickle=False)
    meta = json.loads(str(data["meta"]))
    rows = []
    for k, case in enumerate(meta["cases"]):
        part = slice(data["offsets"][k], data["offsets"][k + 1])
        rows.append(
            (
                case,
                data["inv_freq"][part],
                data["inv_freq_float64"][part],
                float(data["attention_factor"][k]),
                meta["warnings"][k],
            )
        )
    return meta, rows


def call(case):
    arguments = {k: v for k, v in case.items() if k != "model"}
    return rope_scaling(arguments.pop("method"), arguments.pop("dim"), **arguments)


def test_golden_file_is_the_scripts_grid(golden):
    meta, rows = golden
    script = load_script("make_scaling_golden")
    assert meta["cases"] == script.proportional_cases()
    # sorted keys: NaN is a case, and NaN != NaN, so the lists are compared as JSON text
    assert json.dumps(
        [(r["case"], r["argument"]) for r in meta["rejected"]], sort_keys=True
    ) == json.dumps(
        [(r["case"], r["argument"]) for r in script.proportional_rejected_cases()],
        sort_keys=True,
    )
    assert meta["transformers"] == "5.24.0" and meta["torch"].startswith("2.13.0")
    assert {case["partial_rotary_factor"] for case, *_ in rows} >= {
        0.0,
        0.25,
        0.58,
        1.0,
    }
    # transformers flags the factor key as unrecognised, and divides by it all the same
    for case, *_, warnings in rows:
        expected = [] if case["factor"] == 1 else [script.PROPORTIONAL_FACTOR_WARNING]
        assert warnings == expected, case


def test_same_as_transformers_in_float64_and_float32(golden):
    _, rows = golden
    for case, ref32, ref64, attention_factor, _ in rows:
        inv_freq, ours_factor = call(case)
        assert ours_factor == attention_factor == 1.0
        rotated = ref64 > 0
        np.testing.assert_array_equal(inv_freq > 0, rotated, err_msg=str(case))
        np.testing.assert_allclose(
            inv_freq, ref64, rtol=1e-15, atol=0, err_msg=str(case)
        )
        # float32 as transformers returns it: the exponent and the power in float32
        np.testing.assert_allclose(
            inv_freq, ref32, rtol=2e-6, atol=0, err_msg=str(case)
        )


def test_gemma4_full_attention_layers(golden):
    """Gemma 4's own rotary module, full-attention layers: 64 of 256 pairs rotated."""
    _, rows = golden
    [(case, _, ref64, *_)] = [
        row for row in rows if row[0].get("model") == "gemma4_text"
    ]
    inv_freq, _ = call(case)
    assert np.count_nonzero(ref64) == np.count_nonzero(inv_freq) == 64
    np.testing.assert_allclose(inv_freq, ref64, rtol=1e-15)


def test_what_transformers_rejects_posenc_rejects_naming_the_argument(golden):
    meta, _ = golden
    assert len(meta["rejected"]) == 6
    for row in meta["rejected"]:
        with pytest.raises((ValueError, TypeError), match=row["argument"]):
            call(row["case"])


@pytest.mark.parametrize("dim", [2, 8, 64, 100, 128, 512])
@pytest.mark.parametrize("share", [0.0, 0.1, 0.25, 0.3, 1 / 3, 0.5, 0.58, 0.99, 1.0])
@pytest.mark.parametrize("factor", [1.0, 3.0])
def test_by_formula(dim, share, factor):
    """A loop: pair i < int(p * dim // 2) keeps base**(-2i/dim) / s, the rest are 0."""
    inv_freq, attention_factor = rope_scaling(
        "proportional", dim, base=5e5, factor=factor, partial_rotary_factor=share
    )
    rotated = int(share * dim // 2)
    assert attention_factor == 1.0 and inv_freq.shape == (dim // 2,)
    for i in range(dim // 2):
        expected = 5e5 ** (-2 * i / dim) / factor if i < rotated else 0.0
        assert inv_freq[i] == pytest.approx(expected, rel=1e-14, abs=0)
    if share == 1.0:
        np.testing.assert_array_equal(
            inv_freq, rope_scaling("linear", dim, base=5e5, factor=factor)[0]
        ) if factor > 1 else np.testing.assert_array_equal(
            inv_freq, frequencies(dim, 5e5)
        )


def test_rotated_pairs_follow_the_float_expression():
    """0.58 * 100 = 57.99999999999999: transformers' int(p * dim // 2) rotates 28 pairs."""
    assert 0.58 * 100 // 2 == 28.0 and math.floor(0.58 * 100 / 2) == 28
    inv_freq, _ = rope_scaling("proportional", 100, partial_rotary_factor=0.58)
    assert np.count_nonzero(inv_freq) == 28


@pytest.mark.parametrize(
    "kwargs, error, name",
    [
        ({}, ValueError, "partial_rotary_factor"),
        ({"partial_rotary_factor": None}, ValueError, "partial_rotary_factor"),
        ({"partial_rotary_factor": 1.5}, ValueError, "partial_rotary_factor"),
        ({"partial_rotary_factor": -0.1}, ValueError, "partial_rotary_factor"),
        ({"partial_rotary_factor": math.nan}, ValueError, "partial_rotary_factor"),
        ({"partial_rotary_factor": True}, TypeError, "partial_rotary_factor"),
        ({"partial_rotary_factor": "0.25"}, TypeError, "partial_rotary_factor"),
        ({"partial_rotary_factor": 0.25, "factor": 0.5}, ValueError, "factor"),
        ({"partial_rotary_factor": 0.25, "seq_len": 10}, ValueError, "seq_len"),
        ({"partial_rotary_factor": 0.25, "beta_fast": 32}, ValueError, "beta_fast"),
    ],
)
def test_bad_input_names_the_argument(kwargs, error, name):
    with pytest.raises(error, match=name):
        rope_scaling("proportional", 64, **kwargs)


# ---------------------------------------------------------------- read from a config.json


def llama_style(**rope):
    """A config transformers reads with LlamaConfig, as the golden script builds it."""
    return {
        "model_type": "llama",
        "hidden_size": 2048,
        "num_attention_heads": 4,
        "head_dim": 512,
        "max_position_embeddings": 2048,
        "rope_parameters": {"rope_type": "proportional", **rope},
    }


def test_rope_from_config_reads_a_proportional_block_as_transformers(golden):
    _, rows = golden
    cases = [
        row
        for row in rows
        if row[0]["dim"] == 512 and row[0]["factor"] == 1 and "model" not in row[0]
    ]
    assert len(cases) == 2 * 9
    for case, _, ref64, *_ in cases:
        config = llama_style(
            rope_theta=case["base"], partial_rotary_factor=case["partial_rotary_factor"]
        )
        rope = rope_from_config(config)
        assert rope.method == "proportional" and rope.rotary_dim == rope.head_dim == 512
        assert rope.factor == 1.0 and rope.attention_factor == 1.0
        assert rope.options == {"partial_rotary_factor": case["partial_rotary_factor"]}
        np.testing.assert_allclose(rope.inv_freq, ref64, rtol=1e-15, atol=0)
    # the share may stand at the top level, as transformers moves it into the block
    top = llama_style(rope_theta=1e6)
    top["partial_rotary_factor"] = 0.25
    np.testing.assert_array_equal(
        rope_from_config(top).inv_freq,
        rope_from_config(
            llama_style(rope_theta=1e6, partial_rotary_factor=0.25)
        ).inv_freq,
    )


@pytest.mark.parametrize(
    "change, field",
    [
        (
            {"rope_parameters": {"rope_type": "proportional", "rope_theta": 1e6}},
            "rope_parameters.partial_rotary_factor",
        ),
        (
            {
                "rope_parameters": {
                    "rope_type": "proportional",
                    "partial_rotary_factor": 0.25,
                    "factor": 2.0,
                }
            },
            "rope_parameters.factor",
        ),
        (
            {
                "rope_parameters": {
                    "rope_type": "proportional",
                    "partial_rotary_factor": 2.0,
                }
            },
            "partial_rotary_factor",
        ),
        ({"model_type": "phi"}, "rope_type"),
        ({"head_dim": 63}, "head_dim"),
        # Gemma 4's own layout: one block per layer type
        (
            {
                "rope_parameters": {
                    "sliding_attention": {
                        "rope_type": "default",
                        "rope_theta": 10000.0,
                    },
                    "full_attention": {
                        "rope_type": "proportional",
                        "partial_rotary_factor": 0.25,
                        "rope_theta": 1e6,
                    },
                }
            },
            "rope_parameters.sliding_attention",
        ),
        (
            {
                "layer_types": ["full_attention"],
                "rope_parameters": {"full_attention": None},
            },
            "rope_parameters.full_attention",
        ),
    ],
)
def test_rope_from_config_rejects_naming_the_field(change, field):
    config = {**llama_style(partial_rotary_factor=0.25, rope_theta=1e6), **change}
    with pytest.raises((ValueError, TypeError), match=field.replace(".", r"\.")):
        rope_from_config(config)
