"""Serve MathJax from the build itself, so the HTML typesets its math with no internet.

The MathJax 3 files come from the pinned PyPI package django-static-mathjax (import name
``mathjax``); only the parts the TeX-to-CommonHTML component loads are copied into
``_static/mathjax`` of the HTML output, and ``mathjax_path`` points there.
"""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

from sphinx.application import Sphinx
from sphinx.config import Config

PARTS = (
    "tex-chtml.js",
    "output/chtml/fonts/woff-v2",
    "input/tex/extensions",
    "ui",
    "a11y",
    "adaptors",
)
TARGET = "mathjax"


def mathjax_source() -> Path:
    spec = importlib.util.find_spec("mathjax")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(
            "the package django-static-mathjax (import name 'mathjax') is not installed"
        )
    source = (
        Path(next(iter(spec.submodule_search_locations))) / "static" / "mathjax" / "es5"
    )
    if not (source / "tex-chtml.js").is_file():
        raise RuntimeError(f"no tex-chtml.js under {source}")
    return source


def use_local_mathjax(app: Sphinx, config: Config) -> None:
    config.mathjax_path = f"{TARGET}/tex-chtml.js"


def copy_mathjax(app: Sphinx, exception: Exception | None) -> None:
    if exception is not None or app.builder.format != "html":
        return
    source = mathjax_source()
    target = Path(app.outdir) / "_static" / TARGET
    for part in PARTS:
        origin, destination = source / part, target / part
        destination.parent.mkdir(parents=True, exist_ok=True)
        if origin.is_dir():
            shutil.copytree(origin, destination, dirs_exist_ok=True)
        else:
            shutil.copy2(origin, destination)


def setup(app: Sphinx) -> dict:
    mathjax_source()  # fail early, with a clear message, if the package is missing
    app.connect("config-inited", use_local_mathjax)
    app.connect("build-finished", copy_mathjax)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
