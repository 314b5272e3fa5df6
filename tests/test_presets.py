"""posenc.book.presets: published models' RoPE, read from posenc/book/model_configs/."""

import copy
import json
import math
from pathlib import Path

import numpy as np
import pytest
from scripts_module import load_script

from posenc import rope_inv_freq
from posenc.book.presets import MODEL_CONFIGS, Preset, load_presets, preset_from_data

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "tests" / "golden" / "rope_scaling_transformers.npz"

# What each stored file gives, worked out by hand from its fields (see the module docstring
# of posenc.book.presets): method, dim, base, factor, original context L,
# max_position_embeddings, options (LongRoPE's lists checked apart).
EXPECTED = {
    "deepseek-v3": (  # qk_rope_head_dim 64; rope_scaling yarn, factor 40, L 4096
        "yarn",
        64,
        10000.0,
        40.0,
        4096,
        163840,
        {"beta_fast": 32, "beta_slow": 1, "mscale": 1.0, "mscale_all_dim": 1.0},
    ),
    "gpt-oss-20b": (  # head_dim 64, rope_theta 150000, yarn factor 32, truncate false
        "yarn",
        64,
        150000.0,
        32.0,
        4096,
        131072,
        {"beta_fast": 32.0, "beta_slow": 1.0, "truncate": False},
    ),
    "llama-2-7b": ("none", 128, 10000.0, 1.0, 4096, 4096, {}),  # 4096 / 32, no theta
    "llama-3.1-8b": (  # 4096 / 32, llama3 factor 8 from 8192
        "llama3",
        128,
        500000.0,
        8.0,
        8192,
        131072,
        {"low_freq_factor": 1.0, "high_freq_factor": 4.0},
    ),
    "llama-3.2-1b-instruct": (  # head_dim 64, llama3 factor 32 from 8192
        "llama3",
        64,
        500000.0,
        32.0,
        8192,
        131072,
        {"low_freq_factor": 1.0, "high_freq_factor": 4.0},
    ),
    "mistral-7b-v0.3": ("none", 128, 1e6, 1.0, 32768, 32768, {}),  # 4096 / 32
    "mistral-nemo-base-2407": ("none", 128, 1e6, 1.0, 128000, 128000, {}),  # head_dim
    "phi-3-mini-128k-instruct": ("longrope", 96, 10000.0, 32.0, 4096, 131072, None),
    "phi-3.5-mini-instruct": ("longrope", 96, 10000.0, 32.0, 4096, 131072, None),
    "phi-2": ("none", 32, 10000.0, 1.0, 2048, 2048, {}),  # int(2560 / 32 * 0.4)
    "phi-4-mini-instruct": ("longrope", 96, 10000.0, 32.0, 4096, 131072, None),
    "pythia-6.9b-deduped": ("none", 32, 10000.0, 1.0, 2048, 2048, {}),  # 128 * 0.25
    "qwen2.5-7b-instruct-yarn": ("yarn", 128, 1e6, 4.0, 32768, 32768, {}),  # 3584 / 28
    # head_dim 128, not 1024/16
    "qwen3-0.6b": (
        "none",
        128,
        1e6,
        1.0,
        40960,
        40960,
        {},
    ),
}
# LongRoPE lists: length, first and last long factor, first and last short factor
LISTS = {
    "phi-3-mini-128k-instruct": (
        48,
        1.0700000524520874,
        64.76000213623047,
        1.1,
        3.049999999999997,
    ),
    "phi-4-mini-instruct": (48, 1, 47.77, 1.0, 1.0),  # 3072 / 24 * 0.75 = 96: 48 pairs
    "phi-3.5-mini-instruct": (
        48,
        1.0800000429153442,
        64.83999633789062,
        1.0,
        2.8399994373321533,
    ),
}


@pytest.fixture(scope="module")
def presets():
    return load_presets()


def test_every_file_is_a_preset_and_the_issue_models_are_there(presets):
    assert set(presets) == {path.stem for path in MODEL_CONFIGS.glob("*.json")}
    assert set(presets) == set(EXPECTED)
    assert list(presets) == sorted(presets)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_derived_values_are_the_hand_computed_ones(presets, name):
    preset = presets[name]
    method, dim, base, factor, original, max_position, options = EXPECTED[name]
    assert (preset.method, preset.dim, preset.base, preset.factor) == (
        method,
        dim,
        base,
        factor,
    )
    assert (preset.original_max_position, preset.max_position) == (
        original,
        max_position,
    )
    assert isinstance(preset.dim, int) and isinstance(preset.base, float)
    if options is not None:
        assert dict(preset.options) == options
    else:
        length, long_first, long_last, short_first, short_last = LISTS[name]
        long, short = preset.options["long_factor"], preset.options["short_factor"]
        assert set(preset.options) == {"long_factor", "short_factor"}
        assert len(long) == len(short) == length == dim // 2
        assert (long[0], long[-1], short[0], short[-1]) == (
            long_first,
            long_last,
            short_first,
            short_last,
        )


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_every_file_names_its_model_and_sources(presets, name):
    preset = presets[name]
    assert preset.config_url == (
        f"https://huggingface.co/{preset.model}/blob/main/config.json"
    )
    assert preset.sources and all(source["what"] for source in preset.sources)
    for source in preset.sources:
        if "commit" in source:  # a file read in a repository, at a commit
            assert len(source["commit"]) == 40 and source["path"]
    assert preset.revision is None or len(preset.revision) == 40


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_rope_scaling_accepts_every_preset(presets, name):
    preset = presets[name]
    lengths = [None]
    if preset.method == "longrope":
        lengths += [preset.original_max_position, preset.max_position]
    for seq_len in lengths:
        inv_freq, attention_factor = preset.compute(seq_len)
        assert inv_freq.shape == (preset.dim // 2,) and inv_freq.dtype == np.float64
        assert np.all(np.isfinite(inv_freq)) and np.all(inv_freq > 0)
        assert math.isfinite(attention_factor) and attention_factor >= 1.0
        theta = rope_inv_freq(preset.dim, preset.base)
        assert np.all(inv_freq <= theta * (1 + 1e-15))  # no method speeds a pair up
    if preset.method == "none":
        np.testing.assert_array_equal(inv_freq, theta)


def golden_rows():
    data = np.load(GOLDEN, allow_pickle=False)
    meta = json.loads(str(data["meta"]))
    for k, case in enumerate(meta["cases"]):
        part = slice(data["offsets"][k], data["offsets"][k + 1])
        yield (
            case,
            data["inv_freq"][part].astype(np.float64),
            data["inv_freq_float64"][part],
            float(data["attention_factor"][k]),
        )


def golden_key(arguments: dict) -> str:
    """A golden case's identity: the arguments its method reads, numbers as floats."""
    arguments = dict(arguments)
    if arguments["method"] in ("none", "linear"):
        arguments.pop("original_max_position", None)  # neither method reads L
    if arguments["method"] == "none":
        arguments.pop("factor", None)
    return json.dumps(
        {
            k: float(v) if isinstance(v, int) and k != "dim" else v
            for k, v in arguments.items()
        },
        sort_keys=True,
    )


def test_presets_transformers_computes_agree_with_it(presets):
    """Every preset's config is a case of the config golden file (transformers' own config
    class and rotary module; compared in tests/test_config.py); those whose rope_scaling
    arguments are also in the scaling golden file agree with it too (Phi-3 short and long)."""
    config_golden = np.load(ROOT / "tests" / "golden" / "rope_config_transformers.npz")
    names = {case["name"] for case in json.loads(str(config_golden["meta"]))["cases"]}
    assert set(presets) <= names
    rows = {golden_key(case): row for case, *row in golden_rows()}
    checked = set()
    for preset in presets.values():
        lengths = [None]
        if preset.method == "longrope":
            lengths.append(preset.max_position)
        for seq_len in lengths:
            arguments = preset.arguments()
            if seq_len is not None:
                arguments["seq_len"] = seq_len
            if golden_key(arguments) not in rows:
                continue
            ref32, ref64, attention_factor = rows[golden_key(arguments)]
            inv_freq, ours = preset.compute(seq_len)
            np.testing.assert_allclose(inv_freq, ref64, rtol=1e-12, atol=0)
            np.testing.assert_allclose(inv_freq, ref32, rtol=2e-6, atol=0)
            assert ours == attention_factor, preset.name
            checked.add((preset.name, seq_len))
    # the presets that predate the config golden file are all in the scaling one
    added_with_the_config_golden = {
        "phi-2",
        "phi-4-mini-instruct",
        "pythia-6.9b-deduped",
    }
    assert {name for name, _ in checked} == set(presets) - added_with_the_config_golden
    assert len(checked) == len(presets) - 3 + 2


def test_phi3_attention_factor_comes_from_the_two_lengths(presets):
    """No factor in Phi-3's rope_scaling: s = 131072 / 4096 = 32, sqrt(1 + ln 32 / ln 4096)."""
    for name in ("phi-3-mini-128k-instruct", "phi-3.5-mini-instruct"):
        preset = presets[name]
        assert "factor" not in preset.config["rope_scaling"]
        _, attention_factor = preset.compute()
        assert attention_factor == pytest.approx(math.sqrt(1 + 5 / 12), rel=1e-15)


# ---------------------------------------------------------------- the reading rules


def model_file(config: dict, **top) -> dict:
    return {
        "model": "org/model",
        "config_url": "https://huggingface.co/org/model/blob/main/config.json",
        "sources": [{"what": "a test", "url": "https://example.org"}],
        "config": config,
        **top,
    }


LLAMA = {
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


def test_transformers_5_rope_parameters_and_old_names_read_the_same():
    old = preset_from_data("a", model_file(LLAMA))
    parameters = {**LLAMA["rope_scaling"], "rope_theta": 500000.0}
    new_config = {
        k: v for k, v in LLAMA.items() if k not in ("rope_scaling", "rope_theta")
    }
    new = preset_from_data(
        "b", model_file({**new_config, "rope_parameters": parameters})
    )
    assert old.arguments() == new.arguments()
    # "type" is the old name of "rope_type"; Phi-3 called longrope "su"
    renamed = copy.deepcopy(LLAMA)
    renamed["rope_scaling"]["type"] = renamed["rope_scaling"].pop("rope_type")
    assert preset_from_data("c", model_file(renamed)).method == "llama3"
    su = {
        "model_type": "phi3",
        "hidden_size": 32,
        "num_attention_heads": 4,
        "max_position_embeddings": 64,
        "original_max_position_embeddings": 16,
        "rope_scaling": {
            "type": "su",
            "short_factor": [1.0] * 4,
            "long_factor": [2.0] * 4,
        },
    }
    # transformers 5.24 renames "su" only after filling in the original context, so the
    # block must hold one (the top-level 16 still wins)
    with pytest.raises(
        ValueError, match="rope_scaling.original_max_position_embeddings"
    ):
        preset_from_data("d", model_file(su))
    su["rope_scaling"]["original_max_position_embeddings"] = 8
    preset = preset_from_data("d", model_file(su))
    assert (preset.method, preset.dim, preset.factor, preset.base) == (
        "longrope",
        8,
        4.0,
        10000.0,
    )


def test_phi3_top_level_original_context_wins_and_partial_rotary_factor_counts():
    config = {
        "hidden_size": 3072,
        "num_attention_heads": 24,
        "partial_rotary_factor": 0.75,
        "max_position_embeddings": 131072,
        "original_max_position_embeddings": 4096,
        "rope_scaling": {
            "type": "longrope",
            "original_max_position_embeddings": 2048,
            "short_factor": [1.0] * 48,
            "long_factor": [2.0] * 48,
        },
    }
    preset = preset_from_data("phi4ish", model_file(config))
    assert preset.dim == 96 and preset.original_max_position == 4096
    assert preset.factor == 32.0
    config["rope_scaling"]["factor"] = 8  # a given factor is used as is
    assert preset_from_data("x", model_file(config)).factor == 8.0


def test_no_rope_scaling_or_default_is_plain_rope():
    for rope in (None, {"rope_type": "default"}, {"type": "default"}):
        config = {**LLAMA, "rope_scaling": rope}
        preset = preset_from_data("plain", model_file(config))
        assert (preset.method, preset.factor, preset.original_max_position) == (
            "none",
            1.0,
            131072,
        )
        assert preset.options == {}


# The three rules below are transformers' (read in transformers 5.18's modeling_rope_utils.py
# and configuration_deepseek_v3.py, the nearest release to the pinned 5.24 available here):
# DeepseekV3Config sets head_dim = qk_rope_head_dim whatever config.json says;
# standardize_rope_params keeps a given rope_type and falls back to "type" only when it is
# absent; _compute_yarn_parameters takes factor = max_position_embeddings / L when the
# config has none.


def test_qk_rope_head_dim_wins_over_head_dim():
    config = {
        "model_type": "deepseek_v3",
        "hidden_size": 512,
        "num_attention_heads": 4,
        "head_dim": 192,
        "qk_rope_head_dim": 64,
        "max_position_embeddings": 4096,
        "rope_theta": 10000.0,
    }
    assert preset_from_data("mla", model_file(config)).dim == 64
    # without qk_rope_head_dim, head_dim wins over hidden_size / heads (128)
    assert (
        preset_from_data("gqa", model_file(without(config, "qk_rope_head_dim"))).dim
        == 192
    )


def test_rope_type_wins_over_its_old_name_type():
    both = copy.deepcopy(LLAMA)
    both["rope_scaling"]["type"] = "linear"  # the old key, contradicting rope_type
    assert preset_from_data("both", model_file(both)).method == "llama3"
    both["rope_scaling"] = {"rope_type": "linear", "type": "dynamic", "factor": 2.0}
    preset = preset_from_data("both", model_file(both))
    assert (preset.method, preset.factor) == ("linear", 2.0)


def test_yarn_without_factor_is_refused_by_name_as_transformers_5_24_refuses_it():
    # transformers 5.24's config validation requires "factor" for yarn: Qwen2Config(
    # rope_scaling={"rope_type": "yarn", "original_max_position_embeddings": 4096},
    # max_position_embeddings=32768) raises KeyError "Missing required keys ... {'factor'}".
    # (Its _compute_yarn_parameters would infer max_position / L, but is never reached.)
    config = {
        "hidden_size": 512,
        "num_attention_heads": 8,
        "max_position_embeddings": 32768,
        "rope_theta": 10000.0,
        "rope_scaling": {
            "rope_type": "yarn",
            "original_max_position_embeddings": 4096,
        },
    }
    with pytest.raises(ValueError, match="rope_scaling.factor is missing"):
        preset_from_data("yarn", model_file(config))


def without(mapping: dict, key: str) -> dict:
    return {k: v for k, v in mapping.items() if k != key}


BAD = [
    (without(model_file(LLAMA), "model"), ValueError, "'model' is a required"),
    (
        model_file(LLAMA, config_url="https://example.org/c.json"),
        ValueError,
        "config_url",
    ),
    (
        model_file(LLAMA, sources=[]),
        ValueError,
        r"\$\.sources: \[\] should be non-empty",
    ),
    (model_file(LLAMA, sources=[{"url": "u"}]), ValueError, r"sources\[0\]"),
    (model_file(LLAMA, sources=[{"what": 1, "url": "u"}]), ValueError, "what"),
    (model_file(LLAMA, license="mit"), ValueError, "license"),
    (model_file(LLAMA, revision=""), ValueError, "revision"),
    (model_file([1, 2]), ValueError, r"\$\.config: \[1, 2\] is not of type"),
    (model_file({**LLAMA, "vocab_size": 128256}), ValueError, "vocab_size"),
    (model_file({**LLAMA, "hidden_size": 4095}), ValueError, "hidden_size"),
    (model_file({**LLAMA, "hidden_size": True}), ValueError, "hidden_size"),
    (model_file(without(LLAMA, "hidden_size")), ValueError, "hidden_size"),
    (model_file({**LLAMA, "head_dim": 63}), ValueError, "even"),
    (model_file({**LLAMA, "rope_theta": -1.0}), ValueError, "rope_theta"),
    (model_file({**LLAMA, "rope_theta": "1e4"}), ValueError, "rope_theta"),
    (model_file(without(LLAMA, "max_position_embeddings")), ValueError, "max_position"),
    # transformers rotates int(head_dim * factor) features: int(128 * 1.5) = 192 > 128,
    # int(64 * 0.3) = 19 is odd
    (model_file({**LLAMA, "partial_rotary_factor": 1.5}), ValueError, "partial_rotary"),
    (
        model_file({**LLAMA, "head_dim": 64, "partial_rotary_factor": 0.3}),
        ValueError,
        "partial_rotary",
    ),
    (model_file({**LLAMA, "rope_scaling": "llama3"}), ValueError, "rope_scaling"),
    (
        model_file(
            {**LLAMA, "rope_scaling": {**LLAMA["rope_scaling"], "rope_type": "ntk"}}
        ),
        ValueError,
        "rope_type 'ntk'",
    ),
    (
        model_file(
            {**LLAMA, "rope_scaling": without(LLAMA["rope_scaling"], "low_freq_factor")}
        ),
        ValueError,
        "rope_scaling.low_freq_factor",
    ),
    (
        model_file({**LLAMA, "rope_scaling": without(LLAMA["rope_scaling"], "factor")}),
        ValueError,
        "rope_scaling.factor",
    ),
    (
        model_file(
            {**LLAMA, "rope_scaling": {**LLAMA["rope_scaling"], "finetuned": True}}
        ),
        ValueError,
        "rope_scaling.finetuned",
    ),
    (
        model_file({**LLAMA, "rope_scaling": {**LLAMA["rope_scaling"], "factor": 0.0}}),
        ValueError,
        "rope_scaling.factor",
    ),
    (
        model_file({**LLAMA, "rope_parameters": LLAMA["rope_scaling"]}),
        ValueError,
        "both rope_parameters and rope_scaling",
    ),
]


@pytest.mark.parametrize(("data", "error", "message"), BAD)
def test_malformed_data_names_the_field(data, error, message):
    with pytest.raises(error, match=message):
        preset_from_data("broken", data)


def test_longrope_lists_are_checked_by_rope_scaling_naming_them():
    config = {
        "hidden_size": 32,
        "num_attention_heads": 4,
        "max_position_embeddings": 64,
        "rope_scaling": {"type": "longrope", "short_factor": [1.0] * 4},
    }
    with pytest.raises(ValueError, match="rope_scaling.long_factor is missing"):
        preset_from_data("half", model_file(config))
    config["rope_scaling"]["long_factor"] = [1.0] * 3
    with pytest.raises(
        ValueError,
        match="rope_scaling.long_factor: long_factor must be a list of dim/2",
    ):
        preset_from_data("short list", model_file(config))


def test_load_presets_names_a_broken_file(tmp_path):
    with pytest.raises(ValueError, match="no model files"):
        load_presets(tmp_path)
    (tmp_path / "good.json").write_text(json.dumps(model_file(LLAMA)))
    assert isinstance(load_presets(tmp_path)["good"], Preset)
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(ValueError, match="bad.json: not valid JSON"):
        load_presets(tmp_path)


def test_the_golden_script_reads_the_phi3_files_the_same_way(presets):
    """scripts/make_scaling_golden.py derives the Phi-3 cases itself; they are the presets'."""
    script = load_script("make_scaling_golden")
    short_cases = [c for c in script.published_longrope() if "seq_len" not in c]
    assert short_cases == [
        presets[name].arguments() for name in script.PUBLISHED_LONGROPE
    ]


def test_every_stored_file_satisfies_the_schema_and_the_schema_refuses_others():
    import jsonschema

    from posenc.book.presets import SCHEMA

    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    files = sorted(MODEL_CONFIGS.glob("*.json"))
    assert len(files) >= 10
    for path in files:
        validator.validate(json.loads(path.read_text(encoding="utf-8")))
    # what transformers' config.json holds beyond RoPE is not a model file's business
    assert not validator.is_valid(model_file({**LLAMA, "vocab_size": 128256}))
    assert not validator.is_valid(model_file({**LLAMA, "head_dim": 0}))
    assert validator.is_valid(model_file({**LLAMA, "head_dim": None}))
