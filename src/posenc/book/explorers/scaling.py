"""Chapter 5's explorer: every scaling method on published models' heads."""

from __future__ import annotations

import altair as alt

from posenc.book import plotting
from posenc.book.explorers.vega import (
    NARROW_WIDTH,
    Datasets,
    menu,
    responsive,
    styled,
)
from posenc.book.plotting import PALETTE


def _explorer_methods() -> tuple[str, ...]:
    """ "published" (the chosen model's own setting), then every method of
    :func:`posenc.rope_scaling` that takes no per-model data (LongRoPE's factor lists belong
    to a model: it is drawn as a Phi model's "published" setting; p-RoPE's
    partial_rotary_factor, the share of pairs a model rotates, is a design of the model,
    not a way to extend one trained with plain RoPE, and it is not among chapter 5's
    methods)."""
    from posenc.scaling import SCALING_METHODS

    return ("published",) + tuple(
        name for name, entry in SCALING_METHODS.items() if not entry.required
    )


#: The methods the scaling explorer offers.
EXPLORER_METHODS = _explorer_methods()

#: Each method under chapter 5's name, as the explorer's menu and its summary line say it.
METHOD_NAMES = {"published": "as published by the model", **plotting.METHOD_NAMES}

#: The options the explorer has a control for (on the grid of
#: :mod:`posenc.book.explorer_grids`), in the order the controls appear.
OFFERED_OPTIONS = (
    "beta_fast",
    "beta_slow",
    "truncate",
    "low_freq_factor",
    "high_freq_factor",
)


def _controls_of() -> dict[str, list[str]]:
    """The controls each method reads, from :data:`posenc.scaling.SCALING_METHODS`: the
    factor if it takes one, and those of its options the explorer offers. "published" reads
    none: the model's own s and options are drawn, and printed in the summary line."""
    from posenc.scaling import SCALING_METHODS

    controls = {"published": []}
    for name in EXPLORER_METHODS[1:]:
        entry = SCALING_METHODS[name]
        controls[name] = ["factor"] * entry.takes_factor + [
            option for option in OFFERED_OPTIONS if option in entry.options
        ]
    return controls


#: The controls shown with each method (the model and the method are always shown).
CONTROLS_OF = _controls_of()


def _quoted(text: str) -> str:
    """``text`` as a Vega expression's string literal, in single quotes (line breaks as
    \\n); text with a quote is refused, so an expression never needs an escaped quote."""
    if "'" in text or '"' in text or "\\" in text:
        raise ValueError(f"text for an expression must hold no quote, got {text!r}")
    return "'" + text.replace("\n", "\\n") + "'"


def published_setting(preset, *, line_length: int | None = None) -> str:
    """What a model publishes, in words: its method under chapter 5's name and s, then its
    options (LongRoPE's per-pair factor lists named, not printed). ``line_length``: the
    options go on lines of at most that many characters after the first (None: one line)."""
    if preset.method == "none":
        return "no scaling"
    head = f"{METHOD_NAMES[preset.method]}, s = {preset.factor:g}"
    options = []
    for name, value in preset.options.items():
        if isinstance(value, (list, tuple)):
            options.append(f"{name} ({len(value)} values)")
        elif isinstance(value, bool):
            options.append(f"{name} {str(value).lower()}")
        else:
            options.append(f"{name} {value:g}")
    if line_length is None:
        return ", ".join([head, *options])
    lines = [head]
    for k, option in enumerate(options):
        text = option + ("," if k < len(options) - 1 else "")
        if len(lines) > 1 and len(lines[-1]) + 1 + len(text) <= line_length:
            lines[-1] += " " + text
        else:
            lines.append(text)
    lines[0] += "," if options else ""
    return "\n".join(lines)


#: The menus' words for the options, as chapter 5 says them: the ramp's bounds are turns
#: within L (NTK-by-parts' beta_fast is the paper's beta, beta_slow its alpha; Llama 3.1's
#: high_freq_factor and low_freq_factor play the same parts), and truncate rounds the ramp's
#: ends outwards to whole pairs.
OPTION_LABELS = {
    "factor": "factor s ",
    "beta_fast": "β: keep pairs with more turns than ",
    "beta_slow": "α: interpolate pairs with fewer turns than ",
    "truncate": "round the ramp's ends to whole pairs ",
    "low_freq_factor": "α: interpolate pairs with fewer turns than ",
    "high_freq_factor": "β: keep pairs with more turns than ",
}


def scaling_explorer(
    presets: dict,
    *,
    model: str,
    method: str = "published",
    factor: float | None = None,
) -> alt.VConcatChart:
    """Choose a published model and a method with its options; see what each pair does.

    ``presets``: name -> :class:`posenc.book.presets.Preset`; the model fixes the head dim,
    base and original context L. ``model``, ``method`` (one of :data:`EXPLORER_METHODS`)
    and ``factor`` (one of the grid's s; None: the model's own s if the grid holds it,
    else 4) are the view the explorer opens on. Data: :func:`posenc.book.explorer_grids.preset_grid` (every
    method on the grid of :mod:`posenc.book.explorer_grids` for each model's geometry, and
    each model's own setting as "published"). Draws the frequency scale theta'_i / theta_i
    of every pair (pairs that meet angles never met in training marked), the turns each
    pair makes within the original and the target context s L, and the attention factor.
    For "yarn" it draws NTK-by-parts' rows (the same frequencies) with YaRN's attention
    factor. The menu names the methods as chapter 5 does (:data:`METHOD_NAMES`); the page
    shows only the controls the chosen method reads (:data:`CONTROLS_OF`): none for
    "published", whose method, s and options the summary line prints
    (:func:`published_setting`). A phone gets the same panels 250 px wide
    (:func:`~posenc.book.explorers.vega.responsive`).
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
    if method not in EXPLORER_METHODS:
        raise ValueError(f"method must be one of {EXPLORER_METHODS}, got {method!r}")
    if factor is not None and factor not in FACTORS:
        raise ValueError(f"factor must be one of {FACTORS}, got {factor!r}")
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
    chosen_method = alt.param(
        name="method",
        value=method,
        bind=alt.binding_select(
            options=list(EXPLORER_METHODS),
            labels=[METHOD_NAMES[m] for m in EXPLORER_METHODS],
            name="method ",
        ),
    )
    # A method chosen after "published" starts at the starting model's own s.
    if factor is None:
        start = presets[model].factor
        factor = start if start in FACTORS else 4.0
    chosen_factor = menu("factor", OPTION_LABELS["factor"], FACTORS, factor)
    beta_fast = menu("beta_fast", OPTION_LABELS["beta_fast"], BETA_FAST, 32.0)
    beta_slow = menu("beta_slow", OPTION_LABELS["beta_slow"], BETA_SLOW, 1.0)
    truncate = alt.param(
        name="truncate",
        value=True,
        bind=alt.binding_checkbox(name=OPTION_LABELS["truncate"]),
    )
    low = menu("low_freq_factor", OPTION_LABELS["low_freq_factor"], LOW_FREQ, 1.0)
    high = menu("high_freq_factor", OPTION_LABELS["high_freq_factor"], HIGH_FREQ, 4.0)

    def published_of(line_length):
        return (
            "{"
            + ", ".join(
                f"'{n}': {_quoted(published_setting(p, line_length=line_length))}"
                for n, p in presets.items()
            )
            + "}[model]"
        )

    name_of = (
        "{"
        + ", ".join(f"'{m}': {_quoted(METHOD_NAMES[m])}" for m in EXPLORER_METHODS)
        + "}"
    )
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
    turns_table = data.table("turns", tables["turns"])
    attention_table = data.table("attention", tables["attention"])
    one_turn_table = data.table("one_turn", [{"turns": 1}])
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

    def softmax_note(gap):
        return (
            f"(method == 'published' && isValid({softmax_of}[model]) ? "
            f"{gap} + 'softmax scale × ' + format({softmax_of}[model], '.4f') : '')"
        )

    def setting_text(line_length):
        return (
            f"(method == 'published' ? 'published: ' + {published_of(line_length)} : "
            f"{name_of}[method] + "
            "(method == 'none' ? '' : ', s = ' + factor))"
        )

    def build(narrow: bool) -> alt.VConcatChart:
        width = NARROW_WIDTH - 70 if narrow else 560
        # The summary: the setting on its first line, then the factors (on a phone each
        # on its own line, the published options two to a line).
        gap = "'\\n'" if narrow else "' · '"
        setting = setting_text(34 if narrow else None)
        settings = (
            alt.Chart(settings_table)
            .transform_filter(chosen)
            .transform_flatten(["scale", "turns_target"])
            .transform_window(index="row_number()")
            .transform_calculate(
                pair="datum.index - 1",
                meets="indexof(datum.unseen, datum.index - 1) >= 0 ? "
                "'unseen angles' : 'seen'",
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
            width=width,
            height=150 if narrow else 170,
            name="scale",
            title="Frequency scale of each pair",
        )
        turns_original = (
            alt.Chart(turns_table)
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
            alt.Chart(one_turn_table)
            .mark_rule(color="#555555", strokeDash=[2, 2])
            .encode(y="turns:Q")
        )
        turns_chart = (turns_original + turns_target + one_turn).properties(
            width=width,
            height=150 if narrow else 170,
            name="turns",
            title="Turns each pair makes (dotted: one turn)",
        )
        summary_source = settings.transform_filter("datum.pair == 0")
        # the diamonds are named only when there are some; on a phone on a line of their own
        marked = gap if narrow else "' '"
        text = alt.Text("text:N")
        # Vega writes a multi-line text downwards from its first line, whatever the
        # baseline: the summary starts at the top of its view, one line high, and its
        # further lines extend the view's bounds, which the stack lays out (Vega-Lite's
        # concat bounds are "full"), so the frequency panel starts just under the last
        # line and no blank band opens under the controls, however many lines (a phone's
        # DeepSeek-V3 has six: three of its setting, three of factors).
        summary_height = 16
        line = {
            "align": "left",
            "baseline": "top",
            "fontSize": 13,
            "fontWeight": "bold",
            "lineBreak": "\n",
        }
        # YaRN draws NTK-by-parts' rows (the same frequencies, the same unseen pairs) with
        # its own attention factor, looked up by s in the table "attention".
        summary = (
            summary_source.transform_lookup(
                lookup="factor",
                from_=alt.LookupData(
                    data=attention_table, key="factor", fields=["attention"]
                ),
                as_=["yarn_attention"],
            )
            .transform_calculate(
                text=f"{setting} + '\\n' + 'cos/sin factor ' + format(method == 'yarn' ? "
                "datum.yarn_attention : datum.attention, '.4~r') + "
                f"{softmax_note(gap)} + {gap} + "
                "(length(datum.unseen) == 0 ? 'no pair meets unseen angles' : "
                "length(datum.unseen) + (length(datum.unseen) == 1 ? ' pair meets' : "
                "' pairs meet') + ' unseen angles' + "
                f"{marked} + '(vermilion diamonds)')"
            )
            .mark_text(**line)
            .encode(text=text, x=alt.value(0), y=alt.value(0))
            .properties(width=width, height=summary_height, name="summary")
        )
        chart = alt.vconcat(summary, scale_chart, turns_chart).add_params(
            chosen_model,
            chosen_method,
            chosen_factor,
            beta_fast,
            beta_slow,
            truncate,
            low,
            high,
        )
        return styled(chart.properties(datasets=data))

    return responsive(
        build(False),
        build(True),
        wide_width=680,
        controls={
            "param": "method",
            "shown": {m: CONTROLS_OF[m] for m in EXPLORER_METHODS},
        },
    )
