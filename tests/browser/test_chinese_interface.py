"""The Chinese edition's interface, on the built HTML (issue 25): no English button, tooltip,
screen-reader label, placeholder or alt text on a Chinese page.

The theme's strings come from the themes' catalogues and ours (locales/zh_CN/LC_MESSAGES:
sphinx.po, booktheme.po, interface.po) and the alt texts from alt_text.po, applied by
book/_ext/language_switch.py (ARCHITECTURE.md, "Two editions"). Two checks on every page
under _build/html/zh: none of ENGLISH appears as a text or an attribute value, and every
title, aria-label, placeholder and alt holds Chinese, but the names of NAMES and the
citations' tooltips (a paper's authors and title). Skips when the Chinese build is missing.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ZH = ROOT / "_build" / "html" / "zh"
CJK = re.compile(r"[\u3400-\u9fff]")
ATTRIBUTES = ("title", "aria-label", "placeholder", "alt", "data-bs-title")
SKIP = {"script", "style", "code", "pre", "kbd", "samp"}

#: What the English interface says (the themes, myst-nb, sphinx-togglebutton,
#: sphinx-copybutton, matplotlib's animation controls): none may be left on a Chinese page.
ENGLISH = (
    "Repository",
    "Source repository",
    "Source repositories",
    "Suggest edit",
    "Open issue",
    "Open an issue",
    "Download this page",
    "Download source file",
    "Download notebook file",
    "Print to PDF",
    "Fullscreen mode",
    "Launch interactive content",
    "Launch on Binder",
    "Launch on Colab",
    "Binder logo",
    "Colab logo",
    "Toggle primary sidebar",
    "Toggle secondary sidebar",
    "Toggle navigation",
    "Toggle hidden content",
    "Search this book...",
    "Search the docs ...",
    "Search",
    "Link to this heading",
    "Link to this term",
    "Link to this definition",
    "Link to this table",
    "Link to this image",
    "Contents",
    "On this page",
    "Back to top",
    "Skip to main content",
    "previous",
    "next",
    "previous page",
    "next page",
    "Color mode",
    "Light",
    "Dark",
    "System Settings",
    "Main",
    "Page",
    "Site navigation",
    "Section Navigation",
    "Copy",
    "Copied!",
    "Copy to clipboard",
    "Click to show",
    "Click to hide",
    "Show the code",
    "Hide the code",
    "Decrease speed",
    "Increase speed",
    "First frame",
    "Previous frame",
    "Play backwards",
    "Pause",
    "Play",
    "Next frame",
    "Last frame",
    "Repetition mode",
    "Once",
    "Loop",
    "Reflect",
)
#: Names, which stay as they are: the launch services and the other edition's link.
NAMES = {"Binder", "Colab", "English", "GitHub"}


class _Interface(HTMLParser):
    """Every text (outside code, scripts and key caps) and every reader-facing attribute
    value of a page, with what the attribute is on."""

    def __init__(self) -> None:
        super().__init__()
        self.texts: list[str] = []
        self.attributes: list[tuple[str, str, str, bool]] = []
        self._skip: list[str] = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        # A citation's tooltip is the paper's reference: authors and title, in English.
        href = attrs.get("href") or ""
        citation = tag == "a" and bool(
            re.match(r"(appendix_references\.html)?#id\d+$", href)
        )
        for name in ATTRIBUTES:
            if attrs.get(name):
                value = " ".join(attrs[name].split())
                self.attributes.append((tag, name, value, citation))
        if tag in SKIP:
            self._skip.append(tag)

    def handle_endtag(self, tag):
        if self._skip and self._skip[-1] == tag:
            self._skip.pop()

    def handle_data(self, data):
        text = " ".join(data.split())
        if text and not self._skip:
            self.texts.append(text)


def chinese_pages() -> list[str]:
    if not ZH.is_dir():
        return []
    return sorted(str(p.relative_to(ZH)) for p in ZH.rglob("*.html"))


@pytest.fixture(scope="module", autouse=True)
def _built():
    if not (ZH / "book" / "intro.html").is_file():
        pytest.skip(
            "_build/html/zh is missing: build the Chinese edition first "
            "(make strict-build or make book)"
        )


def parse(page: str) -> _Interface:
    parser = _Interface()
    parser.feed((ZH / page).read_text(encoding="utf-8"))
    return parser


def test_the_chinese_build_has_pages():
    assert len(chinese_pages()) > 20


@pytest.mark.parametrize("page", chinese_pages() or ["(no Chinese build)"])
def test_no_english_interface_string_is_left(page):
    found = parse(page)
    english = set(ENGLISH)
    left = sorted(
        {f"text {t!r}" for t in found.texts if t in english}
        | {
            f"<{tag} {name}={value!r}>"
            for tag, name, value, _ in found.attributes
            if value in english
        }
    )
    assert not left, f"{page}: English interface text: {left}"


@pytest.mark.parametrize("page", chinese_pages() or ["(no Chinese build)"])
def test_every_tooltip_label_placeholder_and_alt_is_chinese(page):
    left = sorted(
        {
            f"<{tag} {name}={value[:80]!r}>"
            for tag, name, value, citation in parse(page).attributes
            if not CJK.search(value)
            and not citation
            and value not in NAMES
            and re.search(r"[A-Za-z]{2}", value)
        }
    )
    assert not left, (
        f"{page}: attributes with no Chinese (alt texts are translated in "
        f"locales/zh_CN/LC_MESSAGES/alt_text.po, the rest in interface.po): {left}"
    )
