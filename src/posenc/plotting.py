"""The book's one figure style and the few plot helpers more than one chapter uses.

Imported by name (``from posenc import plotting``); ``import posenc`` does not import matplotlib.
"""

from __future__ import annotations

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np

BOOK_STYLE = {
    "figure.figsize": (7.0, 4.0),
    "figure.dpi": 100,
    "savefig.format": "png",
    "font.size": 10,
    "axes.titlesize": 11,
    "axes.labelsize": 10,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "image.cmap": "RdBu_r",
    "legend.frameon": False,
    "svg.hashsalt": "posenc",
}


def use_book_style() -> None:
    """Apply the shared style and ask the inline backend for PNG figures only."""
    mpl.rcParams.update(BOOK_STYLE)
    try:
        from matplotlib_inline.backend_inline import set_matplotlib_formats

        set_matplotlib_formats("png")
    except ImportError:  # outside IPython there is no inline backend to configure
        pass


def heatmap(
    ax: plt.Axes,
    matrix: np.ndarray,
    *,
    title: str,
    xlabel: str,
    ylabel: str,
    symmetric: bool = True,
    colorbar: bool = True,
    annotate: bool = False,
) -> mpl.image.AxesImage:
    """Draw ``matrix`` (rows down, columns across) with a diverging map centred on 0 when ``symmetric``.

    ``annotate`` writes each value with two decimals, for small matrices.
    """
    matrix = np.asarray(matrix, dtype=np.float64)
    if matrix.ndim != 2:
        raise ValueError(f"matrix must be 2-D, got shape {matrix.shape}")
    if symmetric:
        limit = float(np.max(np.abs(matrix))) or 1.0
        image = ax.imshow(matrix, aspect="auto", cmap="RdBu_r", vmin=-limit, vmax=limit, interpolation="nearest")
    else:
        image = ax.imshow(matrix, aspect="auto", cmap="viridis", interpolation="nearest")
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(False)
    if annotate:
        for (row, column), entry in np.ndenumerate(matrix):
            ax.text(column, row, f"{entry:.2f}", ha="center", va="center", fontsize=8)
    if colorbar:
        ax.figure.colorbar(image, ax=ax)
    return image
