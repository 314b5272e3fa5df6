"""posenc.scaling against transformers' golden values, independent loops with math, and properties."""

import json
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scripts_module import load_script

from posenc import apply_rope, rope_inv_freq, rope_scaling, wavelengths
from posenc.scaling import (
    METHODS,
    OPTIONS,
    blend_frequencies,
    correction_dim,
    correction_range,
    dynamic_scale,
    llama3_ramp,
    longrope_attention_factor,
    longrope_factors,
    ntk_aware_base,
    ramp_pair_index,
    ramp_rotations,
    rotations_per_pair,
    unseen_angle_pairs,
    yarn_attention_factor,
    yarn_mscale,
)

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "tests" / "golden" / "rope_scaling_transformers.npz"


def longrope_options(dim: int) -> dict:
    """Some short and long factors for dim/2 pairs (rising, as Phi-3's)."""
    return {
        "short_factor": [1.0 + 0.02 * i for i in range(dim // 2)],
        "long_factor": [1.0 + 1.5 * i for i in range(dim // 2)],
    }


def options_for(method: str, dim: int = 64) -> dict:
    """What rope_scaling needs beyond factor for ``method``: seq_len, LongRoPE's lists,
    p-RoPE's share."""
    if method == "dynamic":
        return {"seq_len": 9000}
    if method == "proportional":
        return {"partial_rotary_factor": 0.25}
    return longrope_options(dim) if method == "longrope" else {}


def call(case: dict) -> tuple[np.ndarray, float]:
    arguments = dict(case)
    return rope_scaling(arguments.pop("method"), arguments.pop("dim"), **arguments)


# ---------------------------------------------------------------- golden values from transformers


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
            )
        )
    return meta, rows


def test_golden_file_is_the_scripts_grid(golden):
    meta, rows = golden
    assert meta["cases"] == load_script("make_scaling_golden").cases()
    assert meta["transformers"] and meta["torch"].startswith("2.13.0")
    covered = {case["method"] for case, *_ in rows}
    assert covered == {"none", "linear", "dynamic", "yarn", "llama3", "longrope"}
    # the grid of the older methods (LongRoPE's: see the LongRoPE section)
    older = [row for row in rows if row[0]["method"] != "longrope"]
    factors = {case.get("factor") for case, *_ in older}
    assert min(f for f in factors if f) == 2.0 and max(f for f in factors if f) == 40.0
    assert {case["dim"] for case, *_ in older} == {64, 128}
    assert {case["base"] for case, *_ in rows} >= {1e4, 1e6}
    originals = {case.get("original_max_position") for case, *_ in rows} - {None}
    assert min(originals) == 2048 and max(originals) == 32768
    assert {case.get("truncate") for case, *_ in rows if case["method"] == "yarn"} >= {
        True,
        False,
    }
    assert any("mscale" in case for case, *_ in rows) and any(
        "attention_factor" in case for case, *_ in rows
    )
    # zero, one and both of mscale / mscale_all_dim, and the published configurations
    yarn_cases = [case for case, *_ in rows if case["method"] == "yarn"]
    given = {
        (case.get("mscale"), case.get("mscale_all_dim"))
        for case in yarn_cases
        if "attention_factor" not in case
    }
    assert {
        (1.0, 0.0),
        (0.0, 1.0),
        (0.0, 0.0),
        (0.707, None),
        (None, 0.707),
        (0.707, 1.0),
        (1.0, 1.0),
    } <= given
    script = load_script("make_scaling_golden")
    assert (
        all(dict(case) in meta["cases"] for case in script.PUBLISHED)
        and len(script.PUBLISHED) >= 4
    )
    phi3 = script.published_longrope()
    assert len(phi3) == 2 * len(script.PUBLISHED_LONGROPE) >= 4
    assert all(case in meta["cases"] for case in phi3)
    assert [(row["case"], row["argument"]) for row in meta["rejected"]] == [
        (row["case"], row["argument"]) for row in script.rejected_cases()
    ]
    assert not any(row["case"] in meta["cases"] for row in meta["rejected"])


def test_published_configurations_give_transformers_values(golden):
    """DeepSeek-V3/V2, gpt-oss, Qwen2.5 with YaRN and Llama 3.1, to 1e-12 of transformers in float64."""
    _, rows = golden
    published = load_script("make_scaling_golden").PUBLISHED
    found = [
        (case, ref64, factor) for case, _, ref64, factor in rows if case in published
    ]
    assert len(found) == len(published)
    for case, ref64, attention_factor in found:
        inv_freq, ours = call(case)
        np.testing.assert_allclose(inv_freq, ref64, rtol=1e-12, atol=0)
        assert ours == attention_factor, case
    factors = {
        case.get("mscale"): factor
        for case, _, factor in found
        if case["method"] == "yarn" and case["factor"] == 40
    }
    assert factors == {1.0: 1.0, 0.707: 1.0}  # DeepSeek's equal mscales cancel


def test_what_transformers_rejects_posenc_rejects_naming_the_argument(golden):
    meta, _ = golden
    assert len(meta["rejected"]) >= 5
    for row in meta["rejected"]:
        assert row["transformers"].startswith(("raises", "warns")), row
        with pytest.raises((ValueError, TypeError), match=row["argument"]):
            call(row["case"])


def test_attention_factor_equals_transformers_exactly(golden):
    _, rows = golden
    for case, _, _, attention_factor in rows:
        assert call(case)[1] == attention_factor, case


def test_same_formula_as_transformers_run_in_float64(golden):
    """transformers' own code in float64 (see the golden script) and ours agree to rounding."""
    _, rows = golden
    worst = max(
        np.max(np.abs(call(case)[0] - ref64) / ref64) for case, _, ref64, _ in rows
    )
    assert worst < 1e-12


def test_agrees_with_transformers_float32_output_to_2e_6(golden):
    """2e-6 relative wherever transformers' float32 result is itself that close to exact.

    transformers computes YaRN's ramp in float32; with truncate=False the bounds are not
    whole numbers and rounding them is amplified by up to s near the top of the ramp. The
    frequencies where we differ from its float32 output by more than 2e-6 must be exactly
    those where its float32 output differs from its own float64 evaluation by more than that.
    """
    _, rows = golden
    ours_off, reference_off, total = set(), set(), 0
    for k, (case, ref32, ref64, _) in enumerate(rows):
        ref32 = ref32.astype(np.float64)
        inv_freq = call(case)[0]
        total += inv_freq.size
        ours_off |= {
            (k, int(i)) for i in np.flatnonzero(np.abs(inv_freq - ref32) > 2e-6 * ref32)
        }
        reference_off |= {
            (k, int(i))
            for i in np.flatnonzero(np.abs(ref32 - ref64) > (2e-6 - 1e-12) * ref32)
        }
    assert ours_off == reference_off
    assert len(ours_off) <= 1e-4 * total
    assert all(
        rows[k][0]["method"] == "yarn" and rows[k][0].get("truncate") is False
        for k, _ in ours_off
    )


def test_live_against_installed_transformers():
    pytest.importorskip("transformers")
    script = load_script("make_scaling_golden")
    every_option_set = [
        case
        for case in script.cases()
        if case["method"] in ("yarn", "llama3")
        and case["dim"] == 64
        and case.get("original_max_position") in (4096, 8192)
        and set(case)
        - {"method", "dim", "base", "factor", "original_max_position", "truncate"}
    ]
    for case in (
        script.cases()[::7]
        + every_option_set
        + [dict(case) for case in script.PUBLISHED]
    ):
        ref32, attention_factor = script.transformers_values(case)
        ref64, _ = script.transformers_values(case, float64=True)
        inv_freq, ours_factor = call(case)
        assert ours_factor == attention_factor, case
        np.testing.assert_allclose(inv_freq, ref64, rtol=1e-12)
        ref32 = ref32.astype(np.float64)
        off = np.abs(inv_freq - ref32) > 2e-6 * ref32
        assert np.array_equal(off, np.abs(ref32 - ref64) > (2e-6 - 1e-12) * ref32), case
    for row in script.rejected_cases():
        assert script.transformers_rejection(row["case"], row["argument"])
        with pytest.raises((ValueError, TypeError), match=row["argument"]):
            call(row["case"])


# ---------------------------------------------------------------- independent loops with math


def yarn_by_loop(
    dim, base, factor, original, beta_fast=32.0, beta_slow=1.0, truncate=True
):
    """The reference YaRN frequencies pair by pair, with math on Python floats."""

    def pair_with_turns(turns):  # L / (2 pi base^(2i/dim)) = turns, solved for i
        return dim * math.log(original / (2 * math.pi * turns)) / (2 * math.log(base))

    low, high = pair_with_turns(beta_fast), pair_with_turns(beta_slow)
    if truncate:
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, dim - 1)
    if low == high:
        high += 0.001
    out = []
    for i in range(dim // 2):
        theta = 1.0 / base ** (2 * i / dim)
        interpolate = min(max((i - low) / (high - low), 0.0), 1.0)
        out.append(theta / factor * interpolate + theta * (1 - interpolate))
    return np.array(out)


def llama3_by_loop(
    dim, base, factor, original, low_freq_factor=1.0, high_freq_factor=4.0
):
    """Meta's rule in its own terms: wavelengths compared with L/low and L/high."""
    out = []
    for i in range(dim // 2):
        theta = 1.0 / base ** (2 * i / dim)
        wavelength = 2 * math.pi / theta
        if wavelength < original / high_freq_factor:
            out.append(theta)
        elif wavelength > original / low_freq_factor:
            out.append(theta / factor)
        else:
            smooth = (original / wavelength - low_freq_factor) / (
                high_freq_factor - low_freq_factor
            )
            out.append((1 - smooth) * theta / factor + smooth * theta)
    return np.array(out)


@pytest.mark.parametrize(
    "dim,base,factor,original",
    [
        (64, 1e4, 8.0, 4096),
        (128, 5e5, 32.0, 8192),
        (16, 1e4, 2.5, 128),
        (128, 1e4, 16.0, 131072),
        (8, 100.0, 4.0, 64),
        (4, 10.0, 2.0, 20107),
    ],
)
@pytest.mark.parametrize("truncate", [True, False])
def test_yarn_and_ntk_by_parts_match_a_loop(dim, base, factor, original, truncate):
    expected = yarn_by_loop(dim, base, factor, original, truncate=truncate)
    for method in ("yarn", "ntk_by_parts"):
        inv_freq, _ = rope_scaling(
            method,
            dim,
            base=base,
            factor=factor,
            original_max_position=original,
            truncate=truncate,
        )
        np.testing.assert_allclose(inv_freq, expected, rtol=1e-13)
    options = dict(beta_fast=8.0, beta_slow=2.0, truncate=truncate)
    inv_freq, _ = rope_scaling(
        "yarn", dim, base=base, factor=factor, original_max_position=original, **options
    )
    np.testing.assert_allclose(
        inv_freq, yarn_by_loop(dim, base, factor, original, **options), rtol=1e-13
    )


@pytest.mark.parametrize(
    "dim,base,factor,original",
    [(128, 5e5, 8.0, 8192), (64, 1e4, 4.0, 2048), (32, 1e4, 16.0, 512)],
)
def test_llama3_matches_metas_rule(dim, base, factor, original):
    inv_freq, attention_factor = rope_scaling(
        "llama3", dim, base=base, factor=factor, original_max_position=original
    )
    np.testing.assert_allclose(
        inv_freq, llama3_by_loop(dim, base, factor, original), rtol=1e-13
    )
    assert attention_factor == 1.0
    inv_freq, _ = rope_scaling(
        "llama3",
        dim,
        base=base,
        factor=factor,
        original_max_position=original,
        low_freq_factor=2.0,
        high_freq_factor=8.0,
    )
    np.testing.assert_allclose(
        inv_freq, llama3_by_loop(dim, base, factor, original, 2.0, 8.0), rtol=1e-13
    )


def test_llama3_is_the_papers_ntk_by_parts_with_alpha_1_beta_4():
    dim, base, factor, original = 128, 5e5, 8.0, 8192
    theta = rope_inv_freq(dim, base)
    papers_form = blend_frequencies(
        theta, factor, ramp_rotations(rotations_per_pair(dim, base, original), 1.0, 4.0)
    )
    np.testing.assert_array_equal(
        rope_scaling(
            "llama3", dim, base=base, factor=factor, original_max_position=original
        )[0],
        papers_form,
    )


@pytest.mark.parametrize(
    "dim,base,factor", [(64, 1e4, 8.0), (128, 5e5, 3.0), (4, 10.0, 2.0)]
)
def test_none_linear_and_ntk_by_formula(dim, base, factor):
    theta = np.array([base ** (-2 * i / dim) for i in range(dim // 2)])
    np.testing.assert_allclose(
        rope_scaling("none", dim, base=base)[0], theta, rtol=1e-15
    )
    np.testing.assert_allclose(
        rope_scaling("linear", dim, base=base, factor=factor)[0],
        theta / factor,
        rtol=1e-15,
    )
    new_base = base * factor ** (dim / (dim - 2))
    ntk = rope_scaling("ntk", dim, base=base, factor=factor)[0]
    np.testing.assert_allclose(
        ntk, [new_base ** (-2 * i / dim) for i in range(dim // 2)], rtol=1e-13
    )
    # the derivation's two ends: the fastest pair is untouched, the slowest is interpolated by exactly s
    assert ntk[0] == 1.0
    assert ntk[-1] == pytest.approx(theta[-1] / factor, rel=1e-13)


def test_dynamic_is_ntk_with_the_transformers_scale():
    dim, base, factor, original = 64, 1e4, 4.0, 2048
    for seq_len in (1, 2047, 2048):
        np.testing.assert_array_equal(
            rope_scaling(
                "dynamic",
                dim,
                base=base,
                factor=factor,
                original_max_position=original,
                seq_len=seq_len,
            )[0],
            rope_inv_freq(dim, base),
        )
    for seq_len in (3000, 8192, 65536):
        scale = factor * seq_len / original - (factor - 1)
        new_base = base * scale ** (dim / (dim - 2))
        expected = [new_base ** (-2 * i / dim) for i in range(dim // 2)]
        got = rope_scaling(
            "dynamic",
            dim,
            base=base,
            factor=factor,
            original_max_position=original,
            seq_len=seq_len,
        )[0]
        np.testing.assert_allclose(got, expected, rtol=1e-13)
        # with factor 1 it is the paper's dynamic s = l / L fed to NTK-aware scaling
        papers = rope_scaling("ntk", dim, base=base, factor=seq_len / original)[0]
        np.testing.assert_allclose(
            rope_scaling(
                "dynamic",
                dim,
                base=base,
                factor=1.0,
                original_max_position=original,
                seq_len=seq_len,
            )[0],
            papers,
            rtol=1e-14,
        )


def test_dynamic_scale_at_whole_multiples_is_s_squared_minus_s_plus_1():
    for s in range(1, 9):
        assert dynamic_scale(float(s), 1024, s * 1024) == s * s - s + 1


def test_yarn_attention_factor_and_mscale():
    assert yarn_mscale(1.0) == 1.0 and yarn_mscale(0.5) == 1.0
    assert yarn_mscale(math.e**2) == pytest.approx(1.2, rel=1e-15)
    assert rope_scaling("yarn", 64, factor=8.0)[1] == 0.1 * math.log(8.0) + 1.0
    assert rope_scaling("yarn", 64, factor=1.0)[1] == 1.0
    assert yarn_attention_factor(16.0, mscale=1.0, mscale_all_dim=1.0) == 1.0
    assert yarn_attention_factor(
        16.0, mscale=0.707, mscale_all_dim=1.0
    ) == pytest.approx(
        (0.0707 * math.log(16) + 1) / (0.1 * math.log(16) + 1), rel=1e-15
    )
    assert rope_scaling("yarn", 64, factor=16.0, attention_factor=1.5)[1] == 1.5
    for method in METHODS:
        if method not in ("yarn", "none", "longrope"):
            extra = options_for(method)
            assert rope_scaling(method, 64, factor=16.0, **extra)[1] == 1.0


def test_mscale_pair_as_transformers_reads_it():
    """transformers tests `mscale and mscale_all_dim`: only two non-zero values give the ratio."""
    s = 40.0
    fallback = 0.1 * math.log(s) + 1
    for mscales in (
        {},
        {"mscale": 1.0, "mscale_all_dim": 0.0},
        {"mscale": 0.0, "mscale_all_dim": 1.0},
        {"mscale": 0.0, "mscale_all_dim": 0.0},
        {"mscale": 0.707},
        {"mscale_all_dim": 0.707},
        {"mscale": None, "mscale_all_dim": 0.707},
    ):
        assert (
            rope_scaling("yarn", 64, factor=s, original_max_position=4096, **mscales)[1]
            == fallback
        ), mscales
        assert yarn_attention_factor(s, **mscales) == fallback, mscales
    for mscale, mscale_all_dim in (
        (1.0, 1.0),
        (0.707, 1.0),
        (1.0, 0.707),
        (-1.0, 1.0),
        (0.707, 0.707),
    ):
        expected = (0.1 * mscale * math.log(s) + 1) / (
            0.1 * mscale_all_dim * math.log(s) + 1
        )
        got = rope_scaling(
            "yarn", 64, factor=s, mscale=mscale, mscale_all_dim=mscale_all_dim
        )[1]
        assert got == expected and (got == 1.0) == (mscale == mscale_all_dim)
    # the frequencies do not depend on the attention options
    plain = rope_scaling("yarn", 64, factor=s)[0]
    np.testing.assert_array_equal(
        rope_scaling("yarn", 64, factor=s, mscale=0.707)[0], plain
    )


def test_attention_factor_overrides_both_mscales():
    for mscales in ({"mscale": 0.707, "mscale_all_dim": 1.0}, {"mscale": 0.707}, {}):
        assert (
            rope_scaling("yarn", 64, factor=16.0, attention_factor=1.25, **mscales)[1]
            == 1.25
        )
    assert rope_scaling("yarn", 64, factor=16.0, attention_factor=0.0)[1] == 0.0
    assert yarn_mscale(16.0, 0.0) == 1.0 and yarn_mscale(1.0, -3.0) == 1.0


def test_beta_none_or_zero_means_the_default_and_equal_betas_are_allowed():
    defaults = rope_scaling("yarn", 64, factor=8.0, original_max_position=4096)[0]
    for betas in (
        {"beta_fast": 0.0},
        {"beta_slow": 0},
        {"beta_fast": None, "beta_slow": None},
        {"beta_fast": 0.0, "beta_slow": 0.0},
    ):
        np.testing.assert_array_equal(
            rope_scaling("yarn", 64, factor=8.0, original_max_position=4096, **betas)[
                0
            ],
            defaults,
        )
    for truncate in (True, False):
        got = rope_scaling(
            "yarn",
            64,
            factor=8.0,
            original_max_position=4096,
            beta_fast=8.0,
            beta_slow=8.0,
            truncate=truncate,
        )[0]
        np.testing.assert_allclose(
            got, yarn_by_loop(64, 1e4, 8.0, 4096, 8.0, 8.0, truncate), rtol=1e-13
        )
    # one fractional bound: without truncate low == high, and the ramp is a step 0.001 wide
    low, high = correction_range(
        64, original_max_position=4096, beta_fast=8.0, beta_slow=8.0, truncate=False
    )
    assert low == high and not low.is_integer()
    gamma = ramp_pair_index(64, low, high)
    assert (
        set(np.unique(gamma)) == {0.0, 1.0}
        and gamma[math.floor(low)] == 1
        and gamma[math.ceil(low)] == 0
    )


def test_llama3_with_a_negative_low_freq_factor_divides_every_pair():
    """Every wavelength exceeds L / low_freq_factor < 0, so transformers divides every pair by s.

    Meta's loop tests "wavelength < L / high_freq_factor" first and would keep the fast pairs;
    transformers tests "wavelength > L / low_freq_factor" first, and posenc follows transformers.
    """
    linear = rope_scaling("linear", 128, base=5e5, factor=8.0)[0]
    for low, high in ((-1.0, 4.0), (-4.0, -1.0)):
        got = rope_scaling(
            "llama3",
            128,
            base=5e5,
            factor=8.0,
            original_max_position=8192,
            low_freq_factor=low,
            high_freq_factor=high,
        )[0]
        np.testing.assert_array_equal(got, linear)
    metas_loop = llama3_by_loop(128, 5e5, 8.0, 8192, -1.0, 4.0)
    assert metas_loop[0] == 1.0 and metas_loop[-1] == linear[-1]
    r = rotations_per_pair(128, 5e5, 8192)
    np.testing.assert_array_equal(llama3_ramp(r, 1.0, 4.0), ramp_rotations(r, 1.0, 4.0))


def test_apply_rope_takes_what_rope_scaling_returns_and_logits_scale_by_the_square():
    rng = np.random.default_rng(0)
    q, k = rng.normal(size=(5, 64)), rng.normal(size=(5, 64))
    positions = np.array([0, 1, 100, 5000, 16383])
    inv_freq, factor = rope_scaling("yarn", 64, factor=8.0, original_max_position=2048)
    plain = (
        apply_rope(q, positions, inv_freq=inv_freq)
        @ apply_rope(k, positions, inv_freq=inv_freq).T
    )
    scaled = (
        apply_rope(q, positions, inv_freq=inv_freq, attention_factor=factor)
        @ apply_rope(k, positions, inv_freq=inv_freq, attention_factor=factor).T
    )
    np.testing.assert_allclose(scaled, factor**2 * plain, rtol=1e-12)
    for method in METHODS:
        extra = options_for(method)
        inv_freq, factor = rope_scaling(
            method, 64, factor=1.0 if method == "none" else 4.0, **extra
        )
        assert (
            apply_rope(q, positions, inv_freq=inv_freq, attention_factor=factor).shape
            == q.shape
        )


# ---------------------------------------------------------------- LongRoPE


def test_golden_longrope_cases_cover_the_switch_and_the_attention_factor(golden):
    _, rows = golden
    longrope = [row for row in rows if row[0]["method"] == "longrope"]
    assert {case["dim"] for case, *_ in longrope} == {64, 96, 128}
    relative = {
        "none"
        if "seq_len" not in case
        else case["seq_len"] / case["original_max_position"]
        for case, *_ in longrope
    }
    assert {"none", 1.0, 4.0} <= relative and min(relative - {"none"}) < 1
    assert any(
        case.get("seq_len") == case["original_max_position"] + 1
        for case, *_ in longrope
    )
    assert {case.get("attention_factor") for case, *_ in longrope} >= {None, 0.0, 1.25}
    assert {case["factor"] for case, *_ in longrope} >= {1.0, 2.0, 32.0}
    # transformers switches to the long factors one position past L, as posenc does
    by_length = {}
    for case, _, ref64, factor in longrope:
        if case["dim"] == 64 and case["base"] == 1e4 and "attention_factor" not in case:
            key = (case["original_max_position"], case["factor"], case.get("seq_len"))
            by_length[key] = (ref64, factor)
    theta = rope_inv_freq(64, 1e4)
    for original in (2048, 4096, 32768):
        lists = {k: np.array(v) for k, v in longrope_lists(64, 32.0).items()}
        for seq_len, name in [
            (None, "short_factor"),
            (original, "short_factor"),
            (original + 1, "long_factor"),
            (4 * original, "long_factor"),
        ]:
            ref64, factor = by_length[(original, 32.0, seq_len)]
            np.testing.assert_allclose(ref64, theta / lists[name], rtol=1e-14)
            assert factor == pytest.approx(
                math.sqrt(1 + math.log(32) / math.log(original)), rel=1e-15
            )


def test_phi3_models_give_transformers_values(golden):
    """Phi-3-mini-128k and Phi-3.5-mini as their config.json reaches transformers (no factor)."""
    _, rows = golden
    published = load_script("make_scaling_golden").published_longrope()
    found = [(case, ref64, f) for case, _, ref64, f in rows if case in published]
    assert len(found) == len(published) == 4
    for case, ref64, attention_factor in found:
        inv_freq, ours = call(case)
        np.testing.assert_allclose(inv_freq, ref64, rtol=1e-12, atol=0)
        assert ours == attention_factor == pytest.approx(math.sqrt(17 / 12), rel=1e-15)
        assert case["dim"] == 96 and case["factor"] == 32.0
    # past 4096 positions the slowest pair turns over 20 times slower than below
    for short, long in zip(found[::2], found[1::2]):
        assert "seq_len" not in short[0] and long[0]["seq_len"] == 131072
        ratio = long[0]["long_factor"][-1] / short[0]["short_factor"][-1]
        assert short[1][-1] / long[1][-1] == pytest.approx(ratio, rel=1e-12)
        assert ratio > 20


def longrope_lists(dim, factor):
    return load_script("make_scaling_golden").longrope_lists(dim, factor)


def longrope_by_loop(dim, base, factors):
    """theta'_i = 1 / (lambda_i base^(2i/dim)), pair by pair with Python floats."""
    return np.array(
        [1.0 / (factors[i] * base ** (2 * i / dim)) for i in range(dim // 2)]
    )


@pytest.mark.parametrize(
    "dim,base,original", [(96, 1e4, 4096), (64, 5e5, 8192), (8, 100.0, 16)]
)
def test_longrope_matches_a_loop(dim, base, original):
    options = longrope_options(dim)
    for seq_len, name in [(None, "short_factor"), (original + 1, "long_factor")]:
        inv_freq, _ = rope_scaling(
            "longrope",
            dim,
            base=base,
            factor=32.0,
            original_max_position=original,
            seq_len=seq_len,
            **options,
        )
        expected = longrope_by_loop(dim, base, options[name])
        np.testing.assert_allclose(inv_freq, expected, rtol=4e-16 * dim, atol=0)


@given(
    half_dim=st.integers(1, 80),
    base=st.floats(10.0, 1e7),
    factor=st.floats(1.0, 64.0),
    original=st.integers(2, 200_000),
    past=st.booleans(),
)
def test_longrope_with_every_factor_s_is_position_interpolation(
    half_dim, base, factor, original, past
):
    dim = 2 * half_dim
    same = [factor] * half_dim
    seq_len = original + 1 if past else original
    inv_freq, attention_factor = rope_scaling(
        "longrope",
        dim,
        base=base,
        factor=factor,
        original_max_position=original,
        seq_len=seq_len,
        short_factor=same,
        long_factor=same,
    )
    linear, _ = rope_scaling("linear", dim, base=base, factor=factor)
    np.testing.assert_array_equal(inv_freq, linear)
    assert attention_factor >= 1.0


def test_longrope_switches_to_the_long_factors_past_the_original_context():
    options = longrope_options(16)
    theta = rope_inv_freq(16, 1e4)

    def frequencies_at(seq_len):
        return rope_scaling(
            "longrope",
            16,
            factor=4.0,
            original_max_position=4096,
            seq_len=seq_len,
            **options,
        )

    for seq_len in (None, 1, 4095, 4096):
        np.testing.assert_array_equal(
            frequencies_at(seq_len)[0], theta / np.array(options["short_factor"])
        )
    for seq_len in (4097, 40960):
        np.testing.assert_array_equal(
            frequencies_at(seq_len)[0], theta / np.array(options["long_factor"])
        )
    # one attention factor for short and long sequences
    assert len({frequencies_at(n)[1] for n in (None, 10, 4096, 4097)}) == 1


def test_longrope_attention_factor():
    # Phi-3-mini-128k: 131072 / 4096 = 32 = 2**5 over 4096 = 2**12: sqrt(1 + 5/12)
    assert longrope_attention_factor(32.0, 4096) == pytest.approx(
        math.sqrt(17 / 12), rel=1e-15
    )
    assert longrope_attention_factor(1.0, 4096) == 1.0
    assert longrope_attention_factor(1.0, 1) == 1.0
    assert longrope_attention_factor(32.0, 4096, attention_factor=1.5) == 1.5
    assert longrope_attention_factor(32.0, 1, attention_factor=0) == 0.0
    factors = [
        longrope_attention_factor(s, 4096) for s in (1.0, 1.5, 2.0, 8.0, 32.0, 1e6)
    ]
    assert factors == sorted(factors) and len(set(factors)) == len(factors)
    _, given = rope_scaling(
        "longrope", 8, factor=16.0, attention_factor=2, **longrope_options(8)
    )
    assert given == 2.0 and isinstance(given, float)
    # a given attention factor holds at s = 1 too (s = 1 only picks the default, 1)
    assert longrope_attention_factor(1.0, 4096, attention_factor=1.25) == 1.25
    _, given_at_one = rope_scaling(
        "longrope", 8, factor=1.0, attention_factor=1.25, **longrope_options(8)
    )
    assert given_at_one == 1.25
    with pytest.raises(ValueError, match="original_max_position"):
        longrope_attention_factor(2.0, 1)
    with pytest.raises(ValueError, match="attention_factor"):
        longrope_attention_factor(2.0, 4096, attention_factor=-0.5)


def test_longrope_factors_accept_lists_tuples_and_arrays_of_numbers():
    expected = np.array([1.0, 2.5, 3.0])
    for value in (
        [1, 2.5, 3.0],
        (1.0, 2.5, 3),
        np.array([1.0, 2.5, 3.0], dtype=np.float32),
        np.array([1, 2.5, 3]),
        [np.float32(1.0), np.float64(2.5), np.int64(3)],
    ):
        factors = longrope_factors(value, "short_factor", 6)
        assert factors.dtype == np.float64
        np.testing.assert_array_equal(factors, expected)


@pytest.mark.parametrize(
    "change,error,message",
    [
        (
            {"short_factor": [1.0] * 7},
            ValueError,
            "short_factor must be a list of dim/2 = 8",
        ),
        (
            {"long_factor": [1.0] * 9},
            ValueError,
            "long_factor must be a list of dim/2 = 8",
        ),
        ({"short_factor": [1.0]}, ValueError, "short_factor"),  # never broadcast
        ({"short_factor": 1.0}, TypeError, "short_factor"),
        ({"long_factor": "1.0"}, TypeError, "long_factor"),
        ({"long_factor": {i: 1.0 for i in range(8)}}, TypeError, "long_factor"),
        ({"short_factor": np.ones((2, 4))}, ValueError, "short_factor"),
        ({"short_factor": np.array(["1"] * 8)}, TypeError, "short_factor"),
        ({"short_factor": [1.0] * 7 + [0.0]}, ValueError, "short_factor .* at index 7"),
        ({"long_factor": [-1.0] + [1.0] * 7}, ValueError, "long_factor .* at index 0"),
        ({"long_factor": [1.0, math.nan] + [1.0] * 6}, ValueError, "long_factor"),
        ({"short_factor": [math.inf] + [1.0] * 7}, ValueError, "short_factor"),
        ({"short_factor": [True] + [1.0] * 7}, TypeError, "short_factor"),
        ({"long_factor": ["2"] + [1.0] * 7}, TypeError, "long_factor .* at index 0"),
        ({"long_factor": [None] * 8}, TypeError, "long_factor"),
        (
            {"short_factor": None},
            ValueError,
            r"requires the option\(s\) \['short_factor'\]",
        ),
        ({"attention_factor": -1.0}, ValueError, "attention_factor"),
        ({"attention_factor": "1"}, TypeError, "attention_factor"),
        ({"attention_factor": math.nan}, ValueError, "attention_factor"),
        ({"factor": 0.5}, ValueError, "factor"),
        ({"seq_len": 0}, ValueError, "seq_len"),
        ({"seq_len": 10.0}, TypeError, "seq_len"),
        ({"original_max_position": 1}, ValueError, "original_max_position"),
        ({"mscale": 1.0}, ValueError, "mscale"),
    ],
)
def test_longrope_bad_input_names_the_argument(change, error, message):
    kwargs = {"factor": 4.0, "original_max_position": 4096, **longrope_options(16)}
    with pytest.raises(error, match=message):
        rope_scaling("longrope", 16, **{**kwargs, **change})


def test_longrope_checks_the_list_it_does_not_use():
    options = longrope_options(16)
    for seq_len, unused in ((None, "long_factor"), (9000, "short_factor")):
        with pytest.raises(ValueError, match=unused):
            rope_scaling(
                "longrope",
                16,
                original_max_position=4096,
                seq_len=seq_len,
                **{**options, unused: [1.0] * 3},
            )
    with pytest.raises(ValueError, match=r"\['short_factor', 'long_factor'\]"):
        rope_scaling("longrope", 16)


# ---------------------------------------------------------------- the pieces the chapter plots


def test_rotations_and_correction_dim_are_inverse():
    dim, base, original = 128, 1e4, 4096
    r = rotations_per_pair(dim, base, original)
    np.testing.assert_allclose(r, original / wavelengths(dim, base), rtol=1e-15)
    np.testing.assert_allclose(
        r,
        [original * base ** (-2 * i / dim) / (2 * math.pi) for i in range(dim // 2)],
        rtol=1e-13,
    )
    for turns in (0.5, 1.0, 32.0, 100.0):
        i = correction_dim(turns, dim, base, original)
        assert original / (2 * math.pi * base ** (2 * i / dim)) == pytest.approx(
            turns, rel=1e-12
        )


def test_unseen_angle_pairs_by_method():
    dim, base, original, s = 128, 1e4, 4096, 16
    new_length = s * original
    r = rotations_per_pair(dim, base, original)
    partial = set(np.flatnonzero(r < 1).tolist())
    assert (
        set(
            unseen_angle_pairs(
                rope_inv_freq(dim, base), dim, base, original, original
            ).tolist()
        )
        == set()
    )
    assert (
        set(
            unseen_angle_pairs(
                rope_inv_freq(dim, base), dim, base, original, new_length
            ).tolist()
        )
        == partial
    )
    for method in ("linear", "ntk_by_parts", "yarn", "llama3"):
        inv_freq, _ = rope_scaling(
            method, dim, base=base, factor=s, original_max_position=original
        )
        assert (
            unseen_angle_pairs(inv_freq, dim, base, original, new_length).size == 0
        ), method
    ntk, _ = rope_scaling("ntk", dim, base=base, factor=s)
    unseen = unseen_angle_pairs(ntk, dim, base, original, new_length)
    # by hand: pair i with r_i < 1 is new when (sL - 1) theta_i s**(-2i/(dim-2)) > L theta_i
    by_hand = [
        i for i in partial if (new_length - 1) * s ** (-2 * i / (dim - 2)) > original
    ]
    assert unseen.tolist() == sorted(by_hand) and 0 < unseen.size < len(partial)


def test_correction_range_truncation_and_clamps():
    low, high = correction_range(
        128, base=1e4, original_max_position=4096, truncate=False
    )
    assert low == pytest.approx(
        correction_dim(32, 128, 1e4, 4096)
    ) and high == pytest.approx(correction_dim(1, 128, 1e4, 4096))
    assert correction_range(128, base=1e4, original_max_position=4096) == (
        math.floor(low),
        math.ceil(high),
    )
    # a short context: fewer than 32 turns everywhere, the fast bound clamps to pair 0
    assert (
        correction_dim(32, 16, 500.0, 128) < 0
        and correction_range(16, base=500.0, original_max_position=128)[0] == 0
    )
    # a long context with a small base: the slow bound passes the last pair and is clamped at dim - 1, not dim/2 - 1
    low, high = correction_range(128, base=1e4, original_max_position=131072)
    assert high == 70.0 > 63
    assert (
        ramp_pair_index(128, low, high)[-1]
        == pytest.approx(1 - (63 - low) / (high - low))
        and ramp_pair_index(128, low, high)[-1] > 0
    )


def test_correction_range_can_return_low_above_high_and_the_ramp_then_reverses():
    """Each bound is clamped on one side only, as in the reference: the result can leave [0, dim - 1]."""
    # L = 4: pair 0 makes 4 / 2 pi < 1 turn, both raw bounds are negative, only low is raised to 0
    assert correction_dim(1.0, 64, 1e4, 4) < -1
    assert correction_range(64, original_max_position=4) == (0.0, -1.0)
    # every pair kept
    np.testing.assert_array_equal(ramp_pair_index(64, 0.0, -1.0), np.ones(32))
    # L = 1e11: the fast bound lies past dim - 1 = 63, only high is lowered to 63
    assert correction_dim(32.0, 64, 1e4, 10**11) > 63
    assert correction_range(64, original_max_position=10**11) == (69.0, 63.0)
    # every pair interpolated
    np.testing.assert_array_equal(ramp_pair_index(64, 69.0, 63.0), np.zeros(32))
    # the same through rope_scaling and the independent loop
    for original, expected in (
        (4, rope_inv_freq(64)),
        (10**11, rope_inv_freq(64) / 8.0),
    ):
        got = rope_scaling("yarn", 64, factor=8.0, original_max_position=original)[0]
        np.testing.assert_allclose(got, expected, rtol=1e-15)
        np.testing.assert_allclose(
            got, yarn_by_loop(64, 1e4, 8.0, original), rtol=1e-15
        )
    # a reversed ramp in general: 0 up to high, 1 from low
    gamma = ramp_pair_index(32, 10.0, 5.0)
    assert (
        np.all(gamma[:6] == 0)
        and np.all(gamma[10:] == 1)
        and np.all(np.diff(gamma[5:11]) > 0)
    )


@pytest.mark.parametrize("dim,base", [(128, 1e4), (64, 5e5), (16, 100.0)])
@pytest.mark.parametrize("truncate", [True, False])
def test_last_pair_keeps_some_theta_exactly_when_it_completes_a_turn(
    dim, base, truncate
):
    """gamma of the last pair is > 0 iff L > lambda_{d/2-1} = 2 pi b^((d-2)/d), not 2 pi b."""
    slowest = float(wavelengths(dim, base)[-1])
    assert slowest == pytest.approx(2 * math.pi * base ** ((dim - 2) / dim), rel=1e-14)
    for original in (
        int(slowest * 0.9),
        math.floor(slowest),
        math.floor(slowest) + 1,
        int(slowest * 1.05),
    ):
        if original < 1:
            continue
        low, high = correction_range(
            dim, base=base, original_max_position=original, truncate=truncate
        )
        last = ramp_pair_index(dim, low, high)[-1]
        assert (last > 0) == (original > slowest), (original, slowest, low, high, last)


def test_pair_index_ramp_is_linear_in_log_rotations():
    """Without truncation and clamps, the reference ramp is linear in ln r, the paper's in r."""
    dim, base, original = 128, 1e4, 8192
    r = rotations_per_pair(dim, base, original)
    gamma = ramp_pair_index(
        dim,
        *correction_range(
            dim, base=base, original_max_position=original, truncate=False
        ),
    )
    np.testing.assert_allclose(
        gamma,
        np.clip((np.log(r) - np.log(1.0)) / (np.log(32.0) - np.log(1.0)), 0, 1),
        atol=1e-12,
    )
    paper = ramp_rotations(r, 1.0, 32.0)
    # ln r / ln 32 - (r - 1) / 31 is largest at r = 31 / ln 32, where it is about 0.376
    r_star = 31 / math.log(32)
    largest_gap = math.log(r_star) / math.log(32) - (r_star - 1) / 31
    assert np.all(paper <= gamma + 1e-12)
    assert largest_gap - 0.01 < np.max(gamma - paper) <= largest_gap


@given(
    method=st.sampled_from(["linear", "ntk", "ntk_by_parts", "yarn", "llama3"]),
    half_dim=st.integers(2, 96),
    base=st.floats(10.0, 1e7),
    factor=st.floats(1.0, 64.0),
    original=st.integers(16, 200_000),
)
def test_every_method_stays_between_interpolation_and_extrapolation(
    method, half_dim, base, factor, original
):
    dim = 2 * half_dim
    theta = rope_inv_freq(dim, base)
    inv_freq, _ = rope_scaling(
        method, dim, base=base, factor=factor, original_max_position=original
    )
    assert inv_freq.shape == theta.shape and inv_freq.dtype == np.float64
    assert np.all(inv_freq <= theta * (1 + 1e-12)) and np.all(
        inv_freq >= theta / factor * (1 - 1e-12)
    )
    assert np.all(np.diff(inv_freq) < 0)  # pairs keep their order, fastest first


# ---------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    "args,kwargs,error,name",
    [
        (("rope", 64), {}, ValueError, "method"),
        (("linear", 64), {"factor": 0.5}, ValueError, "factor"),
        (("linear", 64), {"factor": "2"}, TypeError, "factor"),
        (("dynamic", 64), {"factor": 2.0}, ValueError, "seq_len"),
        (("dynamic", 64), {"factor": 2.0, "seq_len": 0}, ValueError, "seq_len"),
        (("linear", 64), {"factor": 2.0, "seq_len": 4096}, ValueError, "seq_len"),
        (("linear", 64), {"factor": 2.0, "beta_fast": 32}, ValueError, "beta_fast"),
        (("ntk_by_parts", 64), {"factor": 2.0, "mscale": 1.0}, ValueError, "mscale"),
        (("llama3", 64), {"factor": 2.0, "truncate": False}, ValueError, "truncate"),
        (("yarn", 63), {"factor": 2.0}, ValueError, "dim"),
        (("yarn", 64), {"factor": 2.0, "mscale": "1"}, TypeError, "mscale"),
        (
            ("yarn", 64),
            {"factor": 2.0, "mscale": 1.0, "mscale_all_dim": math.nan},
            ValueError,
            "mscale_all_dim",
        ),
        (
            ("yarn", 64),
            {"factor": 2.0, "mscale_all_dim": "x"},
            TypeError,
            "mscale_all_dim",
        ),
        # 0.1 * -10 * ln(e) + 1 == 0 exactly: transformers raises ZeroDivisionError
        (
            ("yarn", 64),
            {"factor": math.e, "mscale": 1.0, "mscale_all_dim": -10.0},
            ValueError,
            "mscale_all_dim",
        ),
        (
            ("yarn", 64),
            {"factor": 2.0, "attention_factor": "1"},
            TypeError,
            "attention_factor",
        ),
        (("yarn", 64), {"factor": 2.0, "beta_slow": -1.0}, ValueError, "beta_slow"),
        (("yarn", 64), {"factor": 2.0, "beta_fast": -1.0}, ValueError, "beta_fast"),
        (
            ("yarn", 64),
            {"factor": 2.0, "beta_fast": 0.0, "beta_slow": 40.0},
            ValueError,
            "beta_fast",
        ),
        (("yarn", 64), {"factor": 2.0, "truncate": 1}, TypeError, "truncate"),
        (
            ("yarn", 64),
            {"factor": 2.0, "beta_fast": 1.0, "beta_slow": 2.0},
            ValueError,
            "beta_fast",
        ),
        (
            ("yarn", 64),
            {"factor": 2.0, "attention_factor": -1.0},
            ValueError,
            "attention_factor",
        ),
        (
            ("llama3", 64),
            {"factor": 2.0, "low_freq_factor": 4.0, "high_freq_factor": 1.0},
            ValueError,
            "high_freq_factor",
        ),
        (
            ("llama3", 64),
            {"factor": 2.0, "low_freq_factor": 2.0, "high_freq_factor": 2.0},
            ValueError,
            "high_freq_factor",
        ),
        (
            ("llama3", 64),
            {"factor": 2.0, "low_freq_factor": 0.0},
            ValueError,
            "low_freq_factor",
        ),
        (
            ("llama3", 64),
            {"factor": 2.0, "low_freq_factor": -1.0, "high_freq_factor": 0.0},
            ValueError,
            "high_freq_factor",
        ),
        (
            ("llama3", 64),
            {"factor": 2.0, "low_freq_factor": None},
            TypeError,
            "low_freq_factor",
        ),
        (("none", 64), {"factor": 2.0}, ValueError, "factor"),
        (("ntk", 2), {"factor": 2.0}, ValueError, "dim"),
        (
            ("yarn", 64),
            {"factor": 2.0, "original_max_position": 0},
            ValueError,
            "original_max_position",
        ),
        (("yarn", 64), {"factor": 2.0, "base": -1.0}, ValueError, "base"),
    ],
)
def test_bad_input_names_the_argument(args, kwargs, error, name):
    with pytest.raises(error, match=name):
        rope_scaling(*args, **kwargs)


def test_every_method_lists_its_options():
    assert set(OPTIONS) == set(METHODS)
    with pytest.raises(ValueError, match="gamma"):
        blend_frequencies(np.ones(4), 2.0, np.full(4, 1.5))
    with pytest.raises(ValueError, match="beta"):
        ramp_rotations(np.ones(3), 4.0, 1.0)
    with pytest.raises(ValueError, match="dim"):
        ntk_aware_base(1e4, 2, 2.0)
