"""Chapter 6's explorer: the experiment's accuracies per method and seed."""

from __future__ import annotations

import altair as alt

from posenc.book.explorers.vega import (
    NARROW_WIDTH,
    Datasets,
    menu,
    responsive,
    styled,
)
from posenc.book.plotting import METHOD_NAMES, PALETTE

#: The phone layout's legend: methods a row and label size (px), within 320 px.
NARROW_LEGEND_COLUMNS = 2
NARROW_LEGEND_FONT = 13

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
    floor: dict[int, float] | None = None,
    same_line: dict[str, str] | None = None,
    same_line_tolerance: float = 0.005,
) -> alt.VConcatChart:
    """Toggle methods; see accuracy against length and against distance, per seed or as a band.

    Data: :func:`posenc.book.explorer_grids.experiment_grid`. Click a method in the legend to
    show or hide it (shift-click for several); "seeds" draws each seed's curve, "mean and
    spread" the mean with a band from the lowest to the highest seed. ``train_length``: L,
    for the length axis and the distance panel's menu (2L, 4L, 8L). ``styles``: method ->
    (colour, matplotlib marker, matplotlib line style), so the explorer draws each method as
    the chapter's figures do (default: the book's palette in method order). ``floor``:
    length -> the accuracy of guessing without matching the query marker, drawn as a grey
    dashed line against the length and as a rule at the chosen length (None: not drawn).
    The legend names each method as the chapter does (``METHOD_NAMES``).
    ``same_line``: method -> the method whose line it is drawn as, where the two coincide
    (chapter 6: ``{"dynamic": "ntk"}``); the first is not drawn and the second is named
    "NTK-aware (= dynamic NTK here)". Raises ValueError unless, at every length and in
    every distance bin, the two methods' means over the seeds differ by less than
    ``same_line_tolerance`` (the chapter asserts the same bound on its figures).
    """
    from posenc.book.explorer_grids import experiment_grid

    tables = experiment_grid(results_by_seed, bin_width)
    names = dict(METHOD_NAMES)
    for hidden, drawn in (same_line or {}).items():
        _check_same_line(tables, hidden, drawn, same_line_tolerance)
        names[drawn] = f"{names.get(drawn, drawn)} (= {names.get(hidden, hidden)} here)"
        tables = {
            key: [row for row in rows if row["method"] != hidden]
            for key, rows in tables.items()
        }
    data = Datasets()
    present = {row["method"] for row in tables["by_length"]}
    # the chapter's order of the methods, then any other in alphabetical order
    codes = [m for m in METHOD_NAMES if m in present] + sorted(
        present - set(METHOD_NAMES)
    )
    view = menu("view", "show ", ["seeds", "mean and spread"], "mean and spread", True)
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
        styles = {m: (PALETTE[k % len(PALETTE)], "o", "-") for k, m in enumerate(codes)}
    missing = sorted(set(codes) - set(styles))
    if missing:
        raise ValueError(f"styles must give every method a style, missing {missing}")
    # the drawing and its legend name each method as the chapter does
    methods = [names.get(m, m) for m in codes]
    styles = {names.get(m, m): styles[m] for m in codes}
    by_length_table = data.table("by_length", _named(tables["by_length"], names))
    by_distance_table = data.table("by_distance", _named(tables["by_distance"], names))
    drawn_lengths = sorted({row["length"] for row in tables["by_length"]})
    if floor is not None:
        missing = sorted(set(drawn_lengths) - set(floor))
        if missing:
            raise ValueError(f"floor must give every drawn length, missing {missing}")
        floor_table = data.table(
            "floor",
            [{"length": n, "floor": float(floor[n])} for n in drawn_lengths],
        )

    def build(narrow: bool) -> alt.VConcatChart:
        colour = alt.Color(
            "method:N",
            scale=alt.Scale(domain=methods, range=[styles[m][0] for m in methods]),
            title="method (click to pick)",
            # on a phone the methods in rows of two, in larger text, so that the longest
            # name ("Position Interpolation") does not run into the next marker
            legend=alt.Legend(
                orient="top",
                symbolOpacity=1,
                symbolStrokeWidth=2.5,
                # one name a row when a merged name is too long to share one
                columns=(1 if same_line else NARROW_LEGEND_COLUMNS) if narrow else 0,
                columnPadding=16,
                labelFontSize=NARROW_LEGEND_FONT if narrow else 11,
                labelLimit=0,  # no cut: "NTK-aware (= dynamic NTK here)" in full
            ),
        )
        dash = alt.StrokeDash(
            "method:N",
            scale=alt.Scale(
                domain=methods,
                range=[_DASH_OF.get(styles[m][2], [1, 0]) for m in methods],
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
                .mark_line(
                    strokeWidth=1.2, point=alt.OverlayMarkDef(size=14, filled=True)
                )
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
                .mark_line(
                    strokeWidth=2.2, point=alt.OverlayMarkDef(size=40, filled=True)
                )
                .encode(
                    x=x,
                    y=alt.Y("accuracy:Q", title="accuracy"),
                    color=colour,
                    strokeDash=dash,
                    shape=shape,
                    opacity=shown,
                )
            )
            return (band + seeds + mean).properties(
                width=NARROW_WIDTH - 60 if narrow else 560,
                height=170 if narrow else 200,
                title=title,
            )

        by_length = panels(
            by_length_table,
            alt.X(
                "length:Q",
                scale=alt.Scale(type="log", base=2),
                title="length (tokens)",
                axis=alt.Axis(values=[train_length * k for k in (1, 2, 4, 8)]),
            ),
            ["Accuracy over all needles", "against the length"]
            if narrow
            else "Accuracy over all needles against the length",
        ).add_params(picked)
        if floor is not None:
            by_length = by_length + _floor_line(floor_table, "length:Q")
        by_distance = panels(
            by_distance_table,
            alt.X(
                "distance:Q",
                title=["distance needle to query", f"(tokens, bins of {bin_width})"]
                if narrow
                else f"distance needle to query (tokens, bins of {bin_width})",
            ),
            ["Accuracy against the distance,", "at the chosen length"]
            if narrow
            else "Accuracy against the distance, at the chosen length",
            "datum.length == length",
        )
        if floor is not None:
            by_distance = by_distance + _floor_rule(floor_table)
        chart = alt.vconcat(
            by_length.properties(name="by_length"),
            by_distance.properties(name="by_distance"),
        ).add_params(view, length)
        return styled(chart.properties(datasets=data))

    return responsive(build(False), build(True), wide_width=680)


def _named(rows: list[dict], names: dict[str, str]) -> list[dict]:
    """The grid's rows with each method under the chapter's name."""
    return [{**row, "method": names.get(row["method"], row["method"])} for row in rows]


def _check_same_line(tables: dict, hidden: str, drawn: str, tolerance: float) -> None:
    """Every mean of ``hidden`` within ``tolerance`` of ``drawn``'s, by length and distance."""
    for key, rows in tables.items():
        means = {
            (row["method"], row["length"], row.get("distance")): row["accuracy"]
            for row in rows
            if row["statistic"] == "mean" and row["method"] in (hidden, drawn)
        }
        for (method, length, distance), value in means.items():
            if method != hidden:
                continue
            other = means.get((drawn, length, distance))
            if other is None or abs(value - other) >= tolerance:
                raise ValueError(
                    f"same_line: {hidden} and {drawn} differ by {tolerance} or more "
                    f"({key}, length {length}, distance {distance})"
                )


_FLOOR_STYLE = {"color": "#4d4d4d", "strokeDash": [5, 3], "strokeWidth": 1.5}
_FLOOR_TITLE = "no marker matching"


def _floor_line(table: alt.NamedData, x: str) -> alt.LayerChart:
    """The floor against the length: a grey dashed line, named at the shortest length."""
    base = alt.Chart(table).encode(
        x=alt.X(x),
        y=alt.Y("floor:Q"),
        tooltip=[alt.Tooltip("floor:Q", title=_FLOOR_TITLE)],
    )
    line = base.mark_line(
        **_FLOOR_STYLE,
        point=alt.OverlayMarkDef(size=16, filled=True, color=_FLOOR_STYLE["color"]),
    )
    label = (  # above the line at the shortest length, where no method's line passes
        base.transform_window(rank="rank()", sort=[alt.SortField("length")])
        .transform_filter("datum.rank == 1")
        .mark_text(align="left", dx=4, dy=-8, fontSize=11, color="#333333")
        .encode(text=alt.value(_FLOOR_TITLE))
    )
    return line + label


def _floor_rule(table: alt.NamedData) -> alt.LayerChart:
    """The floor at the chosen length, across the distance panel."""
    base = alt.Chart(table).transform_filter("datum.length == length")
    rule = base.mark_rule(**_FLOOR_STYLE).encode(
        y=alt.Y("floor:Q"), tooltip=[alt.Tooltip("floor:Q", title=_FLOOR_TITLE)]
    )
    label = base.mark_text(
        align="left", x=4, dy=-8, fontSize=11, color="#333333"
    ).encode(y=alt.Y("floor:Q"), text=alt.value(_FLOOR_TITLE))
    return rule + label
