"""Chapter 5's explorer: every scaling method on published models' heads."""

from __future__ import annotations

import altair as alt

from posenc.book.explorers.vega import Datasets, menu, styled
from posenc.book.plotting import PALETTE


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
    factor = menu("factor", "factor s ", FACTORS, 4.0)
    beta_fast = menu("beta_fast", "beta_fast ", BETA_FAST, 32.0)
    beta_slow = menu("beta_slow", "beta_slow ", BETA_SLOW, 1.0)
    truncate = alt.param(
        name="truncate", value=True, bind=alt.binding_checkbox(name="truncate ")
    )
    low = menu("low_freq_factor", "low_freq_factor ", LOW_FREQ, 1.0)
    high = menu("high_freq_factor", "high_freq_factor ", HIGH_FREQ, 4.0)
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
    return styled(chart.properties(datasets=data))
