"""The shared plot helpers: they draw without error, reject bad input, and the animation HTML is stable."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from matplotlib.animation import FuncAnimation  # noqa: E402

from posenc.book import plotting  # noqa: E402


def test_draw_plane_map_draws_and_rejects_non_2x2():
    fig, ax = plt.subplots()
    plotting.draw_plane_map(ax, [[1.0, 1.0], [0.0, 1.0]], title="shear")
    assert ax.get_title() == "shear" and ax.get_xlabel() == "x"
    with pytest.raises(ValueError, match="matrix"):
        plotting.draw_plane_map(ax, np.eye(3), title="no")
    plt.close(fig)


def make_animation():
    fig, ax = plt.subplots(figsize=(2, 2))
    (line,) = ax.plot([0, 1], [0, 0])
    animation = FuncAnimation(
        fig, lambda k: line.set_ydata([0, k]) or (line,), frames=3
    )
    plt.close(fig)
    return animation


def test_animation_html_is_identical_from_run_to_run():
    first = plotting.animation_html(make_animation(), "demo").data
    second = plotting.animation_html(make_animation(), "demo").data
    assert first == second
    assert 'id="_anim_imgdemo"' in first and first.count("frames[") >= 3
    animation = make_animation()
    with pytest.raises(ValueError, match="name"):
        plotting.animation_html(animation, "not an id")
    assert (
        'id="_anim_imgsecond_try"'
        in plotting.animation_html(animation, "second_try").data
    )


def test_animation_html_needs_no_network():
    html = plotting.animation_html(make_animation(), "offline").data
    assert "font-awesome" not in html and "https://" not in html
    # the player's icons, drawn by the theme's own Font Awesome
    assert "fa-play" in html


def test_draw_plane_map_labels_are_legible_and_its_grid_solid():
    """At a quarter of the column (a 2x2 grid at 6.8 in) the labels stay >= 9 pt, inside the
    panel, and the image of the grid is drawn solid whatever the style's line cycle."""
    # the book's style: its line cycle pairs each colour with a dash pattern
    with matplotlib.rc_context(plotting.BOOK_STYLE):
        fig, axes = plt.subplots(2, 2, figsize=(plotting.COLUMN_WIDTH, 6.8))
        for ax, matrix in zip(
            axes.flat,
            ([[2, 0], [0, 2]], [[0, -1], [1, 0]], [[1, 1], [0, 1]], np.eye(2)),
        ):
            plotting.draw_plane_map(ax, matrix, title="map")
            labels = [text for text in ax.texts if text.get_text().startswith("M")]
            assert len(labels) == 2
            for label in labels:
                assert label.get_fontsize() >= plotting.SMALLEST_FONT_POINTS
                x, y = label.get_position()
                assert (
                    label.get_transform() == ax.transAxes
                    and 0 <= x <= 1
                    and 0 <= y <= 1
                )
            grid = [line for line in ax.lines if line.get_color() == "0.75"]
            assert grid and all(line.get_linestyle() == "-" for line in grid)
        plt.close(fig)


def test_animation_html_gives_the_frame_image_its_alt_text():
    html = plotting.animation_html(
        make_animation(), "described", alt='a line rises, "step" by step & stops'
    ).data
    assert (
        '<img id="_anim_imgdescribed" alt="a line rises, &quot;step&quot; by step '
        '&amp; stops">' in html
    )
    assert html.count("alt=") == 1
    plain = plotting.animation_html(make_animation(), "described").data
    assert "alt=" not in plain


def test_seed_lines_draws_each_seed_and_the_mean():
    fig, ax = plt.subplots()
    values = np.array([[0.1, 0.3], [0.5, 0.9], [0.2, 0.2]])  # 3 lengths, 2 seeds
    plotting.seed_lines(ax, [1, 2, 4], values, "yarn", "YaRN")
    *faint, mean = ax.get_lines()
    assert len(faint) == 2 and [line.get_alpha() for line in faint] == [0.25, 0.25]
    np.testing.assert_allclose(mean.get_ydata(), [0.2, 0.7, 0.2])
    assert (
        mean.get_label() == "YaRN"
        and mean.get_color() == plotting.METHOD_STYLE["yarn"][0]
    )
    with pytest.raises(ValueError, match="values must have shape"):
        plotting.seed_lines(ax, [1, 2], values, "yarn", "YaRN")
    plt.close(fig)


def test_seed_lines_can_draw_the_mean_alone():
    fig, ax = plt.subplots()
    values = np.array([[0.1, 0.3], [0.5, 0.9]])
    plotting.seed_lines(ax, [1, 2], values, "linear", "PI", each_seed=False)
    (mean,) = ax.get_lines()
    np.testing.assert_allclose(mean.get_ydata(), [0.2, 0.7])
    assert mean.get_label() == "PI" and mean.get_alpha() is None
    with pytest.raises(TypeError, match="each_seed"):
        plotting.seed_lines(ax, [1, 2], values, "linear", "PI", each_seed="no")
    plt.close(fig)


def test_pi_and_yarn_are_not_drawn_in_neighbouring_hues():
    """Chapter 6 compares them most; vermilion against orange read as one colour."""
    import matplotlib.colors as mcolors

    hue = {
        m: mcolors.rgb_to_hsv(mcolors.to_rgb(plotting.METHOD_STYLE[m][0]))[0]
        for m in ("linear", "yarn")
    }
    gap = abs(hue["linear"] - hue["yarn"])
    assert min(gap, 1 - gap) > 0.1, hue
    colours = [style[0] for style in plotting.METHOD_STYLE.values()]
    assert len(set(colours)) == len(colours)
