"""Explorers: figures a reader can move in the static book, drawn by Vega-Lite from posenc's numbers.

Each explorer is a Vega-Lite specification written with Altair. Its data are the tables of
:mod:`posenc.book.explorer_grids`, computed by posenc at build time on a stated grid; the
controls (sliders, menus) only choose which rows are drawn, so no formula is ever written in
JavaScript. :func:`explorer_html` puts a specification into a page: a ``<div>`` with the class
``posenc-explorer`` and a script that draws it with Vega-Embed, which the book serves once
from ``_static/vega/`` (``book/_ext/offline_vega.py``) to the pages that hold an explorer.
Without scripts the ``<div>`` stays empty and the static figure next to it still tells the story.

Tables go into the specification column by column (:func:`packed`): one record per group of
rows, each other column a list, unpacked in the browser by Vega-Lite's ``flatten`` transform.
A table of numbers costs about a third of its row-by-row JSON.
"""

from __future__ import annotations

import base64
import html
import json
import re
from collections.abc import Sequence

import altair as alt

from posenc.book.plotting import PALETTE

#: The Vega-Embed options of every explorer: SVG (so a test can read what is drawn), no menu.
EMBED_OPTIONS = {"renderer": "svg", "actions": False}


def packed(rows: Sequence[dict], by: Sequence[str]) -> tuple[list[dict], list[str]]:
    """``rows`` grouped by the columns ``by``: one record per group, the other columns as lists.

    Returns the records and the names of the list columns, to pass to
    ``transform_flatten``; every row must have the same columns. Group order and row order
    within a group are kept.
    """
    rows = list(rows)
    if not rows:
        raise ValueError("rows must hold at least one row")
    columns = list(rows[0])
    by = list(by)
    missing = [name for name in by if name not in columns]
    if missing:
        raise ValueError(f"by names columns the rows lack: {missing}")
    listed = [name for name in columns if name not in by]
    groups: dict[tuple, dict] = {}
    for row in rows:
        if list(row) != columns:
            raise ValueError(
                f"every row must have the columns {columns}, got {list(row)}"
            )
        key = tuple(row[name] for name in by)
        if key not in groups:
            groups[key] = {
                **{name: row[name] for name in by},
                **{n: [] for n in listed},
            }
        for name in listed:
            groups[key][name].append(row[name])
    return list(groups.values()), listed


class Datasets(dict):
    """The tables of one explorer, by name: stored once at the top of its specification.

    Charts refer to a table by name (:meth:`table`), so a table drawn by several layers is
    not copied into each.
    """

    def table(self, name: str, records: list[dict]) -> alt.NamedData:
        if name in self:
            raise ValueError(f"table {name!r} is stored already")
        self[name] = records
        return alt.NamedData(name=name)

    def packed(
        self, name: str, rows: Sequence[dict], by: Sequence[str]
    ) -> tuple[alt.NamedData, list[str]]:
        """:func:`packed` ``rows`` stored as table ``name``, and the columns to flatten."""
        records, listed = packed(rows, by)
        return self.table(name, records), listed


def still_png(chart: alt.TopLevelMixin) -> bytes:
    """The explorer's starting state as a PNG (drawn by vl-convert, the same Vega as the page)."""
    import vl_convert

    version = alt.SCHEMA_VERSION.lstrip("v").rsplit(".", 1)[0]
    return vl_convert.vegalite_to_png(chart.to_dict(), scale=1, vl_version=version)


def explorer_html(chart: alt.TopLevelMixin, name: str, description: str):
    """The explorer as HTML for a notebook output (``IPython.display.HTML``).

    ``name``: an identifier unique on the page (the element id is ``explorer-<name>``);
    ``description``: what the explorer shows, read by screen readers (``aria-label``) and the
    alt text of its still. The element first holds a still of the starting state
    (:func:`still_png`), which stays with scripts off and in print; when the page has loaded
    Vega, the live explorer replaces it. The specification is written with sorted keys and
    no spaces, so a stored output is the same on every run (the still's PNG bytes depend on
    the machine's fonts: ``book/nbval_sanitize.cfg`` replaces embedded PNGs).
    """
    if not isinstance(name, str) or not re.fullmatch(r"[a-z][a-z0-9-]*", name):
        raise ValueError(
            f"name must be lower-case letters, digits and '-', got {name!r}"
        )
    if not isinstance(description, str) or not description.strip():
        raise ValueError("description must say what the explorer shows")
    from IPython.display import HTML

    # "</" inside a <script> would end it early; JSON may write "<\\/" instead.
    spec = json.dumps(chart.to_dict(), sort_keys=True, separators=(",", ":"))
    spec = spec.replace("</", "<\\/")
    options = json.dumps(EMBED_OPTIONS, sort_keys=True, separators=(",", ":"))
    element = f"explorer-{name}"
    label = html.escape(description, quote=True)
    still = base64.b64encode(still_png(chart)).decode("ascii")
    return HTML(
        f'<div class="posenc-explorer" id="{element}" role="figure" aria-label="{label}">\n'
        f'<div class="posenc-explorer-still"><img src="data:image/png;base64,{still}" '
        f'alt="{label} (the starting state; with scripts on, the controls move it)"></div>\n'
        '<div class="posenc-explorer-live"></div>\n'
        "</div>\n"
        '<script type="text/javascript">\n'
        "(function () {\n"
        f"  var spec = {spec};\n"
        "  function draw() {\n"
        "    if (!window.vegaEmbed) { return; }\n"
        f'    var root = document.getElementById("{element}");\n'
        '    window.vegaEmbed(root.querySelector(".posenc-explorer-live"), spec, '
        f"{options})\n"
        "      .then(function () {\n"
        '        var still = root.querySelector(".posenc-explorer-still");\n'
        "        if (still) { still.remove(); }\n"
        "      })\n"
        "      .catch(function (error) { console.error(error); });\n"
        "  }\n"
        '  if (document.readyState === "complete") { draw(); }\n'
        '  else { window.addEventListener("load", draw); }\n'
        "})();\n"
        "</script>"
    )


def _styled(chart: alt.TopLevelMixin) -> alt.TopLevelMixin:
    """The explorers' text sizes: at least 11 px for ticks and legends, like the figures."""
    return (
        chart.configure_axis(labelFontSize=11, titleFontSize=12)
        .configure_legend(labelFontSize=11, titleFontSize=12, symbolSize=120)
        .configure_title(fontSize=13)
        .configure_view(strokeWidth=0)
        .configure_header(labelFontSize=12, titleFontSize=12)
    )


def _slider(
    name: str, label: str, values: Sequence[float], value: float
) -> alt.Parameter:
    """A parameter bound to a slider over evenly spaced ``values`` (integers or a step)."""
    values = list(values)
    step = values[1] - values[0] if len(values) > 1 else 1
    return alt.param(
        name=name,
        value=value,
        bind=alt.binding_range(min=values[0], max=values[-1], step=step, name=label),
    )


def _menu(name: str, label: str, options: Sequence, value, radio: bool = False):
    """A parameter bound to a drop-down menu (or radio buttons) over ``options``."""
    binding = alt.binding_radio if radio else alt.binding_select
    return alt.param(
        name=name, value=value, bind=binding(options=list(options), name=label)
    )


# ----------------------------------------------------------------- chapter 2


def sinusoidal_explorer(
    d_models: Sequence[int] = (16, 32, 64, 128, 256, 512),
    bases: Sequence[float] = (100.0, 1000.0, 10000.0, 100000.0),
    *,
    d_model: int = 64,
    base: float = 10000.0,
) -> alt.VConcatChart:
    """Choose d_model and the base; see PE as a heatmap, the wavelengths, and PE(p).PE(p+k).

    Data: :func:`posenc.book.explorer_grids.sinusoidal_grid` over ``d_models`` x ``bases``;
    the reader's choice selects one (d_model, base) of it. Starts at (``d_model``, ``base``).
    """
    from posenc.book.explorer_grids import sinusoidal_grid

    tables = sinusoidal_grid(d_models, bases)
    data = Datasets()
    chosen_d = _menu("d_model", "d_model ", d_models, d_model)
    chosen_base = _menu("base", "base ", bases, base)
    choice = "datum.d == d_model && datum.base == base"
    heat_data, heat_columns = data.packed("heatmap", tables["heatmap"], ["d", "base"])
    heatmap = (
        alt.Chart(heat_data, title="PE[p, 2i]: the sine of each pair")
        .transform_filter(choice)
        .transform_flatten(heat_columns)
        .mark_rect()
        .encode(
            x=alt.X(
                "pair:O",
                title="pair i (a sample of the pairs, evenly spaced)",
                axis=alt.Axis(labelOverlap="greedy", labelAngle=0),
            ),
            y=alt.Y(
                "p:O", title="position p", axis=alt.Axis(values=list(range(0, 64, 8)))
            ),
            color=alt.Color(
                "value:Q",
                scale=alt.Scale(scheme="redblue", reverse=True, domain=[-1, 1]),
                title="value",
            ),
        )
        .properties(width=560, height=192, name="heatmap")
    )
    wave_data, wave_columns = data.packed(
        "wavelengths", tables["wavelengths"], ["d", "base"]
    )
    waves = (
        alt.Chart(wave_data, title="Wavelength of pair i, in positions")
        .transform_filter(choice)
        .transform_flatten(wave_columns)
        .mark_line(point=alt.OverlayMarkDef(size=12), color=PALETTE[0])
        .encode(
            x=alt.X("pair:Q", title="pair i"),
            y=alt.Y(
                "wavelength:Q",
                scale=alt.Scale(type="log"),
                title="wavelength",
                axis=alt.Axis(values=[1, 10, 100, 1000, 10000, 100000], format="~s"),
            ),
        )
        .properties(width=250, height=140, name="wavelengths")
    )
    dot_data, dot_columns = data.packed("dot", tables["dot"], ["d", "base"])
    dots = (
        alt.Chart(dot_data, title="PE(p) · PE(p + k) against the offset k")
        .transform_filter(choice)
        .transform_flatten(dot_columns)
        .mark_line(color=PALETTE[1], strokeDash=[5, 2])
        .encode(
            x=alt.X("offset:Q", title="offset k"), y=alt.Y("dot:Q", title="dot product")
        )
        .properties(width=250, height=140, name="dot")
    )
    chart = alt.vconcat(heatmap, alt.hconcat(waves, dots)).add_params(
        chosen_d, chosen_base
    )
    return _styled(chart.properties(datasets=data))


# ----------------------------------------------------------------- chapter 4


#: The small query and key (d = 8, four pairs) chapter 4's explorer rotates by default.
EXAMPLE_QUERY = (1.0, 0.0, 0.5, 0.5, 0.0, 1.0, 1.0, 1.0)
EXAMPLE_KEY = (0.5, 1.0, 0.0, 1.0, 1.0, 0.0, 0.2, 0.3)


def rope_explorer(
    query: Sequence[float] = EXAMPLE_QUERY,
    key: Sequence[float] = EXAMPLE_KEY,
    *,
    num_positions: int = 32,
    query_position: int = 6,
    key_position: int = 2,
) -> alt.VConcatChart:
    """Move the query's and the key's positions; see each pair rotate and the score q_m . k_n.

    Data: :func:`posenc.book.explorer_grids.rope_pairs_grid` for positions
    0 .. num_positions - 1 in both layouts. Top: each pair of the rotated query (solid) and
    key (dashed) as arrows from the origin. Bottom: the score for every (m, n), the chosen
    one circled; its stripes run along m - n = constant, the score's only dependence.
    """
    from posenc.book.explorer_grids import rope_pairs_grid

    tables = rope_pairs_grid(query, key, num_positions=num_positions)
    data = Datasets()
    positions = range(num_positions)
    m = _slider("query_position", "query position m ", positions, query_position)
    n = _slider("key_position", "key position n ", positions, key_position)
    layout = _menu(
        "layout", "layout ", ["interleaved", "half"], "interleaved", radio=True
    )
    vectors, vector_columns = data.packed(
        "vectors", tables["vectors"], ["layout", "vector", "position"]
    )
    chosen = (
        "datum.layout == layout && ((datum.vector == 'query' && datum.position == "
        "query_position) || (datum.vector == 'key' && datum.position == key_position))"
    )
    limit = 1.05 * max(max(abs(row["x"]), abs(row["y"])) for row in tables["vectors"])
    axis = alt.Scale(domain=[-limit, limit])
    arrows = (
        alt.Chart(
            vectors, title="Each pair of q_m (solid, blue) and k_n (dashed, vermilion)"
        )
        .transform_filter(chosen)
        .transform_flatten(vector_columns)
        .transform_calculate(origin="0")
        .mark_rule(strokeWidth=2.5)
        .encode(
            x=alt.X("origin:Q", scale=axis, title=None),
            y=alt.Y("origin:Q", scale=axis, title=None),
            x2="x:Q",
            y2="y:Q",
            color=alt.Color(
                "vector:N",
                scale=alt.Scale(
                    domain=["query", "key"], range=[PALETTE[0], PALETTE[1]]
                ),
                legend=None,
            ),
            strokeDash=alt.StrokeDash(
                "vector:N",
                scale=alt.Scale(domain=["query", "key"], range=[[1, 0], [5, 3]]),
                legend=None,
            ),
            column=alt.Column("pair:N", title="pair i"),
        )
        .properties(width=110, height=110, name="pairs")
    )
    scores, score_columns = data.packed(
        "scores", tables["scores"], ["layout", "query_position"]
    )
    ticks = list(range(0, num_positions, 4))
    board = (
        alt.Chart(scores)
        .transform_filter("datum.layout == layout")
        .transform_flatten(score_columns)
        .mark_rect()
        .encode(
            x=alt.X(
                "key_position:O",
                title="key position n",
                axis=alt.Axis(values=ticks, labelAngle=0),
            ),
            y=alt.Y(
                "query_position:O",
                title="query position m",
                axis=alt.Axis(values=ticks),
            ),
            color=alt.Color(
                "score:Q",
                scale=alt.Scale(scheme="redblue", reverse=True, domainMid=0),
                title="q·k",
            ),
        )
    )
    here = (
        alt.Chart(scores)
        .transform_filter(
            "datum.layout == layout && datum.query_position == query_position"
        )
        .transform_flatten(score_columns)
        .transform_filter("datum.key_position == key_position")
    )
    circle = here.mark_point(
        size=140, filled=False, color="black", strokeWidth=2
    ).encode(x="key_position:O", y="query_position:O")
    label = (
        here.transform_calculate(
            text="'q·k = ' + format(datum.score, '.4f') + ' at m − n = ' + datum.offset"
        )
        .mark_text(align="left", baseline="bottom", fontSize=13, fontWeight="bold")
        .encode(x=alt.value(0), y=alt.value(-8), text="text:N")
    )
    scored = (board + circle + label).properties(
        width=330,
        height=330,
        name="scores",
        title=alt.TitleParams("The score q_m · k_n for every (m, n)", offset=26),
    )
    chart = alt.vconcat(arrows, scored).add_params(m, n, layout)
    return _styled(chart.properties(datasets=data))


# ----------------------------------------------------------------- chapter 5


def _explorer_methods() -> tuple[str, ...]:
    """ "published" (the chosen model's own setting), then every method of
    :func:`posenc.rope_scaling` that takes no per-model data (LongRoPE's factor lists belong
    to a model: it is drawn as a Phi model's "published" setting)."""
    from posenc.scaling import SCALING_METHODS

    return ("published",) + tuple(
        name for name, entry in SCALING_METHODS.items() if not entry.required
    )


#: The methods the scaling explorer offers.
EXPLORER_METHODS = _explorer_methods()


def scaling_explorer(presets: dict, *, model: str) -> alt.VConcatChart:
    """Choose a published model and a method with its options; see what each pair does.

    ``presets``: name -> :class:`posenc.book.presets.Preset`; the model fixes the head dim,
    base and original context L. Data: :func:`posenc.book.explorer_grids.preset_grid` (every
    method on the grid of :mod:`posenc.book.explorer_grids` for each model's geometry, and
    each model's own setting as "published"). Draws the frequency scale theta'_i / theta_i
    of every pair (pairs that meet angles never met in training marked), the turns each
    pair makes within the original and the target context s L, and the attention factor.
    For "yarn" it draws NTK-by-parts' rows (the same frequencies) with YaRN's attention
    factor. Options a method does not read are ignored.
    """
    from posenc.book.explorer_grids import (
        BETA_FAST,
        BETA_SLOW,
        FACTORS,
        HIGH_FREQ,
        LOW_FREQ,
        preset_grid,
    )
    from posenc.scaling import yarn_mscale

    if model not in presets:
        raise ValueError(f"model must be one of {sorted(presets)}, got {model!r}")
    tables, of_model = preset_grid(presets)
    data = Datasets()
    settings_table = data.table("settings", tables["settings"])
    names = list(presets)
    chosen_model = alt.param(
        name="model",
        value=model,
        bind=alt.binding_select(
            options=names,
            labels=[presets[n].model.split("/")[-1] for n in names],
            name="model ",
        ),
    )
    geometry = (
        "{" + ", ".join(f"'{n}': '{g}'" for n, g in of_model.items()) + "}[model]"
    )
    method = alt.param(
        name="method",
        value="published",
        bind=alt.binding_select(
            options=list(EXPLORER_METHODS),
            labels=["published (its own s and options)", *EXPLORER_METHODS[1:]],
            name="method ",
        ),
    )
    factor = _menu("factor", "factor s ", FACTORS, 4.0)
    beta_fast = _menu("beta_fast", "beta_fast ", BETA_FAST, 32.0)
    beta_slow = _menu("beta_slow", "beta_slow ", BETA_SLOW, 1.0)
    truncate = alt.param(
        name="truncate", value=True, bind=alt.binding_checkbox(name="truncate ")
    )
    low = _menu("low_freq_factor", "low_freq_factor ", LOW_FREQ, 1.0)
    high = _menu("high_freq_factor", "high_freq_factor ", HIGH_FREQ, 4.0)
    chosen = (
        "(method == 'published' && datum.method == 'published' && "
        "datum.geometry == model) || "
        f"(method != 'published' && datum.geometry == {geometry} && "
        "datum.method == (method == 'yarn' ? 'ntk_by_parts' : method) && "
        "(datum.method == 'none' || datum.factor == factor) && "
        "(datum.method != 'ntk_by_parts' || (datum.beta_fast == beta_fast && "
        "datum.beta_slow == beta_slow && datum.truncate == (truncate ? 1 : 0))) && "
        "(datum.method != 'llama3' || (datum.low_freq_factor == low_freq_factor && "
        "datum.high_freq_factor == high_freq_factor)))"
    )
    settings = (
        alt.Chart(settings_table)
        .transform_filter(chosen)
        .transform_flatten(["scale", "turns_target"])
        .transform_window(index="row_number()")
        .transform_calculate(
            pair="datum.index - 1",
            meets="indexof(datum.unseen, datum.index - 1) >= 0 ? 'unseen angles' : 'seen'",
        )
    )
    scale = settings.mark_line(
        color=PALETTE[0], point=alt.OverlayMarkDef(size=18)
    ).encode(
        x=alt.X("pair:Q", title="pair i"),
        y=alt.Y(
            "scale:Q",
            scale=alt.Scale(type="log"),
            title="θ′ᵢ / θᵢ",
            axis=alt.Axis(values=[0.01, 0.03, 0.1, 0.3, 1], format="~g"),
        ),
    )
    unseen = (
        settings.transform_filter("datum.meets == 'unseen angles'")
        .mark_point(shape="diamond", size=70, filled=True, color=PALETTE[1])
        .encode(x="pair:Q", y="scale:Q")
    )
    scale_chart = (scale + unseen).properties(
        width=560,
        height=170,
        name="scale",
        title="Frequency scale of each pair (vermilion diamonds: angles never met in training)",
    )
    turns_original = (
        alt.Chart(data.table("turns", tables["turns"]))
        .transform_filter(f"datum.geometry == {geometry}")
        .transform_flatten(["turns_original"])
        .transform_window(index="row_number()")
        .transform_calculate(pair="datum.index - 1", context="'original context L'")
        .mark_line(strokeDash=[5, 3])
        .encode(
            x=alt.X("pair:Q", title="pair i"),
            y=alt.Y(
                "turns_original:Q",
                scale=alt.Scale(type="log"),
                title="full turns",
                axis=alt.Axis(
                    values=[0.001, 0.01, 0.1, 1, 10, 100, 1000, 10000, 100000],
                    format="~g",
                ),
            ),
            color=alt.Color(
                "context:N",
                scale=alt.Scale(
                    domain=["original context L", "target context sL"],
                    range=[PALETTE[2], PALETTE[3]],
                ),
                title=None,
                legend=alt.Legend(orient="bottom", direction="horizontal"),
            ),
        )
    )
    turns_target = (
        settings.transform_calculate(context="'target context sL'")
        .mark_line()
        .encode(x="pair:Q", y="turns_target:Q", color="context:N")
    )
    one_turn = (
        alt.Chart(data.table("one_turn", [{"turns": 1}]))
        .mark_rule(color="#555555", strokeDash=[2, 2])
        .encode(y="turns:Q")
    )
    turns_chart = (turns_original + turns_target + one_turn).properties(
        width=560,
        height=170,
        name="turns",
        title="Turns each pair makes (dotted: one turn)",
    )
    summary_source = settings.transform_filter("datum.pair == 0")
    # The attention factor multiplies cos and sin. DeepSeek's attention (mscale_all_dim
    # set) also multiplies its softmax scale by yarn_mscale(s, mscale_all_dim)^2: say so.
    softmax_scale = {
        name: yarn_mscale(p.factor, float(p.options["mscale_all_dim"])) ** 2
        for name, p in presets.items()
        if p.method == "yarn" and p.options.get("mscale_all_dim")
    }
    softmax_of = (
        "{" + ", ".join(f"'{n}': {v!r}" for n, v in softmax_scale.items()) + "}"
    )
    softmax_note = (
        f"(method == 'published' && isValid({softmax_of}[model]) ? "
        f"' · softmax scale × ' + format({softmax_of}[model], '.4f') : '')"
    )
    attention_text = (
        summary_source.transform_filter("method != 'yarn'")
        .transform_calculate(
            text="'s = ' + datum.factor + ' · cos/sin factor ' + "
            f"format(datum.attention, '.4f') + {softmax_note} + ' · ' + "
            "length(datum.unseen) + ' pairs meet unseen angles'"
        )
        .mark_text(align="left", baseline="middle", fontSize=13, fontWeight="bold")
        .encode(text="text:N", x=alt.value(0), y=alt.value(10))
    )
    yarn_attention = (
        alt.Chart(data.table("attention", tables["attention"]))
        .transform_filter("method == 'yarn' && datum.factor == factor")
        .transform_calculate(
            text="'s = ' + datum.factor + ' · cos/sin factor ' + "
            "format(datum.attention, '.4f') + ' (YaRN)'"
        )
        .mark_text(align="left", baseline="middle", fontSize=13, fontWeight="bold")
        .encode(text="text:N", x=alt.value(0), y=alt.value(10))
    )
    summary = (attention_text + yarn_attention).properties(
        width=560, height=20, name="summary"
    )
    chart = alt.vconcat(summary, scale_chart, turns_chart).add_params(
        chosen_model, method, factor, beta_fast, beta_slow, truncate, low, high
    )
    return _styled(chart.properties(datasets=data))


# ----------------------------------------------------------------- chapter 6


#: matplotlib line styles and markers as Vega dash patterns and point shapes.
_DASH_OF = {"-": [1, 0], "--": [6, 3], "-.": [6, 2, 1, 2], ":": [1, 2]}
_SHAPE_OF = {
    "o": "circle",
    "s": "square",
    "D": "diamond",
    "^": "triangle-up",
    "v": "triangle-down",
    "x": "cross",
}


def experiment_explorer(
    results_by_seed: dict[int, dict],
    *,
    bin_width: int = 64,
    train_length: int,
    styles: dict[str, tuple[str, str, str]] | None = None,
) -> alt.VConcatChart:
    """Toggle methods; see accuracy against length and against distance, per seed or as a band.

    Data: :func:`posenc.book.explorer_grids.experiment_grid`. Click a method in the legend to
    show or hide it (shift-click for several); "seeds" draws each seed's curve, "mean and
    spread" the mean with a band from the lowest to the highest seed. ``train_length``: L,
    for the length axis and the distance panel's menu (2L, 4L, 8L). ``styles``: method ->
    (colour, matplotlib marker, matplotlib line style), so the explorer draws each method as
    the chapter's figures do (default: the book's palette in method order).
    """
    from posenc.book.explorer_grids import experiment_grid

    tables = experiment_grid(results_by_seed, bin_width)
    data = Datasets()
    methods = sorted({row["method"] for row in tables["by_length"]})
    view = _menu("view", "show ", ["seeds", "mean and spread"], "mean and spread", True)
    lengths = [train_length * k for k in (2, 4, 8)]
    length = alt.param(
        name="length",
        value=lengths[-1],
        bind=alt.binding_radio(
            options=lengths,
            labels=[f"{k}L" for k in (2, 4, 8)],
            name="distance panel at ",
        ),
    )
    picked = alt.selection_point(name="picked", fields=["method"], bind="legend")
    if styles is None:
        styles = {
            m: (PALETTE[k % len(PALETTE)], "o", "-") for k, m in enumerate(methods)
        }
    missing = sorted(set(methods) - set(styles))
    if missing:
        raise ValueError(f"styles must give every method a style, missing {missing}")
    colour = alt.Color(
        "method:N",
        scale=alt.Scale(domain=methods, range=[styles[m][0] for m in methods]),
        title="method (click to pick)",
        legend=alt.Legend(orient="top", symbolOpacity=1, symbolStrokeWidth=2.5),
    )
    dash = alt.StrokeDash(
        "method:N",
        scale=alt.Scale(
            domain=methods, range=[_DASH_OF.get(styles[m][2], [1, 0]) for m in methods]
        ),
        legend=None,
    )
    shape = alt.Shape(
        "method:N",
        scale=alt.Scale(
            domain=methods,
            range=[_SHAPE_OF.get(styles[m][1], "circle") for m in methods],
        ),
        legend=None,
    )
    shown = alt.condition(picked, alt.value(1.0), alt.value(0.06))

    def panels(table, x, title, extra_filter="true"):
        base = alt.Chart(table).transform_filter(extra_filter)
        seeds = (
            base.transform_filter("view == 'seeds' && datum.statistic == 'seed'")
            .mark_line(strokeWidth=1.2, point=alt.OverlayMarkDef(size=14, filled=True))
            .encode(
                x=x,
                y=alt.Y("accuracy:Q", scale=alt.Scale(domain=[0, 1])),
                color=colour,
                strokeDash=dash,
                shape=shape,
                detail="seed:N",
                opacity=shown,
            )
        )
        band = (
            base.transform_filter("view != 'seeds' && datum.statistic == 'mean'")
            .mark_area(opacity=0.18)
            .encode(
                x=x,
                y="low:Q",
                y2="high:Q",
                color=colour,
                opacity=alt.condition(picked, alt.value(0.18), alt.value(0.02)),
            )
        )
        mean = (
            base.transform_filter("view != 'seeds' && datum.statistic == 'mean'")
            .mark_line(strokeWidth=2.2, point=alt.OverlayMarkDef(size=40, filled=True))
            .encode(
                x=x,
                y=alt.Y("accuracy:Q", title="accuracy"),
                color=colour,
                strokeDash=dash,
                shape=shape,
                opacity=shown,
            )
        )
        return (band + seeds + mean).properties(width=560, height=200, title=title)

    by_length = panels(
        data.table("by_length", tables["by_length"]),
        alt.X(
            "length:Q",
            scale=alt.Scale(type="log", base=2),
            title="length (tokens)",
            axis=alt.Axis(values=[train_length * k for k in (1, 2, 4, 8)]),
        ),
        "Accuracy over all needles against the length",
    ).add_params(picked)
    by_distance = panels(
        data.table("by_distance", tables["by_distance"]),
        alt.X(
            "distance:Q",
            title=f"distance needle to query (tokens, bins of {bin_width})",
        ),
        "Accuracy against the distance, at the chosen length",
        "datum.length == length",
    )
    chart = alt.vconcat(
        by_length.properties(name="by_length"),
        by_distance.properties(name="by_distance"),
    ).add_params(view, length)
    return _styled(chart.properties(datasets=data))
