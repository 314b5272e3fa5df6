"""The explorers as a whole: each one in the book has a check, and Vega is served once, only to
the pages that draw an explorer. The per-explorer checks run inside
``test_page_reads_like_a_book`` (tests/browser/explorer_checks.py), on the page it loads.
"""

from __future__ import annotations

from tests.browser.explorer_checks import CHECKS, HTML, explorer_pages


def test_every_explorer_in_the_book_is_checked():
    assert set(explorer_pages()) <= set(CHECKS), (
        f"explorers without a check: {sorted(set(explorer_pages()) - set(CHECKS))}"
    )


def test_pages_without_an_explorer_do_not_load_vega():
    with_explorer = set(explorer_pages().values())
    for page in sorted(HTML.glob("book/*.html")):
        loads = "_static/vega/" in page.read_text(encoding="utf-8")
        assert loads == (str(page.relative_to(HTML)) in with_explorer), page.name


def test_vega_is_served_once_from_the_build():
    bundles = list((HTML / "_static" / "vega").glob("vega-bundle-*.js"))
    if explorer_pages():
        assert len(bundles) == 1 and bundles[0].stat().st_size > 100_000
