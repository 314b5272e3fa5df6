"""Drop repeated <script> entries from every page.

With jupyter-book 1.0.4 and sphinx-thebe 0.3.1 two inline scripts (the thebe
configuration ``const THEBE_JS_URL = ...`` and the togglebutton selector) reach each
page twice, once with file name ``None`` and once with ``""``; the second
``const`` raises "Identifier 'THEBE_JS_URL' has already been declared" in the
browser. Keeping the first of identical entries removes the error and changes
nothing else.
"""

from __future__ import annotations

from sphinx.application import Sphinx


def _identity(script) -> tuple:
    """What makes two script entries the same tag: file (None and "" alike) and attributes."""
    return (
        script.filename or "",
        tuple(sorted((k, str(v)) for k, v in script.attributes.items())),
    )


def drop_repeated_scripts(
    app: Sphinx, pagename: str, templatename: str, context: dict, doctree
) -> None:
    scripts = context.get("script_files")
    if not scripts:
        return
    seen: set[tuple] = set()
    unique = []
    for script in scripts:
        identity = _identity(script)
        if identity not in seen:
            seen.add(identity)
            unique.append(script)
    context["script_files"] = unique


def setup(app: Sphinx) -> dict:
    # Run after every other html-page-context handler (MathJax's included).
    app.connect("html-page-context", drop_repeated_scripts, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
