"""The Chinese edition against the English one, page by page, on the built HTML (issue 16):
no prose paragraph left in English, and the same number of typeset formulas."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HTML = ROOT / "_build" / "html"
CJK = re.compile(r"[\u3400-\u9fff]")
WORD = re.compile(r"[A-Za-z]{2,}")
# Glossary terms (<dt>) are English by design: the Chinese name is the line under each.
PROSE = {"p", "li", "dd", "td", "th", "figcaption", "caption"}
SKIP = {"code", "pre", "script", "style", "kbd", "samp"}


class _Prose(HTMLParser):
    """The text of each prose block, leaving out code, maths, citations and the header,
    sidebars and footer (the theme's own words)."""

    def __init__(self) -> None:
        super().__init__()
        self.blocks: list[str] = []
        self.math = 0
        self._stack: list[tuple[str, bool]] = []
        self._text: list[str] | None = None

    def _skipping(self) -> bool:
        return any(skip for _, skip in self._stack)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        classes = (attrs.get("class") or "").split()
        if "math" in classes:
            self.math += 1
        skip = (
            tag in SKIP
            or "math" in classes
            or "citation" in classes
            or tag in ("header", "footer", "nav")
            or "bd-sidebar-primary" in classes
            or "bd-sidebar-secondary" in classes
            or "language-switch" in classes
            or (tag == "a" and "#id" in (attrs.get("href") or ""))
        )
        self._stack.append((tag, skip))
        if tag in PROSE and not self._skipping() and self._text is None:
            self._text = []

    def handle_endtag(self, tag):
        while self._stack:
            open_tag, _ = self._stack.pop()
            if open_tag == tag:
                break
        if tag in PROSE and self._text is not None:
            self.blocks.append(" ".join("".join(self._text).split()))
            self._text = None

    def handle_data(self, data):
        if self._text is not None and not self._skipping():
            self._text.append(data)


def parse(path: Path) -> _Prose:
    parser = _Prose()
    parser.feed(path.read_text(encoding="utf-8"))
    return parser


def chinese_pages() -> list[str]:
    return sorted(
        str(p.relative_to(HTML / "zh")) for p in (HTML / "zh" / "book").glob("*.html")
    )


@pytest.mark.parametrize("page", chinese_pages())
def test_no_prose_paragraph_is_left_in_english(page):
    left = [
        block[:80]
        for block in parse(HTML / "zh" / page).blocks
        if len(WORD.findall(block)) >= 4
        and not CJK.search(block)
        # names only (GPT-NeoX, Hugging Face LLaMA): every word capitalised
        and not all(word[0].isupper() for word in WORD.findall(block))
    ]
    assert not left, f"{page}: paragraphs in English: {left[:3]}"


def dropped(page: str) -> int:
    """Formulas the Chinese page leaves out on purpose: those in English renderings of quoted
    Chinese notes (tests/test_translation.py checks each message)."""
    from babel.messages.pofile import read_po

    from tests.test_translation import dropped_formulas

    catalogue = (
        ROOT / "locales" / "zh_CN" / "LC_MESSAGES" / Path(page).with_suffix(".po")
    )
    with catalogue.open("rb") as file:
        return sum(len(dropped_formulas(m.id)) for m in read_po(file) if m.id)


@pytest.mark.parametrize("page", chinese_pages())
def test_the_same_formulas_as_the_english_page(page):
    english, chinese = parse(HTML / page).math, parse(HTML / "zh" / page).math
    assert chinese == english - dropped(page), (
        f"{page}: {chinese} formulas; the English page has {english}, "
        f"{dropped(page)} of them in renderings of quoted notes"
    )
