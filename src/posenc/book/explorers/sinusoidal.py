"""Chapter 2's explorer: the sinusoidal encoding for other widths and bases."""

from __future__ import annotations

from collections.abc import Sequence

import altair as alt

from posenc.book.explorers.vega import NARROW_WIDTH, Datasets, menu, responsive, styled
from posenc.book.plotting import PALETTE

#: The wide layout's width: the picture and, below it, the two small panels side by side.
_WIDE = {"picture": 560, "panel": 250, "row_height": 64, "panel_height": 140}
#: The phone's: every panel the same width, one under another.
_NARROW = {
    "picture": NARROW_WIDTH - 70,
    "panel": NARROW_WIDTH - 70,
    "row_height": 72,
    "panel_height": 120,
}


def _picture_title(narrow: bool) -> alt.TitleParams:
    # The chapter's words and its figures' orientation: a row is one pair i (its sine in
    # the upper block, its cosine in the lower), as the y axis says.
    title = "PE(p): one column per position, one row per pair i"
    sample = "(sines above cosines; a sample of the pairs when d_model > 32)"
    if narrow:
        return alt.TitleParams(
            ["PE(p): one column per position,", "one row per pair i"],
            subtitle=[
                "sines above cosines;",
                "a sample of the pairs when d_model > 32",
            ],
        )
    return alt.TitleParams(title, subtitle=sample)


def sinusoidal_explorer(
    d_models: Sequence[int] = (16, 32, 64, 128, 256, 512),
    bases: Sequence[float] = (100.0, 1000.0, 10000.0, 100000.0),
    *,
    d_model: int = 64,
    base: float = 10000.0,
) -> alt.VConcatChart:
    """Choose d_model and the base; see PE as a heatmap, the wavelengths, and PE(p).PE(p+Δ).

    Data: :func:`posenc.book.explorer_grids.sinusoidal_grid` over ``d_models`` x ``bases``;
    the reader's choice selects one (d_model, base) of it. Starts at (``d_model``, ``base``).
    The heatmap is drawn as the chapter draws the table: one column per position, one row per
    pair i, the sines of the pairs above and their cosines below (a sample of the pairs
    when there are more than 16). On a phone the three panels stack (:func:`responsive`).
    """
    from posenc.book.explorer_grids import sinusoidal_grid

    tables = sinusoidal_grid(d_models, bases)
    data = Datasets()
    chosen_d = menu("d_model", "model width ", d_models, d_model)
    chosen_base = menu("base", "base ", bases, base)
    # Each row of the picture is one (kind, pair) over the positions 0, 1, ...: stored as the
    # list of its values, in position order, the position being the place in the list.
    cells = tables["heatmap"]
    previous = [-1] + [r["p"] for r in cells[:-1]]
    if any(r["p"] not in (0, before + 1) for r, before in zip(cells, previous)):
        raise ValueError("the heatmap's rows must list positions 0, 1, ... in order")
    heat_data, heat_columns = data.packed(
        "heatmap",
        [{k: v for k, v in r.items() if k != "p"} for r in cells],
        ["d", "base", "kind", "pair"],
    )
    wave_data, wave_columns = data.packed(
        "wavelengths", tables["wavelengths"], ["d", "base"]
    )
    dot_data, dot_columns = data.packed("dot", tables["dot"], ["d", "base"])
    num_positions = max(r["p"] for r in cells) + 1

    def build(size: dict, narrow: bool) -> alt.VConcatChart:
        choice = "datum.d == d_model && datum.base == base"
        heatmap = (
            alt.Chart(heat_data)
            .transform_filter(choice)
            .transform_flatten(heat_columns)
            .transform_window(index="row_number()", groupby=["kind", "pair"])
            .transform_calculate(p="datum.index - 1")
            .mark_rect()
            .encode(
                x=alt.X(
                    "p:O",
                    title="position p",
                    axis=alt.Axis(
                        values=list(range(0, num_positions, 8)), labelAngle=0
                    ),
                ),
                y=alt.Y(
                    "pair:O",
                    title="pair i",
                    axis=alt.Axis(labelOverlap="greedy", labelFontSize=9),
                ),
                row=alt.Row(
                    "kind:N",
                    sort=["sin", "cos"],
                    title=None,
                    header=alt.Header(
                        labelExpr="datum.value == 'sin' ? 'sines sin(p ωᵢ)' : "
                        "'cosines cos(p ωᵢ)'",
                        labelAngle=0,
                        labelAlign="left",
                        labelAnchor="start",
                        labelOrient="top",
                        labelPadding=2,
                    ),
                ),
                color=alt.Color(
                    "value:Q",
                    scale=alt.Scale(scheme="redblue", reverse=True, domain=[-1, 1]),
                    title="PE(p)",
                    # In a stack of panels a legend goes beside the whole stack: on a phone
                    # it goes above it instead, not beside it.
                    legend=alt.Legend(
                        orient="top" if narrow else "right",
                        direction="horizontal" if narrow else "vertical",
                        gradientLength=120,
                        values=[-1, 0, 1],
                    ),
                ),
            )
            .properties(
                width=size["picture"],
                height=size["row_height"],
                name="heatmap",
                title=_picture_title(narrow),
            )
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
                    axis=alt.Axis(
                        values=[1, 10, 100, 1000, 10000, 100000], format="~s"
                    ),
                ),
            )
            .properties(
                width=size["panel"], height=size["panel_height"], name="wavelengths"
            )
        )
        dots = (
            alt.Chart(
                dot_data,
                title="PE(p) · PE(p + Δ) against the offset Δ",
            )
            .transform_filter(choice)
            .transform_flatten(dot_columns)
            .mark_line(color=PALETTE[1], strokeDash=[5, 2])
            .encode(
                x=alt.X("offset:Q", title="offset Δ"),
                y=alt.Y("dot:Q", title="dot product"),
            )
            .properties(width=size["panel"], height=size["panel_height"], name="dot")
        )
        panels = (
            [heatmap, waves, dots] if narrow else [heatmap, alt.hconcat(waves, dots)]
        )
        chart = alt.vconcat(*panels).add_params(chosen_d, chosen_base)
        return styled(chart.properties(datasets=data))

    return responsive(build(_WIDE, False), build(_NARROW, True), wide_width=680)
