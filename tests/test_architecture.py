"""The import direction of ARCHITECTURE.md: core modules import only core modules."""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "posenc"
CORE = {
    "_validation",
    "rotation",
    "sinusoidal",
    "rope",
    "fast_rope",
    "torch_rope",
    "scaling",
    "attention",
}
BOOK_TOOLS = {
    "naive",
    "criteria",
    "linear_maps",
    "precision",
    "notebook",
    "plotting",
    "presets",
    "explorers",
    "explorer_grids",
}
HARNESS = {"bench"}


def posenc_imports(path: Path) -> set[str]:
    """The posenc submodules a file imports, at any depth of the file (function bodies included)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if (
            isinstance(node, ast.ImportFrom)
            and node.module
            and node.module.split(".")[0] == "posenc"
        ):
            parts = node.module.split(".")
            found |= (
                {parts[1]} if len(parts) > 1 else {alias.name for alias in node.names}
            )
        elif isinstance(node, ast.Import):
            found |= {
                alias.name.split(".")[1]
                for alias in node.names
                if alias.name.startswith("posenc.")
            }
    return found


def test_every_module_belongs_to_one_layer():
    def modules(folder):
        files = {path.stem for path in folder.glob("*.py")} - {"__init__"}
        return files | {path.parent.name for path in folder.glob("*/__init__.py")}

    new_module = "a new module: say in ARCHITECTURE.md and here which layer it is in"
    assert modules(PACKAGE) - {"book", "bench", "experiments"} == CORE, new_module
    assert modules(PACKAGE / "book") == BOOK_TOOLS, new_module
    assert modules(PACKAGE / "bench") == {"forms", "clock"}, new_module
    assert (PACKAGE / "experiments").is_dir()


@pytest.mark.parametrize("module", sorted(CORE))
def test_core_modules_import_only_core_modules(module):
    outside = posenc_imports(PACKAGE / f"{module}.py") - CORE
    assert not outside, (
        f"posenc.{module} imports {sorted(outside)}: the core must not depend on book tools or experiments"
    )


def test_the_package_init_imports_only_the_core():
    assert posenc_imports(PACKAGE / "__init__.py") <= CORE


@pytest.mark.parametrize(
    "path",
    sorted((PACKAGE / "book").rglob("*.py"))
    + sorted((PACKAGE / "experiments").glob("*.py")),
    ids=lambda path: str(path.relative_to(PACKAGE)),
)
def test_book_tools_and_experiments_import_no_harness(path):
    assert not posenc_imports(path) & HARNESS


def test_the_checker_sees_imports_inside_functions(tmp_path):
    source = tmp_path / "m.py"
    source.write_text(
        "import numpy\nfrom posenc.rope import apply_rope\n\ndef f():\n    from posenc import plotting\n"
    )
    assert posenc_imports(source) == {"rope", "plotting"}
