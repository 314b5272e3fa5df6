"""Chapter 4's explorer: a query and a key rotating, in both layouts."""

from __future__ import annotations

from collections.abc import Sequence

import altair as alt

from posenc.book.explorers.vega import Datasets, menu, responsive, slider, styled
from posenc.book.plotting import PALETTE

#: The small query and key (d = 8, four pairs) chapter 4's explorer rotates by default.
EXAMPLE_QUERY = (1.0, 0.0, 0.5, 0.5, 0.0, 1.0, 1.0, 1.0)
EXAMPLE_KEY = (0.5, 1.0, 0.0, 1.0, 1.0, 0.0, 0.9, -0.4)  # pair 3 apart from the query


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
    one circled; its stripes run along n - m = constant, the score's only dependence.
    On a phone the four pairs are two rows of two and the board is smaller
    (:func:`~posenc.book.explorers.vega.responsive`).
    """
    from posenc.book.explorer_grids import rope_pairs_grid

    tables = rope_pairs_grid(query, key, num_positions=num_positions)
    data = Datasets()
    positions = range(num_positions)
    m = slider("query_position", "query position m ", positions, query_position)
    n = slider("key_position", "key position n ", positions, key_position)
    layout = menu(
        "layout", "layout ", ["interleaved", "half"], "interleaved", radio=True
    )
    vectors, vector_columns = data.packed(
        "vectors", tables["vectors"], ["layout", "vector", "position"]
    )
    chosen = (
        "datum.layout == layout && ((datum.vector == 'query' && datum.position == "
        "query_position) || (datum.vector == 'key' && datum.position == key_position))"
    )
    scores, score_columns = data.packed(
        "scores", tables["scores"], ["layout", "query_position"]
    )
    limit = 1.05 * max(max(abs(row["x"]), abs(row["y"])) for row in tables["vectors"])
    ticks = list(range(0, num_positions, 4))

    def build(narrow: bool) -> alt.VConcatChart:
        axis = alt.Scale(domain=[-limit, limit])
        arrows = (
            alt.Chart(
                vectors,
                title=["Each pair of q_m (solid, blue)", "and k_n (dashed, vermilion)"]
                if narrow
                else "Each pair of q_m (solid, blue) and k_n (dashed, vermilion)",
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
                # a phone gets the four pairs as two rows of two
                facet=alt.Facet("pair:N", title="pair i", columns=2 if narrow else 4),
            )
            .properties(
                width=120 if narrow else 110,
                height=120 if narrow else 110,
                name="pairs",
            )
        )
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
                    # beside the whole stack on a screen; on a phone under the board
                    legend=alt.Legend(orient="bottom") if narrow else alt.Legend(),
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
                # the grid's offset is m - n; the chapter writes n - m
                text="'q·k = ' + format(datum.score, '.4f')"
                " + ' at n − m = ' + (-datum.offset)"
            )
            .mark_text(align="left", baseline="bottom", fontSize=13, fontWeight="bold")
            .encode(x=alt.value(0), y=alt.value(-8), text="text:N")
        )
        scored = (board + circle + label).properties(
            width=240 if narrow else 330,
            height=240 if narrow else 330,
            name="scores",
            title=alt.TitleParams("The score q_m · k_n for every (m, n)", offset=26),
        )
        chart = alt.vconcat(arrows, scored).add_params(m, n, layout)
        return styled(chart.properties(datasets=data))

    return responsive(build(False), build(True), wide_width=560)
