"""The explorers' data grids against independent computations, and their specifications."""

from __future__ import annotations

import json

import numpy as np
import pytest

import posenc
from posenc.book import explorer_grids as grids
from posenc.book import explorers

# ------------------------------------------------------------------ packing


def test_packed_rows_come_back_when_flattened():
    rows = [
        {"g": g, "k": k, "x": x, "y": 10 * x + k}
        for g in ("a", "b")
        for k in (1, 2)
        for x in range(3)
    ]
    records, listed = explorers.packed(rows, ["g", "k"])
    assert listed == ["x", "y"]
    assert len(records) == 4
    flattened = [
        {"g": r["g"], "k": r["k"], "x": x, "y": y}
        for r in records
        for x, y in zip(r["x"], r["y"])
    ]
    assert flattened == rows


@pytest.mark.parametrize(
    "rows, by, message",
    [
        ([], ["a"], "at least one row"),
        ([{"a": 1}], ["b"], "lack"),
        ([{"a": 1, "x": 1}, {"a": 1, "y": 2}], ["a"], "columns"),
    ],
)
def test_packed_rejects_bad_tables(rows, by, message):
    with pytest.raises(ValueError, match=message):
        explorers.packed(rows, by)


def test_a_table_is_stored_once():
    data = explorers.Datasets()
    data.table("t", [{"a": 1}])
    with pytest.raises(ValueError, match="stored already"):
        data.table("t", [{"a": 2}])


def test_rounded_keeps_four_significant_digits_and_refuses_nan():
    assert grids.rounded(0.0001234567) == 0.0001235
    assert grids.rounded(-12345.6) == -12350.0
    assert grids.rounded(-0.0) == 0.0
    with pytest.raises(ValueError, match="finite"):
        grids.rounded(float("nan"))


# ----------------------------------------------------------------- chapter 2


def test_sinusoidal_grid_against_the_encoding_and_the_shift_property():
    tables = grids.sinusoidal_grid([16, 64], [100.0, 10000.0], num_pairs=8)
    for d in (16, 64):
        for base in (100.0, 10000.0):
            encoding = posenc.sinusoidal_encoding(64, d, base=base)
            cells = [r for r in tables["heatmap"] if r["d"] == d and r["base"] == base]
            pairs = sorted({r["pair"] for r in cells})
            assert pairs[0] == 0 and pairs[-1] == d // 2 - 1 and len(pairs) == 8
            # every sine and every cosine of the chosen pairs, at every position 0..63
            assert len(cells) == 2 * 8 * 64
            for r in cells:
                column = 2 * r["pair"] + (r["kind"] == "cos")
                assert r["value"] == pytest.approx(encoding[r["p"], column], abs=5e-4)
            # rows of the picture: one (kind, pair) after another, positions in order
            assert [(r["kind"], r["pair"], r["p"]) for r in cells] == [
                (kind, i, p)
                for kind in ("sin", "cos")
                for i in pairs
                for p in range(64)
            ]
            # PE(p) . PE(p + k) does not depend on p: compare with p = 300, computed directly.
            shifted = posenc.sinusoidal_encoding_at(
                np.arange(300 - 128, 300 + 129), d, base=base
            )
            direct = shifted @ shifted[128]
            dots = [
                r["dot"] for r in tables["dot"] if r["d"] == d and r["base"] == base
            ]
            np.testing.assert_allclose(dots, direct, rtol=1e-3, atol=1e-3)
            waves = [
                r["wavelength"]
                for r in tables["wavelengths"]
                if (r["d"], r["base"]) == (d, base)
            ]
            expected = 2 * np.pi * base ** (np.arange(d // 2) * 2 / d)
            np.testing.assert_allclose(waves, expected, rtol=1e-3)


def test_sinusoidal_grid_rejects_bad_choices():
    with pytest.raises(ValueError, match="d_models"):
        grids.sinusoidal_grid([15], [100.0])
    with pytest.raises(ValueError, match="bases"):
        grids.sinusoidal_grid([16], [100.0, 100.0])


# ----------------------------------------------------------------- chapter 4


QUERY = [1.0, 0.0, 0.5, 0.5, 0.0, 1.0, 1.0, 1.0]
KEY = [0.5, 1.0, 0.0, 1.0, 1.0, 0.0, 0.2, 0.3]


def test_rope_scores_equal_the_matrix_form_and_depend_only_on_the_offset():
    tables = grids.rope_pairs_grid(QUERY, KEY, num_positions=12)
    q, k = np.array(QUERY), np.array(KEY)
    by_offset: dict[tuple, set] = {}
    for r in tables["scores"]:
        m, n = r["query_position"], r["key_position"]
        matrix = posenc.rope_matrix(m, 8, layout=r["layout"])
        other = posenc.rope_matrix(n, 8, layout=r["layout"])
        assert r["score"] == pytest.approx((matrix @ q) @ (other @ k), abs=1e-3)
        by_offset.setdefault((r["layout"], r["offset"]), set()).add(r["score"])
    assert all(max(s) - min(s) <= 2e-3 for s in by_offset.values())


def test_rope_vectors_follow_each_layouts_pairs():
    tables = grids.rope_pairs_grid(QUERY, KEY, num_positions=3)
    start = {
        (r["layout"], r["pair"]): (r["x"], r["y"])
        for r in tables["vectors"]
        if r["vector"] == "query" and r["position"] == 0
    }
    assert start[("interleaved", 1)] == (0.5, 0.5)
    assert start[("half", 1)] == (0.0, 1.0)  # features 1 and 1 + d/2 = 5
    # A rotation keeps each pair's length.
    for r in tables["vectors"]:
        x0, y0 = (
            start.get((r["layout"], r["pair"])) if r["vector"] == "query" else (0, 0)
        )
        if r["vector"] == "query":
            assert np.hypot(r["x"], r["y"]) == pytest.approx(np.hypot(x0, y0), abs=1e-3)


def test_rope_pairs_grid_rejects_mismatched_vectors():
    with pytest.raises(ValueError, match="one length"):
        grids.rope_pairs_grid([1.0, 0.0], [1.0, 0.0, 0.0, 0.0])
    with pytest.raises(ValueError, match="query length"):
        grids.rope_pairs_grid([1.0, 0.0, 1.0], [1.0, 0.0, 1.0])


# ----------------------------------------------------------------- chapter 5


def test_scaling_record_of_position_interpolation():
    record = grids.scaling_record(
        "g", "linear", dim=64, base=10000.0, original_max_position=4096, factor=8.0
    )
    assert record["scale"] == [0.125] * 32
    assert record["unseen"] == []  # PI keeps every angle inside the trained range
    theta = 1.0 / 10000.0 ** (np.arange(32) * 2 / 64)
    np.testing.assert_allclose(
        record["turns_target"], 8 * 4096 * theta / 8 / (2 * np.pi), rtol=1e-3
    )


def test_ntk_by_parts_keeps_fast_pairs_and_interpolates_slow_ones():
    record = grids.scaling_record(
        "g",
        "ntk_by_parts",
        dim=128,
        base=10000.0,
        original_max_position=4096,
        factor=8.0,
        beta_fast=32.0,
        beta_slow=1.0,
        truncate=True,
    )
    # Turns within L, r_i = L theta_i / (2 pi), written out: above 32 turns a pair is kept,
    # below 1 turn it is divided by s (the ramp's bounds are rounded outwards by a pair).
    turns = 4096 * 10000.0 ** (-np.arange(64) * 2 / 128) / (2 * np.pi)
    scale = np.array(record["scale"])
    assert np.all(scale[turns > 32 * 1.2] == 1.0)
    assert np.all(scale[turns < 1 / 1.2] == 0.125)
    assert np.all(np.diff(scale) <= 0)


def test_scaling_grid_covers_the_stated_grid():
    tables = grids.scaling_grid({"a": (64, 10000.0, 4096), "b": (96, 500000.0, 8192)})
    per_geometry = (
        1
        + 3 * len(grids.FACTORS)
        + len(grids.FACTORS) * len(grids.BETA_FAST) * len(grids.BETA_SLOW) * 2
        + len(grids.FACTORS) * len(grids.LOW_FREQ) * len(grids.HIGH_FREQ)
    )
    assert len(tables["settings"]) == 2 * per_geometry
    keys = [
        tuple(
            r[k]
            for k in (
                "geometry",
                "method",
                "factor",
                "beta_fast",
                "beta_slow",
                "truncate",
                "low_freq_factor",
                "high_freq_factor",
            )
        )
        for r in tables["settings"]
    ]
    assert len(set(keys)) == len(keys)
    for factor in grids.FACTORS:
        expected = 0.1 * np.log(factor) + 1.0  # YaRN's sqrt(1/t), paper eq. 22
        row = next(r for r in tables["attention"] if r["factor"] == factor)
        assert row["attention"] == pytest.approx(expected, rel=1e-3)
    turns = {r["geometry"]: r["turns_original"] for r in tables["turns"]}
    assert len(turns["b"]) == 48


# ----------------------------------------------------------------- the pages


def _params(spec: dict) -> set[str]:
    return {p["name"] for p in spec.get("params", [])}


def test_explorer_specs_are_valid_and_name_their_controls():
    sinusoidal = explorers.sinusoidal_explorer((16, 64), (100.0, 10000.0), d_model=16)
    rope = explorers.rope_explorer(QUERY, KEY, num_positions=8)
    from posenc.book.presets import load_presets

    presets = load_presets()
    chosen = {
        name: presets[name] for name in ("llama-2-7b", "phi-3-mini-128k-instruct")
    }
    scaling = explorers.scaling_explorer(chosen, model="llama-2-7b")
    assert {"d_model", "base"} <= _params(sinusoidal.to_dict())
    assert {"query_position", "key_position", "layout"} <= _params(rope.to_dict())
    assert {"model", "method", "factor", "beta_fast"} <= _params(scaling.to_dict())
    for chart in (sinusoidal, rope, scaling):
        spec = chart.to_dict()  # Altair validates against the Vega-Lite schema
        assert set(spec["datasets"])
        # the phone's layout: the same controls, no copy of the tables
        narrow = spec["usermeta"]["posenc"]["narrow"]
        assert "datasets" not in narrow
        assert _params(narrow) == _params(spec)


def _widths(spec: dict) -> list[int]:
    """Every width a (concatenated, layered or faceted) specification sets."""
    found = [spec["width"]] if isinstance(spec.get("width"), int) else []
    for key in ("vconcat", "hconcat", "concat", "layer"):
        for part in spec.get(key, []):
            found += _widths(part)
    if isinstance(spec.get("spec"), dict):
        found += _widths(spec["spec"])
    return found


def test_phone_layouts_stack_their_panels_within_the_narrow_width():
    charts = [
        explorers.sinusoidal_explorer((16, 64), (100.0,)),
        explorers.rope_explorer(QUERY, KEY, num_positions=8),
    ]
    for chart in charts:
        narrow = chart.to_dict()["usermeta"]["posenc"]["narrow"]
        assert "hconcat" not in json.dumps(narrow)
        assert max(_widths(narrow)) <= explorers.NARROW_WIDTH - 60
        assert max(_widths(chart.to_dict())) > explorers.NARROW_WIDTH


def test_responsive_rejects_other_tables_and_unbound_controls():
    import altair as alt

    one = (
        alt.Chart(alt.NamedData(name="t"))
        .mark_point()
        .properties(datasets={"t": [{"a": 1}]})
    )
    other = (
        alt.Chart(alt.NamedData(name="t"))
        .mark_point()
        .properties(datasets={"t": [{"a": 2}]})
    )
    with pytest.raises(ValueError, match="same tables"):
        explorers.responsive(one, other, wide_width=600)
    with pytest.raises(ValueError, match="unbound"):
        explorers.responsive(
            one, one, wide_width=600, controls={"param": "m", "shown": {"a": ["x"]}}
        )


def test_scaling_explorer_shows_each_methods_options_under_the_chapters_names():
    from posenc.book.presets import load_presets

    presets = load_presets()
    chosen = {name: presets[name] for name in ("llama-3.1-8b", "deepseek-v3")}
    spec = explorers.scaling_explorer(chosen, model="llama-3.1-8b").to_dict()
    controls = spec["usermeta"]["posenc"]["controls"]
    assert controls["param"] == "method"
    ramp = ["factor", "beta_fast", "beta_slow", "truncate"]
    assert controls["shown"] == {
        "published": [],
        "none": [],
        "linear": ["factor"],
        "ntk": ["factor"],
        "dynamic": ["factor"],
        "ntk_by_parts": ramp,
        "yarn": ramp,
        "llama3": ["factor", "low_freq_factor", "high_freq_factor"],
    }
    method = next(p for p in spec["params"] if p["name"] == "method")
    labels = dict(zip(method["bind"]["options"], method["bind"]["labels"]))
    assert labels["linear"] == "Position Interpolation"
    assert labels["ntk_by_parts"] == "NTK-by-parts" and labels["llama3"] == "Llama 3.1"
    assert not any("_" in label for label in labels.values())
    # "published" draws the model's own s and the summary names it
    assert "'published: ' +" in json.dumps(spec)
    assert explorers.published_setting(presets["deepseek-v3"]).startswith(
        "YaRN, s = 40, beta_fast 32"
    )
    assert explorers.published_setting(presets["llama-3.1-8b"]) == (
        "Llama 3.1, s = 8, low_freq_factor 1, high_freq_factor 4"
    )
    # on a phone the setting's options wrap to lines of at most 34 characters
    for name in presets:
        lines = explorers.published_setting(presets[name], line_length=34).split("\n")
        assert all(len(line) <= 34 for line in lines[1:]), lines
        assert ", ".join(lines).replace(",,", ",") == explorers.published_setting(
            presets[name]
        )
    # the factor menu starts at the starting model's own s
    factor = next(p for p in spec["params"] if p["name"] == "factor")
    assert factor["value"] == presets["llama-3.1-8b"].factor
    # the options' menus say what each does, in the chapter's words and letters: beta_fast
    # is the paper's beta (kept above), beta_slow its alpha (interpolated below), and
    # Llama 3.1's high_freq_factor and low_freq_factor play the same parts
    bound = {p["name"]: p["bind"]["name"] for p in spec["params"] if "bind" in p}
    for option in ("beta_fast", "high_freq_factor"):
        assert bound[option].startswith("β: keep pairs with more turns than")
    for option in ("beta_slow", "low_freq_factor"):
        assert bound[option].startswith("α: interpolate pairs with fewer turns than")
    assert bound["truncate"].strip() == "round the ramp's ends to whole pairs"
    assert not any("_" in label for label in bound.values())
    # the frequency panel's title names only what every view draws; the summary names the
    # diamonds, and only when some pair meets unseen angles
    text = json.dumps(spec)
    assert "vermilion" not in json.dumps(
        [v["title"] for v in spec["vconcat"] if "title" in v]
    )
    assert "no pair meets unseen angles" in text
    assert "unseen angles' + ' ' + '(vermilion diamonds)'" in text


def test_scaling_explorer_opens_on_the_view_it_is_given():
    from posenc.book.presets import load_presets

    presets = load_presets()
    chosen = {name: presets[name] for name in ("llama-2-7b", "llama-3.1-8b")}
    spec = explorers.scaling_explorer(
        chosen, model="llama-2-7b", method="ntk_by_parts", factor=16.0
    ).to_dict()
    values = {p["name"]: p.get("value") for p in spec["params"]}
    assert (values["model"], values["method"], values["factor"]) == (
        "llama-2-7b",
        "ntk_by_parts",
        16.0,
    )
    narrow = spec["usermeta"]["posenc"]["narrow"]
    assert {p["name"]: p.get("value") for p in narrow["params"]} == values
    with pytest.raises(ValueError, match="method"):
        explorers.scaling_explorer(chosen, model="llama-2-7b", method="rope")
    with pytest.raises(ValueError, match="factor"):
        explorers.scaling_explorer(chosen, model="llama-2-7b", factor=5.0)
    with pytest.raises(ValueError, match="model"):
        explorers.scaling_explorer(chosen, model="llama-2")


def test_explorer_html_is_deterministic_and_safe_inside_a_script():
    chart = explorers.rope_explorer(QUERY, KEY, num_positions=4)
    first = explorers.explorer_html(chart, "rope", 'q and k "rotating"').data
    second = explorers.explorer_html(chart, "rope", 'q and k "rotating"').data
    assert first == second
    assert 'class="posenc-explorer" id="explorer-rope"' in first
    assert "&quot;rotating&quot;" in first
    script = first.split("<script", 1)[1]
    assert "</" not in script.split("</script>")[0]
    spec = json.loads(script.split("var spec = ", 1)[1].split(";\n", 1)[0])
    assert spec["params"]
    with pytest.raises(ValueError, match="name"):
        explorers.explorer_html(chart, "Not valid", "x")
    with pytest.raises(ValueError, match="description"):
        explorers.explorer_html(chart, "rope", " ")


# ----------------------------------------------------------------- presets and results


def test_preset_grid_draws_phi3s_long_factors_at_its_target_length():
    from posenc.book.presets import load_presets

    presets = load_presets()
    chosen = {
        name: presets[name] for name in ("llama-2-7b", "phi-3-mini-128k-instruct")
    }
    tables, of_model = grids.preset_grid(chosen)
    assert of_model == {
        "llama-2-7b": "d128-base10000-L4096",
        "phi-3-mini-128k-instruct": "d96-base10000-L4096",
    }
    phi3 = chosen["phi-3-mini-128k-instruct"]
    published = [r for r in tables["settings"] if r["method"] == "published"]
    assert [r["geometry"] for r in published] == list(chosen)
    record = published[1]
    # 131072 / 4096 = 32 and the target 32 L is past L: theta'_i = theta_i / long_factor_i,
    # attention sqrt(1 + ln 32 / ln 4096) (Phi-3's own formula, from its config's numbers)
    long_factor = np.array(phi3.options["long_factor"])
    assert record["factor"] == 32.0
    np.testing.assert_allclose(record["scale"], 1 / long_factor, rtol=5e-4)
    assert record["attention"] == pytest.approx(
        np.sqrt(1 + np.log(32) / np.log(4096)), rel=5e-4
    )
    # both geometries carry the full grid of methods
    assert {r["geometry"] for r in tables["settings"]} == {*of_model.values(), *chosen}


def test_experiment_grid_bins_by_the_middle_of_each_distance_bin():
    from pathlib import Path

    from posenc.experiments import analysis
    from posenc.experiments.config import DEFAULT_DIR

    root = Path(__file__).resolve().parents[1] / DEFAULT_DIR
    results = {seed: analysis.read_results(root / f"seed_{seed}") for seed in (0, 1)}
    tables = grids.experiment_grid(results, bin_width=128)
    setting = analysis.find_setting(results[1], "base", "yarn", 1024)
    distances = analysis.setting_distances(results[1], 1024)
    correct = analysis.setting_correct(setting)
    rows = {
        r["distance"]: r["accuracy"]
        for r in tables["by_distance"]
        if (r["method"], r["length"], r["seed"]) == ("yarn", 1024, 1)
    }
    # bins [128 k, 128 (k + 1)) are drawn at their middles 64, 192, ..., 960
    assert sorted(rows) == [128 * k + 64 for k in range(8)]
    for middle, accuracy in rows.items():
        inside = (distances >= middle - 64) & (distances < middle + 64)
        assert accuracy == pytest.approx(correct[inside].mean(), rel=1e-3)
    by_length = {
        (r["method"], r["length"], r["statistic"], r["seed"]): r
        for r in tables["by_length"]
    }
    mean = by_length[("yarn", 1024, "mean", -1)]
    per_seed = [by_length[("yarn", 1024, "seed", s)]["accuracy"] for s in (0, 1)]
    assert mean["accuracy"] == pytest.approx(np.mean(per_seed), rel=1e-3)
    assert (mean["low"], mean["high"]) == (min(per_seed), max(per_seed))
    with pytest.raises(ValueError, match="results_by_seed"):
        grids.experiment_grid({})


def _legends(spec):
    """Every legend dict in a Vega-Lite spec, depth first."""
    if isinstance(spec, dict):
        if isinstance(spec.get("legend"), dict):
            yield spec["legend"], spec.get("scale", {}).get("domain")
        for value in spec.values():
            yield from _legends(value)
    elif isinstance(spec, list):
        for value in spec:
            yield from _legends(value)


def test_experiment_explorer_phone_legend_fits_its_rows_within_the_phone_layout():
    """Each row of the phone legend fits the narrow width, with text measured in DejaVu Sans.

    DejaVu Sans is wider than the browsers' sans-serif, so a fit here is a fit on the page.
    A column is as wide as its longest name plus the symbol (about 24 px with its offset).
    """
    from pathlib import Path

    from matplotlib.font_manager import FontProperties
    from matplotlib.textpath import TextPath

    from posenc.book.explorers.vega import NARROW_WIDTH
    from posenc.book.plotting import METHOD_STYLE
    from posenc.experiments import analysis
    from posenc.experiments.config import DEFAULT_DIR

    root = Path(__file__).resolve().parents[1] / DEFAULT_DIR
    results = {seed: analysis.read_results(root / f"seed_{seed}") for seed in (0, 1)}
    spec = explorers.experiment_explorer(
        results, train_length=128, styles=METHOD_STYLE
    ).to_dict()
    narrow = [
        (legend, names)
        for legend, names in _legends(spec["usermeta"]["posenc"]["narrow"])
        if names
    ]
    assert narrow, "the phone layout has a method legend"
    font = FontProperties(family="DejaVu Sans")
    for legend, names in narrow:
        columns, size = legend["columns"], legend["labelFontSize"]
        assert size >= 12
        widths = [
            max(
                TextPath((0, 0), n, size=size, prop=font).get_extents().width
                for n in names[j::columns]
            )
            + 24
            for j in range(columns)
        ]
        row = sum(widths) + legend["columnPadding"] * (columns - 1)
        assert row <= NARROW_WIDTH, (columns, size, round(row))


def test_experiment_explorer_names_methods_as_the_chapter_and_draws_the_floor():
    from pathlib import Path

    from posenc.book.plotting import METHOD_NAMES, METHOD_STYLE
    from posenc.experiments import analysis
    from posenc.experiments.config import DEFAULT_DIR

    root = Path(__file__).resolve().parents[1] / DEFAULT_DIR
    results = {seed: analysis.read_results(root / f"seed_{seed}") for seed in (0, 1)}
    floor = {n: 0.1 + n / 10_000 for n in (128, 256, 512, 1024)}
    spec = explorers.experiment_explorer(
        results, train_length=128, styles=METHOD_STYLE, floor=floor
    ).to_dict()
    drawn = {row["method"] for row in spec["datasets"]["by_length"]}
    chapter = ["none", "linear", "ntk", "dynamic", "ntk_by_parts", "yarn"]
    assert drawn == {METHOD_NAMES[m] for m in chapter}
    assert not any("_" in name for name in drawn)
    text = json.dumps(spec)
    # the legend lists them in the chapter's order, each in its figure colour
    domain = [METHOD_NAMES[m] for m in chapter]
    colours = [METHOD_STYLE[m][0] for m in chapter]
    assert json.dumps({"domain": domain, "range": colours})[1:-1] in text
    assert spec["datasets"]["floor"] == [
        {"length": n, "floor": value} for n, value in floor.items()
    ]
    assert (
        text.count('"data": {"name": "floor"}') == 4
    )  # line and rule, wide and narrow
    assert "no marker matching" in text
    without = explorers.experiment_explorer(results, train_length=128).to_dict()
    assert "floor" not in without["datasets"]
    with pytest.raises(ValueError, match="floor must give every drawn length"):
        explorers.experiment_explorer(results, train_length=128, floor={128: 0.2})


def test_experiment_explorer_draws_two_coinciding_methods_as_one_named_line():
    from pathlib import Path

    from posenc.book.plotting import METHOD_STYLE
    from posenc.experiments import analysis
    from posenc.experiments.config import DEFAULT_DIR

    root = Path(__file__).resolve().parents[1] / DEFAULT_DIR
    results = analysis.read_all_results(
        root
    )  # the five seeds: the chapter's bound holds
    spec = explorers.experiment_explorer(
        results, train_length=128, styles=METHOD_STYLE, same_line={"dynamic": "ntk"}
    ).to_dict()
    for table in ("by_length", "by_distance"):
        drawn = {row["method"] for row in spec["datasets"][table]}
        assert "NTK-aware (= dynamic NTK here)" in drawn
        assert not drawn & {"NTK-aware", "dynamic NTK"}
    with pytest.raises(ValueError, match="same_line: dynamic and ntk differ"):
        explorers.experiment_explorer(
            results,
            train_length=128,
            same_line={"dynamic": "ntk"},
            same_line_tolerance=1e-6,
        )
    with pytest.raises(ValueError, match="same_line: yarn and none differ"):
        explorers.experiment_explorer(
            results, train_length=128, same_line={"yarn": "none"}
        )
