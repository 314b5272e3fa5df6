"""What every explorer shares: tables packed column by column, the controls, the text style,
and the HTML that puts a specification and its still into a page."""

from __future__ import annotations

import base64
import html
import json
import re
from collections.abc import Sequence

import altair as alt

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


#: The widest explorer drawing that fits a 390 px phone: its article column (358 px) less the
#: strip at the right edge that the back-to-top button takes (book/_static/book.css).
NARROW_WIDTH = 320


def responsive(
    wide: alt.TopLevelMixin,
    narrow: alt.TopLevelMixin,
    *,
    wide_width: int,
    controls: dict | None = None,
) -> alt.TopLevelMixin:
    """``wide`` carrying ``narrow``, the same explorer laid out for a phone, in its ``usermeta``.

    Both layouts draw the same tables (``narrow``'s are dropped: the page stores them once);
    the page draws ``wide`` where the explorer's box is at least ``wide_width`` px wide and
    ``narrow`` elsewhere, and switches, keeping the controls' values, when the box is resized.
    ``controls``: ``{"param": p, "shown": {value: [names]}}`` shows, while the parameter
    ``p`` has a value, only the bound controls listed for it among those listed for any value
    (so a method's options appear only with that method).
    """
    wide_spec, narrow_spec = wide.to_dict(), narrow.to_dict()
    if narrow_spec.pop("datasets", None) != wide_spec.get("datasets"):
        raise ValueError("narrow must draw the same tables as wide")
    meta: dict = {"narrow": narrow_spec, "wide_width": int(wide_width)}
    if controls is not None:
        bound = {p["name"] for p in wide_spec.get("params", []) if "bind" in p}
        named = {controls["param"]} | {
            name for names in controls["shown"].values() for name in names
        }
        if not named <= bound:
            raise ValueError(f"controls names unbound parameters: {named - bound}")
        meta["controls"] = controls
    return wide.properties(usermeta={"posenc": meta})


# The page's script: draws the layout that fits the box (responsive), puts the controls in
# the box above the drawing, shows only the controls that apply, redraws on a resize that
# changes the layout. It computes nothing the reader sees: every number is in the spec.
_SCRIPT = """(function () {
  var spec = %(spec)s;
  var options = %(options)s;
  var meta = (spec.usermeta || {}).posenc || {};
  var view = null, layout = null;
  function root() { return document.getElementById("%(element)s"); }
  function specFor(kind, values) {
    var base = kind === "narrow" ? Object.assign({}, meta.narrow, {datasets: spec.datasets}) : spec;
    var params = (base.params || []).map(function (p) {
      return p.bind && !p.select && p.name in values ? Object.assign({}, p, {value: values[p.name]}) : p;
    });
    return Object.assign({}, base, {params: params});
  }
  function values() {
    var carried = {};
    if (!view) { return carried; }
    (spec.params || []).forEach(function (p) {
      if (p.bind && !p.select) { try { carried[p.name] = view.signal(p.name); } catch (e) {} }
    });
    return carried;
  }
  function showControls() {
    if (!meta.controls || !view) { return; }
    var shown = meta.controls.shown[view.signal(meta.controls.param)] || [];
    var listed = [].concat.apply([], Object.values(meta.controls.shown));
    root().querySelectorAll(".vega-bind").forEach(function (bind) {
      var input = bind.querySelector("[name]");
      var name = input ? input.getAttribute("name") : null;
      if (listed.indexOf(name) >= 0) { bind.hidden = shown.indexOf(name) < 0; }
    });
  }
  function draw() {
    if (!window.vegaEmbed) { return; }
    var box = root();
    var kind = meta.narrow && box.clientWidth < meta.wide_width ? "narrow" : "wide";
    if (kind === layout) { return; }
    var carried = values();
    layout = kind;
    if (view) { view.finalize(); view = null; }
    var controls = box.querySelector(".posenc-explorer-controls");
    controls.innerHTML = "";
    window.vegaEmbed(box.querySelector(".posenc-explorer-live"), specFor(kind, carried),
                     Object.assign({bind: controls}, options))
      .then(function (result) {
        view = result.view;
        box.dataset.layout = kind;
        var still = box.querySelector(".posenc-explorer-still");
        if (still) { still.remove(); }
        showControls();
        if (meta.controls) { view.addSignalListener(meta.controls.param, showControls); }
      })
      .catch(function (error) { console.error(error); });
  }
  var pending = null;
  window.addEventListener("resize", function () {
    clearTimeout(pending);
    pending = setTimeout(draw, 150);
  });
  if (document.readyState === "complete") { draw(); }
  else { window.addEventListener("load", draw); }
})();"""


def explorer_html(chart: alt.TopLevelMixin, name: str, description: str):
    """The explorer as HTML for a notebook output (``IPython.display.HTML``).

    ``name``: an identifier unique on the page (the element id is ``explorer-<name>``);
    ``description``: what the explorer shows, read by screen readers (``aria-label``) and the
    alt text of its still. The element first holds a still of the starting state
    (:func:`still_png`), which stays with scripts off and in print; when the page has loaded
    Vega, the live explorer replaces it, its controls above the drawing, in the layout that
    fits the box (:func:`responsive`). The specification is written with sorted keys and
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
    script = _SCRIPT % {"spec": spec, "options": options, "element": element}
    return HTML(
        f'<div class="posenc-explorer" id="{element}" role="figure" aria-label="{label}">\n'
        '<div class="posenc-explorer-controls vega-bindings"></div>\n'
        f'<div class="posenc-explorer-still"><img src="data:image/png;base64,{still}" '
        f'alt="{label} (the starting state; with scripts on, the controls move it)"></div>\n'
        '<div class="posenc-explorer-live"></div>\n'
        "</div>\n"
        f'<script type="text/javascript">\n{script}\n</script>'
    )


def styled(chart: alt.TopLevelMixin) -> alt.TopLevelMixin:
    """The explorers' text sizes: at least 11 px for ticks and legends, like the figures."""
    return (
        chart.configure_axis(labelFontSize=11, titleFontSize=12)
        .configure_legend(labelFontSize=11, titleFontSize=12, symbolSize=120)
        .configure_title(fontSize=13)
        .configure_view(strokeWidth=0)
        .configure_header(
            labelFontSize=12,
            titleFontSize=12,
            labelFont="sans-serif",
            titleFont="sans-serif",
        )
    )


def slider(
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


def menu(name: str, label: str, options: Sequence, value, radio: bool = False):
    """A parameter bound to a drop-down menu (or radio buttons) over ``options``."""
    binding = alt.binding_radio if radio else alt.binding_select
    return alt.param(
        name=name, value=value, bind=binding(options=list(options), name=label)
    )
