"""Compare the checks the notebooks make now with those they made at an earlier commit.

    .venv/bin/python scripts/compare_checks.py REV

A check is an assertion statement in a code cell (``assert ...``, ``np.testing.assert_*``,
``torch.testing.assert_*``), read with Python's parser, so moving a cell between notebooks,
into a toggle or into another cell keeps it the same check. Prints the count per revision and
every check that is in REV but no longer in the book (and the new ones); exits 1 if any is gone.
Also counts the code cells whose text output nbval compares (not tagged to be ignored).
"""

from __future__ import annotations

import ast
import collections
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _notebooks_at(rev: str | None) -> dict[str, dict]:
    if rev is None:
        return {
            str(p.relative_to(ROOT)): json.loads(p.read_text(encoding="utf-8"))
            for p in sorted((ROOT / "book").glob("*.ipynb"))
        }
    names = subprocess.run(
        ["git", "ls-tree", "--name-only", rev, "book/"],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    return {
        name: json.loads(
            subprocess.run(
                ["git", "show", f"{rev}:{name}"],
                cwd=ROOT,
                check=True,
                capture_output=True,
                text=True,
            ).stdout
        )
        for name in names
        if name.endswith(".ipynb")
    }


def _is_check(node: ast.AST) -> bool:
    if isinstance(node, ast.Assert):
        return True
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
        name = ast.unparse(node.value.func)
        return name.split(".")[-1].startswith("assert_")
    return False


def checks(notebooks: dict[str, dict]) -> tuple[collections.Counter, int]:
    found: collections.Counter = collections.Counter()
    compared = 0
    for notebook in notebooks.values():
        for cell in notebook["cells"]:
            if cell["cell_type"] != "code":
                continue
            source = "".join(cell["source"])
            lines = [
                line
                for line in source.splitlines()
                if not line.lstrip().startswith(("%", "!"))
            ]
            tree = ast.parse("\n".join(lines))
            for node in ast.walk(tree):
                if _is_check(node):
                    found[ast.unparse(node)] += 1
            tags = cell.get("metadata", {}).get("tags", [])
            ignored = "nbval-ignore-output" in tags or "NBVAL_IGNORE_OUTPUT" in source
            if cell.get("outputs") and not ignored and "nbval-skip" not in tags:
                compared += 1
    return found, compared


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    before, compared_before = checks(_notebooks_at(sys.argv[1]))
    after, compared_after = checks(_notebooks_at(None))
    gone = before - after
    new = after - before
    print(
        f"checks at {sys.argv[1]}: {sum(before.values())}; now: {sum(after.values())}"
    )
    print(
        f"code cells with compared output at {sys.argv[1]}: {compared_before}; now: {compared_after}"
    )
    for check, count in sorted(gone.items()):
        print(f"GONE x{count}: {check[:160]}")
    for check, count in sorted(new.items()):
        print(f"new  x{count}: {check[:160]}")
    return 1 if gone else 0


if __name__ == "__main__":
    sys.exit(main())
