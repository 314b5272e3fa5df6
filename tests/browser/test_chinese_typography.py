"""The built Chinese pages read as Chinese prose (issue 25): a link that names a page or
section carries that target's Chinese title, and the visible prose (not code, formulas,
outputs or addresses) keeps Chinese typography: no space between two CJK characters, no
ASCII or unpaired quotes, full-width parentheses around Chinese, no space before %, and
× rather than x in a size.

The pages of the catalogues in tests/test_terms.py's PENDING (rewritten on another branch)
report their problems as expected failures, with counts, until the set is emptied; a hidden
cell's label comes from cell_labels.po, which is pending too.
"""

from __future__ import annotations

import difflib
import re
from functools import cache
from pathlib import Path

import pytest

from tests.test_terms import PENDING

ROOT = Path(__file__).resolve().parents[2]
ZH = ROOT / "_build" / "html" / "zh" / "book"
CJK = "\u3400-\u9fff"
# Ideographs and full-width punctuation (、。「」《》（），：；！？“”‘’ and the like).
WIDE = f"{CJK}\u3000-\u303f\uff01-\uff5e“”‘’"
NOT_PROSE = {"code", "pre", "script", "style", "kbd", "samp", "math", "svg", "img"}
NOT_PROSE_CLASSES = {
    "math",
    "cell_output",
    "output",
    "highlight",
    "headerlink",
    "citation",
    "language-switch",
}
BLOCKS = ["p", "li", "dd", "td", "th", "figcaption", "caption", "h1", "h2", "h3", "h4"]


def pages() -> list[Path]:
    return sorted(ZH.glob("*.html"))


def _soup(path: Path):
    from bs4 import BeautifulSoup

    return BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser")


@cache
def article(name: str):
    return _soup(ZH / name).select_one("article.bd-article")


def plain(text: str) -> str:
    """A title or link text as compared: no numbering, pilcrow or MathJax delimiters."""
    text = text.replace("#", "").replace("\\(", "").replace("\\)", "")
    return re.sub(r"^[\d.]+\s+", "", " ".join(text.split()))


@cache
def titles() -> dict[tuple[str, str | None], str]:
    """(page, id) -> the Chinese title of that section; (page, None) -> the page's title."""
    found = {}
    for path in pages():
        for heading in article(path.name).find_all(["h1", "h2", "h3", "h4"]):
            section = heading.parent
            title = plain(heading.get_text())
            ids = [section.get("id")] + [
                span.get("id") for span in section.find_all("span", recursive=False)
            ]
            for anchor in filter(None, ids):
                found[(path.name, anchor)] = title
            if heading.name == "h1":
                found[(path.name, None)] = title
    return found


# A link text that refers to a page by its place, not its title: 第 3 章, 下一节, 附录 …
GENERIC = re.compile(
    r"^(第 ?\S+ ?[章节页]|第 ?\S+ ?章的?勘误|[本上下]一?[章节页文]|见?下文|见?附录|附录|[\d.]+ ?节)$"
)


def title_links(name: str) -> list[tuple[str, str]]:
    """(link text, the target's title) for each internal link that names a page or section:
    its text is a title of the book, or it links a whole page by more than its place, or it
    is close to its target's title (a title that has since changed)."""
    known = set(titles().values())
    found = []
    for link in article(name).select("a.reference.internal"):
        href = link.get("href") or ""
        page, _, anchor = href.partition("#")
        page = Path(page).name if page else name
        target = titles().get((page, anchor or None))
        text = plain(link.get_text())
        if target is None or not re.search(f"[{CJK}]", text) or GENERIC.match(text):
            continue
        close = difflib.SequenceMatcher(None, text, target).ratio() >= 0.6
        if text in known or not anchor or close:
            found.append((text, target))
    return found


def generated_title(block) -> bool:
    """A theorem's or exercise's title line, which sphinx-proof and sphinx-exercise write
    from their own template ("定理 3.1 (…)", "解答 练习 3.1"): not the catalogues' prose."""
    owner = block.parent
    return "admonition-title" in (block.get("class") or []) and bool(
        {"proof", "solution", "exercise"} & set(owner.get("class") or [])
    )


def prose_blocks(name: str) -> list[tuple[str, bool]]:
    """The visible text of each innermost prose block, code and formulas replaced by a
    non-CJK mark, with whether it is a hidden cell's label (from cell_labels.po)."""
    blocks = []
    for block in article(name).find_all(BLOCKS):
        if (
            block.find(BLOCKS)
            or generated_title(block)
            or any(
                parent.name in NOT_PROSE
                or NOT_PROSE_CLASSES & set(parent.get("class") or [])
                for parent in [block, *block.parents]
            )
        ):
            continue
        parts = []
        for piece in block.find_all(string=True):
            inside = [piece.parent, *piece.parent.parents]
            if any(
                p.name in NOT_PROSE or NOT_PROSE_CLASSES & set(p.get("class") or [])
                for p in inside
                if p is not block.parent
            ):
                parts.append("\ufffc")
            else:
                parts.append(str(piece))
        text = " ".join("".join(parts).split())
        label = (
            any(
                "hide" in (p.get("class") or []) and p.name == "details"
                for p in block.parents
            )
            and block.find_parent("summary") is not None
        )
        blocks.append((re.sub("(\ufffc ?)+", "\ufffc", text), label))
    return blocks


RULES = {
    "space between two CJK characters": re.compile(f"[{WIDE}] +[{WIDE}]"),
    "ASCII quote in Chinese prose": re.compile(f"[{WIDE}][\"']|[\"'][{WIDE}]"),
    "half-width parentheses around Chinese": re.compile(
        f"[{WIDE}] ?\\([^()]*\\)|\\([^()]*[{CJK}][^()]*\\)"
    ),
    "space before %": re.compile(r"\d\s+%"),
    "x in a size (write ×)": re.compile(r"\d\s*x\s*\d"),
}


def unpaired_quotes(text: str) -> list[str]:
    """Curly quotes that do not pair (” before any “, or “ twice): what ASCII quotes in
    Chinese turn into. An apostrophe between two letters is not a quote."""
    bad = []
    for opening, closing in (("“", "”"), ("‘", "’")):
        inside = False
        for k, char in enumerate(text):
            if char == closing and closing == "’" and 0 < k < len(text) - 1:
                if text[k - 1].isascii() and text[k - 1].isalpha():
                    continue
            if char in (opening, closing):
                if (char == opening) == inside:
                    bad.append(text[max(0, k - 10) : k + 10])
                inside = char == opening
        if inside:
            bad.append(text[-20:])
    return bad


def problems(name: str) -> tuple[list[str], list[str]]:
    """This page's problems: (its own, those of cell labels)."""
    own, labels = [], []
    for text, target in title_links(name):
        if text != target:
            own.append(f"link {text!r} to a page titled {target!r}")
    for text, label in prose_blocks(name):
        found = [
            f"{rule}: …{text[max(0, m.start() - 10) : m.end() + 10]}…"
            for rule, pattern in RULES.items()
            for m in pattern.finditer(text)
        ] + [f"unpaired quote: …{q}…" for q in unpaired_quotes(text)]
        (labels if label else own).extend(found)
    return own, labels


def _require_build():
    if not pages():
        pytest.skip("the Chinese edition is not built: run `make strict-build-zh`")


@pytest.mark.parametrize("name", [p.name for p in pages()] or ["(not built)"])
def test_chinese_prose_and_link_titles(name):
    _require_build()
    own, labels = problems(name)
    pending = [f"cell_labels: {p}" for p in labels]
    if Path(name).stem in PENDING:
        pending, own = own + pending, []
    assert not own, f"{name}: {len(own)} problems: {own[:6]}"
    if pending:
        pytest.xfail(f"pending (issue 25): {len(pending)}: {pending[:3]}")


def test_the_checks_catch_what_issue_25_reported():
    assert RULES["space between two CJK characters"].search("参见 为什么位置很重要。")
    assert RULES["ASCII quote in Chinese prose"].search('分不清"我爱你"和')
    assert unpaired_quotes("分不清”I love you”和")
    assert not unpaired_quotes("分不清“I love you”和 the model’s")
    assert RULES["half-width parentheses around Chinese"].search(
        "定理 3.1 (位置的平移)"
    )
    assert RULES["space before %"].search("96 %")
    assert RULES["x in a size (write ×)"].search("4 x 4")
