"""Chapter 2's explorer: the sinusoidal encoding for other widths and bases."""

from __future__ import annotations

from collections.abc import Sequence

import altair as alt

from posenc.book.explorers.vega import Datasets, menu, styled
from posenc.book.plotting import PALETTE


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
    chosen_d = menu("d_model", "d_model ", d_models, d_model)
    chosen_base = menu("base", "base ", bases, base)
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
    return styled(chart.properties(datasets=data))
