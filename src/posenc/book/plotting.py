"""The book's one figure style and the few plot helpers more than one chapter uses.

Imported by name (``from posenc.book import plotting``); ``import posenc`` does not import
matplotlib.
"""

from __future__ import annotations

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np

# The book's text column is 688 CSS px wide at 1280 px (sphinx-book-theme); figures are saved at
# 100 dpi, one figure pixel per CSS pixel, so a figure at most COLUMN_WIDTH inches wide is never
# scaled down by the browser (the browser test checks each figure is drawn at >= 90% of its size).
COLUMN_WIDTH = 6.8
DPI = 100

# Okabe and Ito's palette, readable by colour-blind readers, each colour paired with its own line
# style so that lines stay apart in greyscale too.
PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000")
LINE_STYLES = ("-", "--", "-.", ":", (0, (5, 1, 1, 1, 1, 1)), (0, (8, 2)), (0, (1, 1)))

BOOK_STYLE = {
    "figure.figsize": (COLUMN_WIDTH, 3.8),
    "figure.dpi": DPI,
    "savefig.dpi": DPI,
    "savefig.format": "png",
    "figure.constrained_layout.use": True,
    # At 100 dpi a point is 1.39 CSS px: no text below 9 pt (12.5 px) on the page.
    "font.size": 10,
    "axes.titlesize": 11,
    "axes.labelsize": 10,
    "xtick.labelsize": 9,
    "ytick.labelsize": 9,
    "legend.fontsize": 9,
    "legend.title_fontsize": 9,
    "figure.titlesize": 11,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.prop_cycle": mpl.cycler(color=PALETTE) + mpl.cycler(linestyle=LINE_STYLES),
    "image.cmap": "RdBu_r",
    "legend.frameon": False,
    "svg.hashsalt": "posenc",
}
SMALLEST_FONT_POINTS = 9

# Chapters 5 and 6 (the figures readers compare on a phone): at a 390 px viewport a
# column-wide figure is drawn about 358 px wide, 0.52 of its size, where 9 pt text is under
# 7 px. Their figures set text from 11 pt (about 8 px there) and their legends in a row above
# the axes where there are many entries.
LEGIBLE_FONT_POINTS = 11
LEGIBLE_STYLE = {
    "font.size": 12,
    "axes.titlesize": 12,
    "axes.labelsize": 12,
    "xtick.labelsize": LEGIBLE_FONT_POINTS,
    "ytick.labelsize": LEGIBLE_FONT_POINTS,
    "legend.fontsize": LEGIBLE_FONT_POINTS,
    "legend.title_fontsize": LEGIBLE_FONT_POINTS,
    "figure.titlesize": 12,
}


#: The name a reader sees for each method of :func:`posenc.rope_scaling` (chapter 5's names):
#: figures, tables and explorers print these, never the code's keys.
METHOD_NAMES = {
    "none": "no scaling",
    "linear": "Position Interpolation",
    "ntk": "NTK-aware",
    "dynamic": "dynamic NTK",
    "ntk_by_parts": "NTK-by-parts",
    "yarn": "YaRN",
    "llama3": "Llama 3.1",
    "longrope": "LongRoPE",
    "proportional": "p-RoPE",
}

#: Chapter 6's methods (and Llama 3.1's rule, scored on real text): colour (Okabe-Ito), marker and line style, apart in greyscale too.
#: Position Interpolation (vermilion) and YaRN (reddish purple), the pair chapter 6 compares most, are far apart in hue.
METHOD_STYLE = {
    "none": (PALETTE[6], "o", ":"),
    "linear": (PALETTE[1], "v", "-"),
    "ntk": (PALETTE[0], "s", "--"),
    "dynamic": (PALETTE[4], "D", "-."),
    "ntk_by_parts": (PALETTE[2], "^", "-"),
    "yarn": (PALETTE[3], "x", "--"),
    "llama3": (PALETTE[5], "P", (0, (8, 2))),
}


def seed_lines(
    ax: mpl.axes.Axes,
    xs: list,
    values: np.ndarray,
    method: str,
    label: str,
    *,
    each_seed: bool = True,
) -> None:
    """Every seed faintly (unless ``each_seed`` is False) and the mean over seeds bold, in
    ``method``'s style.

    ``values``: (len(xs), seeds), one column per seed.
    """
    values = np.asarray(values, dtype=float)
    if values.ndim != 2 or values.shape[0] != len(xs):
        raise ValueError(
            f"values must have shape (len(xs), seeds) = ({len(xs)}, seeds), "
            f"got {values.shape}"
        )
    if not isinstance(each_seed, bool):
        raise TypeError(f"each_seed must be True or False, got {each_seed!r}")
    color, marker, line = METHOD_STYLE[method]
    if each_seed:
        ax.plot(xs, values, color=color, alpha=0.25, lw=1)
    ax.plot(
        xs, values.mean(axis=1), color=color, marker=marker, ls=line, lw=2, label=label
    )


def use_book_style() -> None:
    """Apply the shared style and ask the inline backend for PNG figures only."""
    mpl.rcParams.update(BOOK_STYLE)
    try:
        from matplotlib_inline.backend_inline import set_matplotlib_formats

        set_matplotlib_formats("png")
    except ImportError:  # outside IPython there is no inline backend to configure
        pass


def use_legible_style() -> None:
    """The book's style with the larger text of chapters 5 and 6 (``LEGIBLE_STYLE``)."""
    use_book_style()
    mpl.rcParams.update(LEGIBLE_STYLE)


def legend_above(ax: mpl.axes.Axes, *, ncol: int = 3, **kwargs) -> mpl.legend.Legend:
    """``ax``'s legend in rows above the axes, ``ncol`` entries a row, so it covers no line."""
    return ax.legend(
        loc="lower center",
        bbox_to_anchor=(0.5, 1.02),
        ncol=ncol,
        borderaxespad=0.0,
        handlelength=2.5,
        **kwargs,
    )


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
        image = ax.imshow(
            matrix,
            aspect="auto",
            cmap="RdBu_r",
            vmin=-limit,
            vmax=limit,
            interpolation="nearest",
        )
    else:
        image = ax.imshow(
            matrix, aspect="auto", cmap="viridis", interpolation="nearest"
        )
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(False)
    if annotate:
        for (row, column), entry in np.ndenumerate(matrix):
            ax.text(column, row, f"{entry:.2f}", ha="center", va="center", fontsize=9)
    if colorbar:
        ax.figure.colorbar(image, ax=ax)
    return image


def draw_plane_map(
    ax: plt.Axes,
    matrix: np.ndarray,
    *,
    title: str,
    extent: float = 2.5,
    grid_lines: int = 2,
) -> None:
    """Draw what the 2x2 ``matrix`` does to the plane: the image of the integer grid (thin lines),
    of the unit square (filled) and of the basis vectors e_1 (vermilion) and e_2 (blue), over the
    original square and basis (dashed). Axes are labelled x and y and kept at equal scale; the
    images of e_1 and e_2 are written in the upper left corner at 9 pt, so the panel stays
    legible at a quarter of the text column.
    """
    matrix = np.asarray(matrix, dtype=np.float64)
    if matrix.shape != (2, 2):
        raise ValueError(f"matrix must have shape (2, 2), got {matrix.shape}")
    t = np.linspace(-grid_lines, grid_lines, 50)
    for k in range(-grid_lines, grid_lines + 1):
        for line in (
            np.stack([t, np.full_like(t, k)]),
            np.stack([np.full_like(t, k), t]),
        ):
            image = matrix @ line
            # solid: the style's cycle would otherwise give each grid line another dash
            ax.plot(image[0], image[1], color="0.75", lw=0.6, linestyle="-", zorder=1)
    square = np.array([[0, 1, 1, 0, 0], [0, 0, 1, 1, 0]], dtype=np.float64)
    ax.plot(square[0], square[1], "k--", lw=0.8, zorder=2)
    moved = matrix @ square
    ax.fill(
        moved[0],
        moved[1],
        color="#E69F00",
        alpha=0.35,
        zorder=2,
        label="image of the unit square",
    )
    for column, color, name, corner in (
        (0, "#D55E00", "e₁", 0.96),
        (1, "#0072B2", "e₂", 0.86),
    ):
        basis = np.eye(2)[:, column]
        ax.annotate(
            "",
            xy=basis,
            xytext=(0, 0),
            arrowprops=dict(arrowstyle="->", color=color, alpha=0.35, ls="--"),
        )
        end = matrix[:, column]
        ax.annotate(
            "",
            xy=end,
            xytext=(0, 0),
            arrowprops=dict(arrowstyle="-|>", color=color, lw=2),
            zorder=3,
        )
        # no rounding noise such as cos(90°) = 6e-17 in the label
        shown = np.round(end, 10) + 0.0
        # The labels sit in the upper left corner, one line each, so that they never
        # overlap an arrow or leave a small panel, whatever the matrix.
        ax.text(
            0.03,
            corner,
            f"M{name} = ({shown[0]:.2g}, {shown[1]:.2g})",
            transform=ax.transAxes,
            ha="left",
            va="top",
            color=color,
            fontsize=9,
            bbox=dict(facecolor="white", edgecolor="none", alpha=0.8, pad=1),
            zorder=4,
        )
    ax.set_xlim(-extent, extent)
    ax.set_ylim(-extent, extent)
    ax.set_aspect("equal")
    ax.grid(False)  # the image of the integer grid is the grid of this panel
    ax.axhline(0, color="0.4", lw=0.6)
    ax.axvline(0, color="0.4", lw=0.6)
    ax.set_title(title)
    ax.set_xlabel("x")
    ax.set_ylabel("y")


def animation_html(animation: mpl.animation.Animation, name: str, *, alt: str = ""):
    """The animation as JavaScript HTML (``to_jshtml``) that plays in a static page, with a fixed element id.

    matplotlib names the player's elements with a random uuid; replacing it by ``name``
    keeps the stored notebook output identical from run to run. ``name`` must be a
    Python-identifier-like string, unique on the page. matplotlib's player also links a
    Font Awesome stylesheet from a CDN; that link is dropped, because the book's theme
    ships Font Awesome itself and the page must work offline. Returns an
    ``IPython.display.HTML``; close the animation's figure first (``plt.close(fig)``) so it
    is not also shown as a still.

    ``alt``, when given, becomes the alt text of the player's frame image: say what the
    animation shows, for readers who cannot see it (it is HTML-escaped here).
    """
    import html as html_text
    import re

    from IPython.display import HTML

    if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
        raise ValueError(
            f"name must be a non-empty identifier (letters, digits, _), got {name!r}"
        )
    html = animation.to_jshtml()
    ids = set(re.findall(r"_anim_img([0-9a-f]{32})", html))
    if len(ids) != 1:
        raise RuntimeError(
            f"expected one animation id in matplotlib's HTML, found {len(ids)}"
        )
    html = re.sub(r"<link[^>]*font-awesome[^>]*>\s*", "", html)
    html = html.replace(ids.pop(), name)
    if alt:
        tag = f'<img id="_anim_img{name}"'
        if html.count(tag) != 1:
            raise RuntimeError("expected one frame image in matplotlib's HTML")
        html = html.replace(tag, f'{tag} alt="{html_text.escape(alt, quote=True)}"')
    return HTML(html)
