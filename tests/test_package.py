"""Package-level rules of ARCHITECTURE.md: light imports, the print-options helper."""

import subprocess
import sys
from pathlib import Path

import numpy as np

import posenc
from posenc.book import setup_notebook


def test_import_posenc_imports_neither_torch_nor_matplotlib():
    code = (
        "import sys, posenc; print('torch' in sys.modules, 'matplotlib' in sys.modules)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.split() == ["False", "False"]


def test_numpy_calls_never_import_torch():
    """The torch check of every entry point looks for torch in sys.modules; it never imports it."""
    code = (
        "import sys, numpy as np, posenc; from posenc.rope import rotate_pairs; x = np.ones((2, 4)); "
        "posenc.apply_rope(x, [0, 1]); rotate_pairs(x, np.ones((2, 2)), np.zeros((2, 2))); "
        "posenc.add_sinusoidal_encoding(x); posenc.sinusoidal_encoding_at([0, 1], 4); "
        "print('torch' in sys.modules)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.split() == ["False"]


def test_setup_notebook_fixes_print_options_and_seeds():
    saved = np.get_printoptions()
    try:
        first = setup_notebook(seed=3).normal(size=3)
        assert (
            np.get_printoptions()["precision"] == 4
            and np.get_printoptions()["suppress"]
        )
        np.testing.assert_array_equal(first, setup_notebook(seed=3).normal(size=3))
        setup_notebook(seed=3)
        a = np.random.rand()
        setup_notebook(seed=3)
        assert np.random.rand() == a
    finally:
        np.set_printoptions(**saved)


def test_setup_notebook_rejects_a_bad_seed():
    import pytest

    with pytest.raises(ValueError, match="seed"):
        setup_notebook(seed=-1)
    # a wrong type is a TypeError, as in posenc._validation
    for wrong_type in (
        1.5,
        "3",
        True,
        None,
    ):
        with pytest.raises(TypeError, match="seed"):
            setup_notebook(seed=wrong_type)


def test_setup_notebook_rejects_a_bad_thread_count_before_importing_torch():
    import pytest

    with pytest.raises(ValueError, match="torch_threads"):
        setup_notebook(seed=0, use_torch=True, torch_threads=0)
    with pytest.raises(TypeError, match="torch_threads"):
        setup_notebook(seed=0, use_torch=True, torch_threads=1.0)


CORE = {  # the core modules (ARCHITECTURE.md, "Layers")
    f"posenc.{name}"
    for name in (
        "_validation",
        "rotation",
        "sinusoidal",
        "rope",
        "fast_rope",
        "torch_rope",
        "scaling",
        "attention",
        "config",
        "alibi",
        "t5_bias",
    )
}


def test_the_package_init_imports_only_the_core():
    # import-linter's floors contract (pyproject.toml) checks every module of the package
    # but not the package's own __init__; grimp, the graph it is built on, reads that one.
    import grimp

    graph = grimp.build_graph("posenc")
    assert graph.find_modules_directly_imported_by("posenc") <= CORE
    assert "posenc.book" in graph.modules  # the graph does see the upper floors


def test_no_module_is_over_500_lines_but_scaling():
    """ARCHITECTURE.md, "Modules stay small": scaling.py is the one stated exception."""
    root = Path(posenc.__file__).parent
    long = {
        str(path.relative_to(root)): len(path.read_text(encoding="utf-8").splitlines())
        for path in root.rglob("*.py")
    }
    over = {name: n for name, n in long.items() if n > 500 and name != "scaling.py"}
    assert not over, f"modules over 500 lines: {over}"


def test_glue_figure_shows_records_and_closes_the_figure(monkeypatch):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import myst_nb
    import pytest

    from posenc.book import glue_figure

    recorded = []
    monkeypatch.setattr(
        myst_nb,
        "glue",
        lambda name, value, display: recorded.append((name, value, display)),
    )
    figure = plt.figure()
    glue_figure("fig-test", figure)
    assert recorded == [("fig-test", figure, True)]
    assert not plt.fignum_exists(figure.number)
    with pytest.raises(TypeError, match="name"):
        glue_figure(3, plt.figure())
    with pytest.raises(ValueError, match="name"):
        glue_figure(" ", plt.figure())
    with pytest.raises(TypeError, match="figure"):
        glue_figure("fig-test", "not a figure")
    from IPython.display import HTML

    page = HTML("<p>an explorer</p>")
    glue_figure("explorer-test", page)
    assert recorded[-1] == ("explorer-test", page, True)
    plt.close("all")
