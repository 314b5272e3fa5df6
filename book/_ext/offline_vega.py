"""Serve Vega, Vega-Lite and Vega-Embed from the build itself, once, for the explorers.

The explorers (``posenc.book.explorers``) are Vega-Lite specifications written by Altair with
their data inline; the browser only draws them. The JavaScript comes from the pinned PyPI
package vl-convert-python (``vl_convert.javascript_bundle``: Vega-Embed, Vega-Lite and Vega
with their dependencies in one file, for the Vega-Lite version Altair writes). It is written
once to ``_static/vega/`` of the HTML output, and only pages that hold an explorer load it, so
every other page stays as light as before and no page needs the internet.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from sphinx.application import Sphinx

TARGET = "vega"
MARKER = "posenc-explorer"


def bundle_name() -> str:
    import altair

    return f"vega-bundle-{altair.SCHEMA_VERSION}.js"


def cached_bundle() -> Path:
    """The bundle for the installed Altair and vl-convert, made once per environment.

    vl-convert takes a few seconds to bundle, so the file is kept in the environment
    (``<sys.prefix>/share/posenc-vega/``, written by ``make``'s set-up step) and copied into
    each build. The bundle declares its helpers (const _ = ...) at the top level; as a classic
    script they would clash with the theme's globals, so it runs in a function of its own and
    leaves only window.vegaEmbed, window.vega and window.vegaLite behind.
    """
    import sys

    import altair
    import vl_convert

    cache = Path(sys.prefix) / "share" / "posenc-vega"
    path = cache / f"{Path(bundle_name()).stem}-vl-convert-{vl_convert.__version__}.js"
    if not (path.is_file() and path.stat().st_size > 0):
        version = altair.SCHEMA_VERSION.lstrip("v").rsplit(".", 1)[0]
        bundle = vl_convert.javascript_bundle(vl_version=version)
        cache.mkdir(parents=True, exist_ok=True)
        path.write_text(f"(function () {{\n{bundle}\n}})();\n", encoding="utf-8")
    return path


def write_bundle(app: Sphinx, exception: Exception | None) -> None:
    """Copy the bundle into the build's _static."""
    if exception is not None or app.builder.format != "html":
        return
    target = Path(app.outdir) / "_static" / TARGET / bundle_name()
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(cached_bundle(), target)


def load_on_explorer_pages(
    app: Sphinx, pagename, templatename, context, doctree
) -> None:
    """Add the bundle's <script> to the pages whose body holds an explorer."""
    if MARKER in context.get("body", ""):
        # Called during html-page-context, add_js_file adds the script to this page only.
        app.add_js_file(f"{TARGET}/{bundle_name()}", priority=100)


def setup(app: Sphinx) -> dict:
    app.connect("html-page-context", load_on_explorer_pages)
    app.connect("build-finished", write_bundle)
    return {"parallel_read_safe": True, "parallel_write_safe": True}


if __name__ == "__main__":  # make's set-up step: bundle once per environment
    print(cached_bundle())
