"""The one set-up call every chapter's first cell makes, and the call that pastes a figure into
the text above the code that draws it."""

from __future__ import annotations

import os
import random

import numpy as np

from posenc._validation import check_non_negative_int, check_positive_int

PRINT_OPTIONS = {"precision": 4, "suppress": True, "linewidth": 75}


def set_print_options() -> None:
    """Fix numpy's print options for every stored notebook output (4 decimals, no scientific noise)."""
    np.set_printoptions(**PRINT_OPTIONS)


def torch_threads_from_environment() -> int:
    """The torch thread count a notebook uses unless told otherwise: ``OMP_NUM_THREADS``, else 1.

    `make test` sets ``OMP_NUM_THREADS=1``; `make portability` sets 1 and 2 in turn, and the
    notebooks must follow it, or the second run would silently repeat the first.
    """
    value = os.environ.get("OMP_NUM_THREADS", "").strip()
    if not value:
        return 1
    first = value.split(",")[0]  # OpenMP allows a list of counts for nested levels
    if not first.isdigit() or int(first) < 1:
        raise ValueError(f"OMP_NUM_THREADS must be a positive integer, got {value!r}")
    return int(first)


def setup_notebook(
    seed: int = 0, *, use_torch: bool = False, torch_threads: int | None = None
) -> np.random.Generator:
    """Seed numpy (and Python's ``random``), fix print options and the shared figure style.

    With ``use_torch`` it also seeds torch and fixes its thread count (``torch_threads``, by
    default :func:`torch_threads_from_environment`: ``OMP_NUM_THREADS``, else 1), so chapters
    that train get the same numbers on every run of this machine. Returns a seeded
    ``np.random.Generator`` for the chapter to draw from.
    """
    from posenc.book import (
        plotting,  # imported here: `import posenc` must not import matplotlib
    )

    seed = check_non_negative_int(seed, "seed")
    if torch_threads is not None:
        torch_threads = check_positive_int(torch_threads, "torch_threads")
    set_print_options()
    random.seed(seed)
    np.random.seed(seed)
    plotting.use_book_style()
    if use_torch:
        import torch

        torch.manual_seed(seed)
        torch.set_num_threads(
            torch_threads_from_environment() if torch_threads is None else torch_threads
        )
    return np.random.default_rng(seed)


def glue_figure(name: str, figure) -> None:
    """Show ``figure`` under its cell and record it as ``name`` for the book's text.

    A section keeps its plotting code and checks in one fold at its end; the book's text
    shows the figure earlier (myst-nb's glue, which reads the stored output): a matplotlib
    ``Figure`` with ``{glue:figure} name`` (it is closed here, so the notebook does not
    draw it twice), an ``IPython.display.HTML`` (an animation or an explorer) with
    ``{glue} name``, from a cell tagged ``remove-output`` so that its element ids appear
    once on the page. Where myst-nb is missing (Colab) it is only shown under its cell.
    """
    if not isinstance(name, str):
        raise TypeError(f"name must be a str, got {type(name).__name__}")
    if not name.strip():
        raise ValueError("name must not be empty")
    from IPython.display import HTML
    from matplotlib.figure import Figure

    if not isinstance(figure, (Figure, HTML)):
        raise TypeError(
            "figure must be a matplotlib Figure or an IPython HTML object, got "
            f"{type(figure).__name__}"
        )
    try:
        from myst_nb import glue
    except ImportError:
        from IPython.display import display

        display(figure)
    else:
        glue(name, figure, display=True)
    if isinstance(figure, Figure):
        import matplotlib.pyplot as plt

        plt.close(figure)
