"""Checks of the book's structure: the table of contents and the notebook rules of ARCHITECTURE.md."""

import json
import re
from pathlib import Path

import pytest
import yaml

from posenc.book.plotting import SMALLEST_FONT_POINTS

ROOT = Path(__file__).resolve().parents[1]
BOOK = ROOT / "book"
PAGE_SUFFIXES = {".md", ".ipynb"}


def toc_files() -> list[str]:
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
    files = [toc["root"]]

    def walk(entries):
        for entry in entries or []:
            if "file" in entry:
                files.append(entry["file"])
            walk(entry.get("sections"))

    for part in toc.get("parts", []):
        walk(part.get("chapters"))
    walk(toc.get("chapters"))
    return files


def resolve(entry: str) -> Path | None:
    for suffix in ("", *sorted(PAGE_SUFFIXES)):
        candidate = ROOT / f"{entry}{suffix}"
        if candidate.is_file() and candidate.suffix in PAGE_SUFFIXES:
            return candidate
    return None


def test_every_toc_entry_exists():
    missing = [entry for entry in toc_files() if resolve(entry) is None]
    assert not missing, f"_toc.yml lists pages that do not exist: {missing}"


def test_every_page_in_book_is_in_the_toc():
    listed = {resolve(entry) for entry in toc_files()}
    pages = {
        path
        for path in BOOK.rglob("*")
        if path.suffix in PAGE_SUFFIXES and ".ipynb_checkpoints" not in path.parts
    }
    unlisted = sorted(str(path.relative_to(ROOT)) for path in pages - listed)
    assert not unlisted, f"pages in book/ missing from _toc.yml: {unlisted}"


def test_toc_lists_no_page_twice():
    files = toc_files()
    assert len(files) == len(set(files))


NOTEBOOKS = sorted(BOOK.glob("*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_follows_the_rules(path):
    notebook = json.loads(path.read_text(encoding="utf-8"))
    code_cells = [cell for cell in notebook["cells"] if cell["cell_type"] == "code"]
    first = code_cells[0]
    assert "remove-cell" in first["metadata"].get("tags", []), (
        "the first code cell must be tagged remove-cell"
    )
    assert "setup_notebook(" in "".join(first["source"]), (
        "the first code cell must call posenc.book.setup_notebook"
    )
    counts = [cell["execution_count"] for cell in code_cells]
    assert counts == list(range(1, len(code_cells) + 1)), (
        "run the notebook top to bottom (make notebooks)"
    )
    for cell in code_cells:
        source = "".join(cell["source"])
        for output in cell["outputs"]:
            assert output["output_type"] != "error", (
                f"stored error output in cell: {source[:80]}"
            )
            assert "image/svg+xml" not in output.get("data", {}), (
                "figures must be PNG (SVG embeds a timestamp)"
            )
        # nbval is told by cell tags, never by a comment a reader would see.
        assert "NBVAL" not in source, (
            f"tag the cell nbval-ignore-output instead of a comment: {source[:80]}"
        )
        assert "noqa" not in source, f"no linter comment on the page: {source[:80]}"
        if "nbval-ignore-output" in cell["metadata"].get("tags", []):
            assert "time" in source or "perf_counter" in source, (
                "only timing output may be ignored by nbval"
            )
        for size in re.findall(r"fontsize=([0-9.]+|\"[a-z-]+\"|'[a-z-]+')", source):
            assert size.strip("\"'") not in ("small", "x-small", "xx-small") and (
                not size[0].isdigit() or float(size) >= SMALLEST_FONT_POINTS
            ), f"text below {SMALLEST_FONT_POINTS} pt in a figure: fontsize={size}"
    assert notebook["metadata"]["kernelspec"]["name"] == "python3"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_shows_library_code_by_inclusion_only(path):
    text = path.read_text(encoding="utf-8")
    for line in text.splitlines():
        if "literalinclude" in line:
            assert "../src/posenc/" in line, (
                f"literalinclude must point into src/posenc: {line.strip()}"
            )


def test_notebooks_are_stripped_of_volatile_metadata():
    """`make notebooks` runs nbstripout; a notebook saved from an editor must be stripped too."""
    import subprocess
    import sys

    if not NOTEBOOKS:
        pytest.skip("no notebooks")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "nbstripout",
            "--verify",
            "--keep-output",
            "--keep-count",
            "--keep-id",
            *map(str, NOTEBOOKS),
        ],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, (
        f"run `make notebooks` (or nbstripout --keep-output --keep-count --keep-id): {result.stdout}"
    )


def test_bibliography_parses_without_duplicate_keys():

    from pybtex.database import parse_file

    text = (BOOK / "references.bib").read_text(encoding="utf-8")
    keys = re.findall(r"^@\w+\{([^,]+),", text, re.M)
    assert len(keys) == len(set(keys)), "duplicate keys in references.bib"
    assert set(parse_file(str(BOOK / "references.bib")).entries) == set(keys)


def _erratum_boxes() -> set[str]:
    """The :name: of every Erratum admonition in the chapters and appendix pages (not the
    errata appendix itself, which lists them)."""

    names = set()
    for path in NOTEBOOKS:
        if path.name == "appendix_errata.ipynb":
            continue
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            if cell["cell_type"] == "markdown":
                source = "".join(cell["source"])
                for box in re.finditer(
                    r"\{admonition\} Erratum[^\n]*\n((?::[^\n]*\n)*)", source
                ):
                    name = re.search(r":name: (\S+)", box.group(1))
                    assert name, (
                        f"{path.name}: an Erratum box without :name: ({box.group(0)[:60]})"
                    )
                    names.add(name.group(1))
    return names


def test_errata_appendix_lists_every_erratum_and_nothing_else():

    appendix = (BOOK / "appendix_errata.ipynb").read_text(encoding="utf-8")
    listed = set(re.findall(r"<(erratum-[\w-]+)>", appendix))
    boxes = _erratum_boxes()
    assert boxes, "no Erratum boxes found"
    assert boxes - listed == set(), (
        f"errata missing from the appendix: {sorted(boxes - listed)}"
    )
    assert listed - boxes == set(), (
        f"appendix rows without a box: {sorted(listed - boxes)}"
    )


def toc_chapters() -> dict[str, list[Path]]:
    """Each numbered chapter of _toc.yml with the pages listed as its sections."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
    chapters = {}

    def pages(entry):
        found = [resolve(entry["file"])]
        for section in entry.get("sections") or []:
            found += pages(section)
        return found

    for part in toc.get("parts", []):
        if part.get("numbered"):
            for entry in part["chapters"]:
                chapters[entry["file"]] = pages(entry)
    return chapters


@pytest.mark.parametrize("chapter", sorted(toc_chapters()))
def test_chapter_has_three_exercises_with_hidden_asserting_solutions(chapter):
    exercises, solutions = [], {}
    for path in toc_chapters()[chapter]:
        if path.suffix != ".ipynb":
            continue
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        current = None
        for cell in cells:
            source = "".join(cell["source"])
            if cell["cell_type"] == "markdown":
                exercises += [
                    (path, label)
                    for label in re.findall(
                        r"\{exercise\}[^\n]*\n(?::[^\n]*\n)*?:label: (\S+)", source
                    )
                ]
                # Walk the gated markers in the order they appear in the cell.
                for marker in re.finditer(
                    r"\{solution-start\} (\S+)\n:class: dropdown|\{solution-end\}",
                    source,
                ):
                    current = marker.group(1)
                    if current is not None:
                        solutions[current] = ""
            elif current is not None:
                solutions[current] += source + "\n"
    path = Path(chapter)
    assert len(exercises) >= 3, (
        f"{path.name}: {len(exercises)} exercises in the chapter, need at least 3"
    )
    for page, label in exercises:
        assert label in solutions, (
            f"{page.name}: exercise {label} has no hidden (dropdown) solution"
        )
        code = solutions[label]
        assert re.search(
            r"\bassert\b|assert_allclose|assert_close|assert_array_equal", code
        ), f"{page.name}: the solution of {label} asserts nothing"


def _repository_url() -> str:
    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    return config["repository"]["url"].rstrip("/")


def test_links_to_the_repository_agree_with_config():
    """The repository address lives in _config.yml; the README's links must follow it."""

    url = _repository_url()
    owner, name = url.removeprefix("https://github.com/").split("/")
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for link in re.findall(
        r"https://(?:colab\.research\.google\.com/github|mybinder\.org/v2/gh)/([\w.-]+/[\w.-]+)",
        readme,
    ):
        assert link == f"{owner}/{name}", link
    assert f"https://{owner}.github.io/{name}/" in readme


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_first_cell_sets_up_colab_from_the_configured_repository(path):
    """On Colab the hidden first cell clones this repository and puts its src/ on the path."""
    first = "".join(json.loads(path.read_text(encoding="utf-8"))["cells"][0]["source"])
    url = _repository_url()
    assert 'if "google.colab" in sys.modules:' in first
    assert f"!git clone --quiet --depth 1 {url} " in first
    assert first.index("google.colab") < first.index("import posenc")
