"""The book's tools: modules that serve chapters, not the core library.

``naive`` and ``criteria`` (chapter 1), ``linear_maps`` (chapter 3's primer), ``precision``
(the performance appendix; imports torch), ``notebook`` (the set-up call every chapter's
first cell makes, and ``glue_figure``, which lets the text show a figure drawn in a fold
below), ``plotting`` (the figure style; imports matplotlib), ``presets``
(published models' RoPE settings, chapter 5; its files are package data),
``explorer_grids`` (the numbers the explorers draw) and ``explorers`` (the explorers'
Vega-Lite specifications; imports altair). They may import the core (``posenc``); the core
never imports them (ARCHITECTURE.md). Importing this package imports neither torch nor
matplotlib.
"""

from posenc.book.notebook import glue_figure, set_print_options, setup_notebook

__all__ = ["glue_figure", "set_print_options", "setup_notebook"]
