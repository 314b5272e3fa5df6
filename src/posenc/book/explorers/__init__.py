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

The explorers, one module each: :mod:`~posenc.book.explorers.sinusoidal` (chapter 2),
:mod:`~posenc.book.explorers.rope` (chapter 4), :mod:`~posenc.book.explorers.scaling`
(chapter 5) and :mod:`~posenc.book.explorers.experiment` (chapter 6); what they share (packing,
controls, style, the page's HTML, the layout for a phone) is :mod:`~posenc.book.explorers.vega`.
Every explorer has two layouts (:func:`~posenc.book.explorers.vega.responsive`): the wide one
for the book's column, and one for a phone, its panels stacked within 320 px, its controls
above the drawing in both.
"""

from posenc.book.explorers.experiment import experiment_explorer
from posenc.book.explorers.rope import EXAMPLE_KEY, EXAMPLE_QUERY, rope_explorer
from posenc.book.explorers.scaling import (
    CONTROLS_OF,
    EXPLORER_METHODS,
    METHOD_NAMES,
    published_setting,
    scaling_explorer,
)
from posenc.book.explorers.sinusoidal import sinusoidal_explorer
from posenc.book.explorers.vega import (
    EMBED_OPTIONS,
    NARROW_WIDTH,
    Datasets,
    explorer_html,
    packed,
    responsive,
    still_png,
)

__all__ = [
    "CONTROLS_OF",
    "EMBED_OPTIONS",
    "EXAMPLE_KEY",
    "EXAMPLE_QUERY",
    "EXPLORER_METHODS",
    "METHOD_NAMES",
    "NARROW_WIDTH",
    "Datasets",
    "experiment_explorer",
    "explorer_html",
    "packed",
    "published_setting",
    "responsive",
    "rope_explorer",
    "scaling_explorer",
    "sinusoidal_explorer",
    "still_png",
]
