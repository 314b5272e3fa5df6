"""posenc installs like a library: a wheel built from the sources runs without the repository.

It runs rope_scaling and apply_rope, and reads the presets and the corpus of
posenc.experiments.corpus from their package data.

The wheel is built from a copy of the sources (so the repository gets no build folder),
installed with ``pip --target`` into a temporary folder, and imported by a fresh
interpreter started with ``-S`` (no site-packages, so the repository's editable install is
not seen) in an empty working directory, with only that folder and numpy's (and
jsonschema's) site-packages on its path.
"""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np

import posenc
from posenc.book.presets import load_presets
from posenc.experiments.corpus import read_manifest

ROOT = Path(__file__).resolve().parents[1]

PROGRAM = """
import json, sys
import numpy as np
import posenc
from posenc.book.presets import load_presets
from posenc.experiments.corpus import load_split, sha256

inv_freq, attention = posenc.rope_scaling("yarn", 16, factor=4.0, original_max_position=64)
x = np.arange(2 * 3 * 16, dtype=float).reshape(2, 3, 16) / 100
rotated = posenc.apply_rope(x, np.arange(3), inv_freq=inv_freq)
presets = load_presets()
print(json.dumps({
    "posenc": posenc.__file__,
    "path": sys.path,
    "inv_freq": inv_freq.tolist(),
    "attention": attention,
    "rotated": rotated.tolist(),
    "presets": {name: p.arguments()["factor"] for name, p in presets.items()},
    "corpus": {part: sha256(text) for part, text in load_split().items()},
}))
"""


def _pip(*args: str, cwd: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
    )


def test_the_wheel_runs_rope_scaling_apply_rope_the_presets_and_the_corpus(tmp_path):
    source = tmp_path / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, source / name)
    shutil.copytree(
        ROOT / "src",
        source / "src",
        ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"),
    )
    dist, target, run = tmp_path / "dist", tmp_path / "target", tmp_path / "run"
    run.mkdir()
    _pip("wheel", "--no-deps", "--no-build-isolation", "-w", str(dist), ".", cwd=source)
    (wheel,) = dist.glob("posenc-*.whl")
    _pip(
        "install",
        "--no-deps",
        "--no-index",
        "--target",
        str(target),
        str(wheel),
        cwd=run,
    )
    assert (target / "posenc" / "book" / "model_configs" / "llama-2-7b.json").is_file()
    # numpy's and jsonschema's own folders: the virtual environment's site-packages
    import jsonschema

    libraries = {str(Path(m.__file__).parents[1]) for m in (np, jsonschema)}
    result = subprocess.run(
        [sys.executable, "-S", "-c", PROGRAM],
        cwd=run,
        env={"PYTHONPATH": ":".join([str(target), *sorted(libraries)])},
        capture_output=True,
        text=True,
        check=True,
    )
    out = json.loads(result.stdout)
    assert Path(out["posenc"]).is_relative_to(target)
    assert not any(Path(p).resolve() == ROOT / "src" for p in out["path"] if p)
    inv_freq, attention = posenc.rope_scaling(
        "yarn", 16, factor=4.0, original_max_position=64
    )
    x = np.arange(2 * 3 * 16, dtype=float).reshape(2, 3, 16) / 100
    np.testing.assert_array_equal(out["inv_freq"], inv_freq)
    assert out["attention"] == attention
    np.testing.assert_array_equal(
        out["rotated"], posenc.apply_rope(x, np.arange(3), inv_freq=inv_freq)
    )
    assert out["presets"] == {
        name: p.arguments()["factor"] for name, p in load_presets().items()
    }
    assert out["corpus"] == {  # the corpus ships as package data and loads from it
        part: entry["sha256"] for part, entry in read_manifest()["split"].items()
    }
