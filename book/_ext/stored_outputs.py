"""Render the notebooks' stored outputs instead of executing them, when asked.

`make book` executes every notebook (``execute_notebooks: force`` in ``_config.yml``).
`make test` has just proved with nbval that every stored output equals a fresh run, so its
strict build sets ``POSENC_RENDER_STORED=1`` and renders those outputs: each notebook is
executed once per test run, not twice. Anything else leaves the configuration alone.
"""

from __future__ import annotations

import os

from sphinx.application import Sphinx
from sphinx.config import Config

VARIABLE = "POSENC_RENDER_STORED"


def render_stored_outputs(app: Sphinx, config: Config) -> None:
    value = os.environ.get(VARIABLE, "")
    if value not in ("", "0", "1"):
        raise ValueError(f"{VARIABLE} must be 0 or 1, got {value!r}")
    if value == "1":
        config.nb_execution_mode = "off"


def setup(app: Sphinx) -> dict:
    app.connect("config-inited", render_stored_outputs)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
