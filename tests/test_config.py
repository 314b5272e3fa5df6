"""posenc.rope_from_config: config.json read as transformers 5.24 reads it.

Golden values from scripts/make_config_golden.py (transformers' own config classes and rotary
modules), every reading path by hand, and the errors naming the field.
"""

import copy
import json
import math
from pathlib import Path

import numpy as np
import pytest
from scripts_module import load_script

import posenc
from posenc import RopeConfig, rope_from_config, rope_inv_freq, rope_scaling

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "tests" / "golden" / "rope_config_transformers.npz"


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
                data["inv_freq"][part].astype(np.float64),
                data["inv_freq_float64"][part],
                float(data["attention_factor"][k]),
                float(data["softmax_scale"][k]),
            )
        )
    return meta, rows


# ---------------------------------------------------------------- against transformers


def test_golden_file_is_the_scripts_case_list(golden):
    meta, _ = golden
    assert meta["cases"] == load_script("make_config_golden").cases()
    assert meta["transformers"] == "5.24.0" and meta["torch"].startswith("2.13.0")
    names = {case["name"] for case in meta["cases"]}
    # every published model file, the partial rotary ones included
    assert {
        "pythia-6.9b-deduped",
        "phi-2",
        "phi-4-mini-instruct",
        "deepseek-v3",
    } <= names


def test_every_case_agrees_with_transformers_to_1e_12(golden):
    """inv_freq (float64 run) to 1e-12 relative (measured: 3.3e-16 at worst), the factor
    on cos and sin exactly, the softmax multiplier to 1e-12; float32 output to 2e-6."""
    _, rows = golden
    for case, ref32, ref64, attention, softmax in rows:
        rope = rope_from_config(case["config"])
        inv_freq, ours = rope.at_length(case["seq_len"])
        assert inv_freq.shape == ref64.shape, case["name"]
        np.testing.assert_allclose(inv_freq, ref64, rtol=1e-12, atol=0)
        np.testing.assert_allclose(inv_freq, ref32, rtol=2e-6, atol=0)
        assert ours == attention, case["name"]
        assert rope.softmax_scale == pytest.approx(softmax, rel=1e-12), case["name"]


def test_golden_covers_the_paths(golden):
    _, rows = golden
    by_name = {
        case["name"]: (case, *rest) for case, *rest in rows if not case["seq_len"]
    }
    # partial rotary: 32 of 128 (Pythia), 32 of 80 (Phi-2), 96 of 128 (Phi-4-mini)
    for name, pairs in (
        ("pythia-6.9b-deduped", 16),
        ("phi-2", 16),
        ("phi-4-mini-instruct", 48),
        ("phi without partial_rotary_factor", 20),  # PhiConfig's 0.5 of 80
        ("gpt-neox defaults", 16),  # GPTNeoXConfig's 0.25 of 128
    ):
        assert by_name[name][2].shape == (pairs,), name
    # DeepSeek: 1 on cos and sin, (0.1 ln 40 + 1)^2 on the softmax scale
    _, _, _, attention, softmax = by_name["deepseek-v3"]
    assert attention == 1.0
    assert softmax == pytest.approx((0.1 * math.log(40) + 1) ** 2, rel=1e-12)
    assert by_name["deepseek without mscale_all_dim"][4] == 1.0


def test_what_transformers_rejects_posenc_rejects_naming_the_field(golden):
    meta, _ = golden
    assert [row["name"] for row in meta["rejected"]] == [
        row["name"] for row in load_script("make_config_golden").rejected_cases()
    ]
    for row in meta["rejected"]:
        assert row["transformers"].startswith(("raises", "warns")), row["name"]
        with pytest.raises((ValueError, TypeError), match=row["field"]):
            rope_from_config(row["config"])


def test_live_against_installed_transformers():
    pytest.importorskip("transformers")
    script = load_script("make_config_golden")
    for case in script.cases():
        ref64, attention = script.transformers_values(case, float64=True)
        inv_freq, ours = rope_from_config(case["config"]).at_length(case["seq_len"])
        np.testing.assert_allclose(inv_freq, ref64, rtol=1e-12, atol=0)
        assert ours == pytest.approx(attention, rel=1e-12)
    for row in script.rejected_cases():
        assert script.transformers_rejection(row)


# ---------------------------------------------------------------- the reading rules, by hand

LLAMA = {
    "model_type": "llama",
    "hidden_size": 4096,
    "num_attention_heads": 32,
    "max_position_embeddings": 131072,
    "rope_theta": 500000.0,
    "rope_scaling": {
        "factor": 8.0,
        "low_freq_factor": 1.0,
        "high_freq_factor": 4.0,
        "original_max_position_embeddings": 8192,
        "rope_type": "llama3",
    },
}


def with_(config, **changes):
    out = copy.deepcopy(config)
    for key, value in changes.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = value
    return out


def test_llama_fields_go_to_rope_scaling():
    rope = rope_from_config(LLAMA)
    assert isinstance(rope, RopeConfig)
    assert (rope.method, rope.rotary_dim, rope.head_dim, rope.base) == (
        "llama3",
        128,
        128,
        500000.0,
    )
    assert (rope.factor, rope.original_max_position, rope.max_position) == (
        8.0,
        8192,
        131072,
    )
    assert dict(rope.options) == {"low_freq_factor": 1.0, "high_freq_factor": 4.0}
    arguments = rope.arguments()
    expected, _ = rope_scaling(
        arguments.pop("method"), arguments.pop("dim"), **arguments
    )
    np.testing.assert_array_equal(rope.inv_freq, expected)
    assert rope.inv_freq.dtype == np.float64
    assert (rope.attention_factor, rope.softmax_scale) == (1.0, 1.0)
    assert posenc.rope_from_config is rope_from_config


def test_rope_parameters_and_the_type_key_read_the_same():
    old = rope_from_config(LLAMA)
    new = rope_from_config(
        with_(
            LLAMA,
            rope_scaling=None,
            rope_theta=None,
            rope_parameters={**LLAMA["rope_scaling"], "rope_theta": 500000.0},
        )
    )
    typed = copy.deepcopy(LLAMA)
    typed["rope_scaling"]["type"] = typed["rope_scaling"].pop("rope_type")
    for other in (new, rope_from_config(typed)):
        assert other.arguments() == old.arguments()
        np.testing.assert_array_equal(other.inv_freq, old.inv_freq)


def test_absent_or_default_block_is_plain_rope_with_the_default_theta():
    plain = with_(LLAMA, rope_scaling=None, rope_theta=None)
    for block in (None, {"rope_type": "default"}, {"type": "default"}, {}):
        config = with_(plain, rope_scaling=block) if block is not None else plain
        rope = rope_from_config(config)
        assert (rope.method, rope.base, rope.factor) == ("none", 10000.0, 1.0)
        np.testing.assert_array_equal(rope.inv_freq, rope_inv_freq(128, 10000.0))
    gpt_oss = {"model_type": "gpt_oss", "head_dim": 64, "hidden_size": 2880}
    gpt_oss |= {"num_attention_heads": 64, "max_position_embeddings": 131072}
    assert rope_from_config(gpt_oss).base == 150000.0  # GptOssConfig's default_theta


def test_head_dim_order_qk_rope_head_dim_then_head_dim_then_hidden_over_heads():
    base = {
        "hidden_size": 1024,
        "num_attention_heads": 16,
        "max_position_embeddings": 4,
    }
    assert rope_from_config(base).head_dim == 64
    assert rope_from_config({**base, "head_dim": 128}).head_dim == 128
    both = {**base, "head_dim": 128, "qk_rope_head_dim": 32}
    assert rope_from_config(both).rotary_dim == 32


def test_partial_rotary_rules_per_model_type():
    head = {
        "hidden_size": 2560,
        "num_attention_heads": 32,
        "max_position_embeddings": 8,
    }
    # int(head_dim * factor) features, truncated as transformers does
    assert rope_from_config({**head, "partial_rotary_factor": 0.4}).rotary_dim == 32
    assert rope_from_config({**head, "partial_rotary_factor": 0.33}).rotary_dim == 26
    hundred = {**head, "hidden_size": 1000, "num_attention_heads": 10}
    # 100 * 0.286 = 28.6: truncated to 28, not rounded to 29
    assert (
        rope_from_config({**hundred, "partial_rotary_factor": 0.286}).rotary_dim == 28
    )
    assert rope_from_config({**head, "model_type": "phi"}).rotary_dim == 40  # 0.5
    assert rope_from_config({**head, "model_type": "phi3"}).rotary_dim == 80  # 1.0
    neox = {**head, "model_type": "gpt_neox"}
    assert rope_from_config(neox).rotary_dim == 20  # rotary_pct defaults to 0.25
    assert rope_from_config({**neox, "rotary_pct": 0.5}).rotary_dim == 40
    japanese = {**head, "model_type": "gpt_neox_japanese"}
    assert rope_from_config(japanese).rotary_dim == 80  # its default is 1.0
    # the block's partial_rotary_factor wins over the top level
    block = {**head, "partial_rotary_factor": 0.4}
    block["rope_scaling"] = {"rope_type": "default", "partial_rotary_factor": 0.8}
    assert rope_from_config(block).rotary_dim == 64
    # GPT-NeoX's base is rotary_emb_base
    assert rope_from_config({**neox, "rotary_emb_base": 500000}).base == 500000.0


def test_gptj_rotates_rotary_dim_features_with_base_10000():
    """GPTJConfig: rotary_dim (default 64) features, base 10000 (transformers'
    create_sinusoidal_positions), n_embd / n_head the head; no RoPE block is read."""
    gptj = {"model_type": "gptj", "n_embd": 4096, "n_head": 16, "rotary_dim": 64}
    gptj["n_positions"] = 2048
    rope = rope_from_config(gptj)
    assert (rope.method, rope.rotary_dim, rope.head_dim, rope.base) == (
        "none",
        64,
        256,
        10000.0,
    )
    expected = 1.0 / 10000.0 ** (np.arange(0, 64, 2) / 64)
    np.testing.assert_allclose(rope.inv_freq, expected, rtol=1e-15)
    assert rope_from_config(with_(gptj, rotary_dim=None)).rotary_dim == 64  # default
    with pytest.raises(ValueError, match="rope_theta"):
        rope_from_config({**gptj, "rope_theta": 5e5})
    with pytest.raises(ValueError, match="rotary_dim"):
        rope_from_config({**gptj, "rotary_dim": 63})


def test_original_context_rules():
    yarn = {
        "hidden_size": 1024,
        "num_attention_heads": 8,
        "max_position_embeddings": 32768,
        "rope_scaling": {"rope_type": "yarn", "factor": 4.0},
    }
    assert rope_from_config(yarn).original_max_position == 32768  # max_position
    yarn["rope_scaling"]["original_max_position_embeddings"] = 8192
    assert rope_from_config(yarn).original_max_position == 8192
    yarn["original_max_position_embeddings"] = 8192  # top level wins (the same here)
    assert rope_from_config(yarn).original_max_position == 8192
    # dynamic NTK reads max_position_embeddings as L; at init its scale is 1
    dynamic = with_(yarn, original_max_position_embeddings=None)
    dynamic["rope_scaling"] = {"rope_type": "dynamic", "factor": 4.0}
    rope = rope_from_config(dynamic)
    assert rope.original_max_position == 32768
    np.testing.assert_allclose(rope.inv_freq, rope_inv_freq(128), rtol=1e-15)
    longer, _ = rope.at_length(4 * 32768)
    assert np.all(longer[1:] < rope.inv_freq[1:])


def test_phi3_factor_from_the_lengths_and_its_old_names():
    phi3 = {
        "model_type": "phi3",
        "hidden_size": 3072,
        "num_attention_heads": 32,
        "max_position_embeddings": 131072,
        "original_max_position_embeddings": 4096,
        "rope_scaling": {
            "type": "longrope",
            "short_factor": [1.0] * 48,
            "long_factor": [2.0] * 48,
        },
    }
    rope = rope_from_config(phi3)
    assert (rope.factor, rope.original_max_position) == (32.0, 4096)
    assert rope.attention_factor == pytest.approx(math.sqrt(1 + 5 / 12), rel=1e-15)
    long, _ = rope.at_length(4097)
    np.testing.assert_allclose(long, rope.inv_freq / 2, rtol=1e-15)
    # Phi3Config's default original context, 4096, wins over the block's
    no_top = with_(phi3, original_max_position_embeddings=None)
    no_top["rope_scaling"]["original_max_position_embeddings"] = 2048
    assert rope_from_config(no_top).original_max_position == 4096
    for old_name in ("su", "yarn"):
        renamed = copy.deepcopy(no_top)
        renamed["rope_scaling"]["type"] = old_name
        assert rope_from_config(renamed).method == "longrope"


def test_deepseek_softmax_scale():
    deepseek = {
        "model_type": "deepseek_v3",
        "qk_rope_head_dim": 64,
        "max_position_embeddings": 163840,
        "rope_theta": 10000,
        "rope_scaling": {
            "beta_fast": 32,
            "beta_slow": 1,
            "factor": 40,
            "mscale": 1.0,
            "mscale_all_dim": 1.0,
            "original_max_position_embeddings": 4096,
            "type": "yarn",
        },
    }
    rope = rope_from_config(deepseek)
    assert rope.attention_factor == 1.0  # mscale / mscale_all_dim = 1
    assert rope.softmax_scale == pytest.approx((0.1 * math.log(40) + 1) ** 2, rel=1e-15)
    # the same fields under another model type: no extra softmax factor
    assert rope_from_config({**deepseek, "model_type": "llama"}).softmax_scale == 1.0


BAD = [
    ([], TypeError, "config must be a dict"),
    ({**LLAMA, "model_type": 3}, TypeError, "model_type"),
    ({**LLAMA, "rope_parameters": LLAMA["rope_scaling"]}, ValueError, "both"),
    ({**LLAMA, "rope_scaling": "llama3"}, TypeError, "rope_scaling"),
    (with_(LLAMA, max_position_embeddings=None), ValueError, "max_position_embeddings"),
    ({**LLAMA, "hidden_size": 4095}, ValueError, "hidden_size"),
    ({**LLAMA, "hidden_size": True}, TypeError, "hidden_size"),
    (with_(LLAMA, hidden_size=None), ValueError, "hidden_size"),
    ({**LLAMA, "head_dim": 63}, ValueError, "partial_rotary_factor"),
    ({**LLAMA, "head_dim": 0}, ValueError, "head_dim"),
    ({**LLAMA, "rope_theta": -1.0}, ValueError, "rope_theta"),
    ({**LLAMA, "rope_theta": "1e4"}, TypeError, "rope_theta"),
    ({**LLAMA, "partial_rotary_factor": 0.0}, ValueError, "partial_rotary_factor"),
    ({**LLAMA, "partial_rotary_factor": 1.5}, ValueError, "partial_rotary_factor"),
    ({**LLAMA, "rotary_pct": 0.25}, ValueError, "rotary_pct"),
    ({**LLAMA, "rotary_emb_base": 10000}, ValueError, "rotary_emb_base"),
    (
        {
            **LLAMA,
            "model_type": "gpt_neox",
            "rotary_pct": 0.25,
            "partial_rotary_factor": 1.0,
        },
        ValueError,
        "partial_rotary_factor",
    ),
    (
        {**LLAMA, "rope_scaling": {**LLAMA["rope_scaling"], "rope_type": "ntk"}},
        ValueError,
        "rope_type 'ntk'",
    ),
    (
        {**LLAMA, "rope_scaling": {**LLAMA["rope_scaling"], "beta_fast": 32}},
        ValueError,
        "rope_scaling.beta_fast",
    ),
    (
        {**LLAMA, "rope_scaling": {**LLAMA["rope_scaling"], "high_freq_factor": 1.0}},
        ValueError,
        "rope_scaling.high_freq_factor",
    ),
    (
        {**LLAMA, "rope_scaling": {**LLAMA["rope_scaling"], "factor": True}},
        TypeError,
        "rope_scaling.factor",
    ),
    (
        {
            **LLAMA,
            "model_type": "phi3",
            "rope_scaling": {"rope_type": "linear", "factor": 2},
        },
        ValueError,
        "rope_type 'linear'",
    ),
]


@pytest.mark.parametrize(("config", "error", "message"), BAD)
def test_bad_fields_are_named(config, error, message):
    with pytest.raises(error, match=message):
        rope_from_config(config)


def test_the_input_is_not_modified():
    config = copy.deepcopy(LLAMA)
    rope_from_config(config)
    assert config == LLAMA


def test_rope_type_wins_over_the_old_key_type_as_in_transformers():
    # transformers 5.24: rope_parameters.setdefault("rope_type", rope_parameters.get("type"))
    both = {**LLAMA, "rope_scaling": {**LLAMA["rope_scaling"], "type": "linear"}}
    assert posenc.rope_from_config(both).method == "llama3"
    np.testing.assert_array_equal(
        posenc.rope_from_config(both).inv_freq, posenc.rope_from_config(LLAMA).inv_freq
    )
