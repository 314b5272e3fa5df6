"""conf.py (used by the Chinese edition's Sphinx build) must mirror _config.yml: it is what
`jupyter-book config sphinx .` writes, plus the lines that put book/_ext on sys.path."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HEADER_LINES = 4  # import os, import sys, a blank line, sys.path.insert(... book/_ext)


def test_conf_py_is_what_jupyter_book_writes_from_config(tmp_path):
    for name in ("_config.yml", "_toc.yml"):
        shutil.copy(ROOT / name, tmp_path / name)
    jupyter_book = Path(sys.executable).with_name("jupyter-book")
    subprocess.run(
        [str(jupyter_book), "config", "sphinx", str(tmp_path)],
        check=True,
        capture_output=True,
    )
    written = (tmp_path / "conf.py").read_text(encoding="utf-8")
    stored = (
        (ROOT / "conf.py").read_text(encoding="utf-8").split("\n", HEADER_LINES)[-1]
    )
    assert (
        '"book", "_ext"'
        in (ROOT / "conf.py").read_text(encoding="utf-8").split("\n")[3]
    )
    assert stored == written, (
        "run `jupyter-book config sphinx .` and keep the sys.path lines"
    )
