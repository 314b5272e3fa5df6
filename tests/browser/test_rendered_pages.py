"""Open every page of the built HTML in headless Chromium and check what a reader sees.

Run by `make browser` (part of `make test`) after the book is built. For each page:
math is typeset (no raw TeX left, no MathJax error), every image has loaded, the
browser logs no errors, and every internal link (and its #anchor) resolves. One
full-page screenshot per page goes to _build/screenshots/ (1280 x 900) and one to
_build/screenshots/phone/ (390 px wide, the first three screens) when POSENC_SCREENSHOTS=1
(`make screenshots`): they are for people to look at, and they took about a third of the
test's time, so `make test` leaves them out.

`test_page_reads_like_a_book` loads each page once, checks the above, and measures what a reader sees (ARCHITECTURE.md, "Pages"):
the share of the page that is visible code, its length in screens, how large each
figure is drawn against the size it was designed for, its alt text, tooling words and
stray punctuation in the text, a figure on a chapter's first screen, and the page's
width on a phone. The numbers go to _build/page-metrics/<page>.json. Issue 21 adds: a
chapter page (01_ to 05f_) is at most 14 screens, chapters 1-4 with their section pages at
most 55 together (`test_chapters_one_to_four_read_like_a_book`, which loads those pages in
place of the per-page test), a chapter names the study notes at most 3 times in the text a
reader sees, and no two toggles of a page share a label or wear a generic one.

Chromium comes from the Debian packages `chromium` and `chromium-driver`
(/usr/bin/chromium); no browser is ever downloaded. Without it the tests skip.
"""

from __future__ import annotations

import functools
import http.server
import json
import os
import threading
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urldefrag, urlparse

import pytest

from tests.browser.explorer_checks import explorer_problems

ROOT = Path(__file__).resolve().parents[2]
HTML = ROOT / "_build" / "html"
SCREENSHOTS = ROOT / "_build" / "screenshots"
TAKE_SCREENSHOTS = os.environ.get("POSENC_SCREENSHOTS") == "1"
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def pages() -> list[str]:
    if not HTML.is_dir():
        return []
    # Both editions: English at the root, Chinese under zh/ (issue 16).
    found = [p for p in HTML.glob("*.html")] + [
        p
        for folder in (HTML / "book", HTML / "zh" / "book")
        for p in folder.glob("*.html")
    ]
    return sorted(str(p.relative_to(HTML)) for p in found)


class _Ids(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if name in ("id", "name") and value:
                self.ids.add(value)


@functools.cache
def anchors(path: Path) -> frozenset[str]:
    parser = _Ids()
    parser.feed(path.read_text(encoding="utf-8"))
    return frozenset(parser.ids)


@pytest.fixture(scope="module")
def server():
    if not (HTML / "index.html").is_file():
        pytest.fail(
            "_build/html/index.html is missing: build the book first (make strict-build or make book)"
        )
    handler = functools.partial(_QuietHandler, directory=str(HTML))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/"
    httpd.shutdown()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass


@pytest.fixture(scope="module")
def browser():
    if not (Path(CHROMIUM).is_file() and os.access(CHROMIUM, os.X_OK)):
        pytest.skip(
            f"Chromium not found at {CHROMIUM}: install the Debian packages chromium and chromium-driver "
            "(.ci/run does) or set CHROMIUM=/path/to/chromium"
        )
    playwright_api = pytest.importorskip("playwright.sync_api")
    with playwright_api.sync_playwright() as playwright:
        instance = playwright.chromium.launch(
            executable_path=CHROMIUM, args=CHROMIUM_FLAGS
        )
        yield instance
        instance.close()


def test_the_build_has_pages():
    assert "index.html" in pages() and any(p.startswith("book/01_") for p in pages())


def test_index_redirects_to_the_preface():
    index = (HTML / "index.html").read_text(encoding="utf-8")
    assert 'http-equiv="Refresh"' in index and "url=book/intro.html" in index
    assert (HTML / "book" / "intro.html").is_file()


def chapters_one_to_four(edition: str) -> list[str]:
    """Chapters 1-4 and their section pages (01_ to 04a_) of one edition ("" or "zh/")."""
    return [
        p
        for p in pages()
        if p.startswith(edition + "book/")
        and Path(p).name[:2] in ("01", "02", "03", "04")
    ]


EDITIONS = {"English": "", "Chinese": "zh/"}


@pytest.mark.parametrize(
    "page_path",
    [
        p
        for p in pages()
        if p != "index.html"
        and p not in sum(map(chapters_one_to_four, EDITIONS.values()), [])
    ],
)
def test_page_reads_like_a_book(page_path, server, browser):
    """One load per page: it renders cleanly, and it reads like a book (reading_problems)."""
    problems, _ = page_problems(page_path, server, browser)
    assert not problems, f"{page_path}:\n  " + "\n  ".join(problems)


@pytest.mark.parametrize("edition", EDITIONS)
def test_chapters_one_to_four_read_like_a_book(edition, server, browser):
    """Each of chapters 1-4 and their section pages passes what every page must, and together
    they are at most MAX_SCREENS_CHAPTERS_1_TO_4 screens long (issue 21: about 80 before)."""
    paths = chapters_one_to_four(EDITIONS[edition])
    assert len(paths) >= 5, f"chapters 1-4 of the {edition} edition: found only {paths}"
    problems, screens = [], {}
    for page_path in paths:
        found, metrics = page_problems(page_path, server, browser)
        problems += [f"{page_path}: {problem}" for problem in found]
        screens[page_path] = metrics["screens"]
    total = sum(screens.values())
    if total > MAX_SCREENS_CHAPTERS_1_TO_4:
        problems.append(
            f"chapters 1-4 are {total:.1f} screens together (at most "
            f"{MAX_SCREENS_CHAPTERS_1_TO_4}): "
            + ", ".join(f"{Path(p).stem} {s:.1f}" for p, s in screens.items())
        )
    assert not problems, "\n  ".join(problems)


def page_problems(page_path: str, server: str, browser) -> tuple[list[str], dict]:
    """Load ``page_path`` once: everything wrong with it, and its measurements."""
    context = browser.new_context(
        viewport={"width": 1280, "height": 900}, service_workers="block"
    )
    page = context.new_page()
    problems: list[str] = []
    page.on(
        "console",
        lambda message: (
            message.type == "error" and problems.append(f"console: {message.text}")
        ),
    )
    page.on("pageerror", lambda error: problems.append(f"page error: {error}"))
    page.on(
        "requestfailed",
        lambda request: (
            request.url.startswith(server)
            and problems.append(f"request failed: {request.url}")
        ),
    )
    page.on(
        "response",
        lambda response: (
            response.url.startswith(server)
            and response.status >= 400
            and problems.append(f"HTTP {response.status}: {response.url}")
        ),
    )
    outside: list[str] = []

    def only_the_build(route):
        url = route.request.url
        if url.startswith(server) or url.startswith("data:"):
            route.continue_()
        else:
            outside.append(url)
            route.abort()

    page.route("**/*", only_the_build)
    # A page with an explorer loaded in about 9 s on a quiet 2-core machine and in over 30 s
    # (playwright's default limit) while other jobs shared it: the limit is for hangs, not speed.
    page.goto(server + page_path, wait_until="load", timeout=120_000)

    has_mathjax = page.evaluate(
        "() => Boolean(window.MathJax && window.MathJax.startup)"
    )
    if has_mathjax:
        page.evaluate("() => window.MathJax.startup.promise")
        errors = page.evaluate("() => document.querySelectorAll('mjx-merror').length")
        assert errors == 0, f"{page_path}: {errors} MathJax errors"
    raw_tex = page.evaluate(
        r"""() => {
            const spans = [...document.querySelectorAll('.math')];
            return spans.filter(s => !s.querySelector('mjx-container')).map(s => s.textContent.slice(0, 60));
        }"""
    )
    assert not raw_tex, f"{page_path}: math left as raw TeX: {raw_tex[:3]}"
    leftover = page.evaluate(
        r"""() => {
            const walker = document.createTreeWalker(document.querySelector('main') || document.body,
                                                     NodeFilter.SHOW_TEXT);
            const hits = [];
            while (walker.nextNode()) {
                const node = walker.currentNode;
                if (node.parentElement.closest('pre, code, script, style, mjx-container, .highlight')) continue;
                if (/\\\(|\\\[|\$\$|\\begin\{/.test(node.textContent)) hits.push(node.textContent.slice(0, 60));
            }
            return hits;
        }"""
    )
    assert not leftover, f"{page_path}: raw TeX in the text: {leftover[:3]}"

    broken_images = page.evaluate(
        "() => [...document.images].filter(i => !(i.complete && i.naturalWidth > 0)).map(i => i.src)"
    )
    assert not broken_images, f"{page_path}: images that did not load: {broken_images}"

    links = page.evaluate(
        "() => [...document.querySelectorAll('a[href]')].map(a => a.href)"
    )
    unresolved = []
    for link in links:
        if not link.startswith(server):
            continue
        target, fragment = urldefrag(link)
        relative = unquote(urlparse(target).path).lstrip("/")
        file = HTML / relative
        if file.is_dir():
            file = file / "index.html"
        if not file.is_file():
            unresolved.append(link)
        elif (
            fragment
            and file.suffix == ".html"
            and unquote(fragment) not in anchors(file)
        ):
            unresolved.append(link)
    assert not unresolved, (
        f"{page_path}: internal links that do not resolve: {sorted(set(unresolved))[:5]}"
    )

    # Code is formatted to 88 columns (pyproject.toml) and the code box sized for it (book.css):
    # a line of 88 characters must fit every visible code box without wrapping.
    too_narrow = page.evaluate(
        r"""() => [...document.querySelectorAll('div.cell_input pre, div.highlight-python pre')]
            .filter(pre => pre.offsetParent !== null)
            .map(pre => {
                const style = getComputedStyle(pre);
                const probe = document.createElement('span');
                probe.textContent = 'x'.repeat(88);
                probe.style.whiteSpace = 'pre';
                pre.appendChild(probe);
                const needed = probe.getBoundingClientRect().width;
                probe.remove();
                const room = pre.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
                return [needed, room, pre.textContent.slice(0, 40)];
            })
            .filter(([needed, room]) => needed > room)
            .map(([needed, room, text]) => `${Math.round(needed)} px needed, ${Math.round(room)} px: ${text}`)"""
    )
    assert not too_narrow, (
        f"{page_path}: 88 columns of code do not fit the code box: {too_narrow[:3]}"
    )

    if TAKE_SCREENSHOTS:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        # JPEG: a full page at 1280 px encodes in about half the time of a PNG.
        page.screenshot(
            path=str(
                SCREENSHOTS
                / (page_path.replace("/", "_").removesuffix(".html") + ".jpg")
            ),
            full_page=True,
            type="jpeg",
            quality=85,
        )
    found, metrics = reading_problems(page, page_path)
    problems += found
    for name in page.evaluate(
        "() => [...document.querySelectorAll('div.posenc-explorer')]"
        ".map(e => e.id.replace(/^explorer-/, ''))"
    ):
        problems += explorer_problems(page, name)
    if outside:
        problems.append(f"requests outside the build: {outside[:3]}")
    context.close()
    return problems, metrics


# What a page may be (issue 14; ARCHITECTURE.md, "Pages"). Measured with every toggle closed.
SCREEN = {"width": 1280, "height": 900}
PHONE = {"width": 390, "height": 844}
MAX_CODE_SHARE = 0.15
MAX_SCREENS = 20
# Issue 21: a chapter's page (and each of its section pages) at most 14 screens, chapters 1-4
# together at most 55, and the notes named at most 3 times on a chapter page.
MAX_SCREENS_CHAPTER = 14
MAX_SCREENS_CHAPTERS_1_TO_4 = 55
MAX_NOTE_MENTIONS = 3
# Toggle labels that do not say what the toggle holds (both editions' words for them).
GENERIC_TOGGLES = (
    "Checked in code",
    "Show code cell source",
    "Show code cell content",
    "Show code cell output",
    "Show the code",
    "代码中的检验",
    "查看代码",
)
MIN_IMAGE_SCALE = 0.9
TOOLING_WORDS = ("NBVAL", "noqa", "glue(")
METRICS = ROOT / "_build" / "page-metrics"

MEASURE = r"""() => {
    const main = document.querySelector('main') || document.body;
    // Inside a closed toggle an element may keep its size but is not drawn: ask the browser.
    const shown = el => { const r = el.getBoundingClientRect();
        return r.width > 0 && r.height > 0 && el.checkVisibility({visibilityProperty: true}); };
    const height = Math.max(document.documentElement.scrollHeight, document.body.scrollHeight);
    // Code a reader sees: cell sources and listings, not printed results.
    const boxes = [...main.querySelectorAll('div.cell_input, div.highlight')].filter(el =>
        !(el.parentElement && el.parentElement.closest('div.cell_input, div.highlight, div.cell_output')));
    const code = boxes.filter(shown).reduce((sum, el) => sum + el.getBoundingClientRect().height, 0);
    const images = [...document.images].map(img => {
        const designed = img.getAttribute('width') ? parseFloat(img.getAttribute('width')) : img.naturalWidth;
        const top = img.getBoundingClientRect().top + window.scrollY;
        // Sphinx writes the file name when a figure has no alt text: that is no alt text.
        let alt = (img.getAttribute('alt') || '').trim();
        const file = (img.getAttribute('src') || '').split('/').pop();
        if (alt === file || /\.(png|jpe?g|svg|gif)$/i.test(alt)) alt = '';
        return {src: img.getAttribute('src'), alt, designed,
                drawn: img.getBoundingClientRect().width, shown: shown(img), top,
                height: img.getBoundingClientRect().height,
                in_main: main.contains(img)};
    });
    // Visible text, line by line: tooling words anywhere, punctuation-only lines in prose.
    const tooling = [], stray = [];
    const walker = document.createTreeWalker(main, NodeFilter.SHOW_ELEMENT);
    const blocks = [];
    while (walker.nextNode()) {
        const el = walker.currentNode;
        if (el.matches('p, li, dd, dt, td, th, figcaption, .admonition-title, summary, h1, h2, h3, h4, caption'))
            blocks.push(el);
    }
    for (const el of blocks) {
        if (!shown(el) || el.closest('pre, mjx-container, .highlight')) continue;
        // Lay the block's words and formulas out as the reader sees them, line by line (by the
        // top of each box), and flag a line made of punctuation alone, such as a "." or "(".
        const boxes = [];
        const add = (rect, text) => {
            if (rect && rect.width > 0) boxes.push({top: rect.top, bottom: rect.bottom, text});
        };
        const inner = document.createTreeWalker(el, NodeFilter.SHOW_TEXT | NodeFilter.SHOW_ELEMENT);
        while (inner.nextNode()) {
            const node = inner.currentNode;
            if (node.nodeType === Node.ELEMENT_NODE) {
                if (node.matches('mjx-container')) add(node.getBoundingClientRect(), 'M');
                continue;
            }
            if (node.parentElement.closest('mjx-container')) continue;
            const text = node.textContent;
            const words = /\S+/g;
            let match;
            while ((match = words.exec(text))) {
                const range = document.createRange();
                range.setStart(node, match.index);
                range.setEnd(node, match.index + match[0].length);
                add(range.getClientRects()[0], match[0]);
            }
        }
        // Boxes whose middles fall within one another's height share a line.
        boxes.sort((a, b) => a.top - b.top);
        const lines = [];
        for (const box of boxes) {
            const middle = (box.top + box.bottom) / 2;
            const line = lines.find(l => middle >= l.top && middle <= l.bottom);
            if (line) { line.words.push(box.text); line.top = Math.min(line.top, box.top);
                        line.bottom = Math.max(line.bottom, box.bottom); }
            else lines.push({top: box.top, bottom: box.bottom, words: [box.text]});
        }
        for (const {words} of lines) {
            const line = words.join(' ');
            if (/^[\s.,;:!?()\[\]{}'"“”‘’\u2013\u2014-]+$/.test(line))
                stray.push(`"${line}" in: ${el.textContent.trim().slice(0, 70)}`);
        }
    }
    for (const el of main.querySelectorAll('*')) {
        if (el.children.length || !shown(el)) continue;
        for (const word of %(words)s) if (el.textContent.includes(word)) tooling.push(el.textContent.trim().slice(0, 80));
    }
    // What each toggle says on its closed face: hidden cells (myst-nb) and dropdown
    // admonitions (solutions, errata).
    const toggles = [...main.querySelectorAll(
        'details.hide > summary .collapsed, div.dropdown.admonition > .admonition-title')]
        .map(el => el.textContent.replace(/\s+/g, ' ').trim());
    // The study notes named in the text a reader sees (closed toggles are not rendered, so
    // innerText leaves them out): "note 002", "notes 002 and 003" (one mention), "笔记 002".
    const article = document.querySelector('article') || main;
    const notes = article.innerText.match(/\bnotes?\s+00[023]\b|笔记\s*00[023]/gi) || [];
    return {height, screens: height / window.innerHeight, code, code_share: code / height, images,
            tooling, stray, toggles, notes};
}""".replace("%(words)s", json.dumps(list(TOOLING_WORDS)))


def _is_chapter(page_path: str) -> bool:
    return Path(page_path).name[:2].isdigit()


def reading_problems(page, page_path: str) -> tuple[list[str], dict]:
    """What issue 14 asks of a page, measured on ``page`` (loaded at 1280 x 900, math
    typeset); leaves the page at phone width. Writes _build/page-metrics/<page>.json (and,
    with TAKE_SCREENSHOTS, the phone screenshot)."""
    page.evaluate(
        "() => Promise.all([...document.images].map(i => i.decode().catch(() => null)))"
    )
    wide = page.evaluate(MEASURE)
    wide_width = page.evaluate(
        "() => Math.max(document.documentElement.scrollWidth, document.body.scrollWidth)"
    )
    page.set_viewport_size(PHONE)
    page.wait_for_timeout(100)
    phone_width = page.evaluate(
        "() => Math.max(document.documentElement.scrollWidth, document.body.scrollWidth)"
    )
    if TAKE_SCREENSHOTS:
        phone_screenshot(page, page_path)

    METRICS.mkdir(parents=True, exist_ok=True)
    (
        METRICS / (page_path.replace("/", "_").removesuffix(".html") + ".json")
    ).write_text(
        json.dumps({**wide, "width": wide_width, "phone_width": phone_width}, indent=1),
        encoding="utf-8",
    )
    problems = []
    if wide["code_share"] > MAX_CODE_SHARE:
        problems.append(
            f"visible code is {wide['code_share']:.0%} of the page (at most {MAX_CODE_SHARE:.0%})"
        )
    most = MAX_SCREENS_CHAPTER if _is_chapter(page_path) else MAX_SCREENS
    if wide["screens"] > most:
        problems.append(f"{wide['screens']:.1f} screens long (at most {most})")
    if _is_chapter(page_path) and len(wide["notes"]) > MAX_NOTE_MENTIONS:
        problems.append(
            f"names the notes {len(wide['notes'])} times in its visible text (at most "
            f"{MAX_NOTE_MENTIONS}): {wide['notes']}"
        )
    repeated = sorted({t for t in wide["toggles"] if wide["toggles"].count(t) > 1})
    if repeated:
        problems.append(f"toggles that share a label: {repeated}")
    generic = sorted({t for t in wide["toggles"] if t in GENERIC_TOGGLES})
    if generic:
        problems.append(f"toggles whose label does not say what they hold: {generic}")
    for image in wide["images"]:
        if not image["alt"]:
            problems.append(f"image without alt text: {image['src']}")
        if image["shown"] and image["drawn"] < MIN_IMAGE_SCALE * image["designed"]:
            problems.append(
                f"image drawn at {image['drawn'] / image['designed']:.0%} of its designed "
                f"{image['designed']:.0f} px: {image['src']}"
            )
    if wide["tooling"]:
        problems.append(f"tooling words in the text: {wide['tooling'][:3]}")
    if wide["stray"]:
        problems.append(f"lines of only punctuation: {wide['stray'][:3]}")
    if _is_chapter(page_path) and not any(
        # At least half of a figure within the first screen, above the fold.
        image["in_main"]
        and image["shown"]
        and image["top"] + image["height"] / 2 <= SCREEN["height"]
        for image in wide["images"]
    ):
        problems.append("no figure on the first screen")
    if wide_width > SCREEN["width"]:
        problems.append(f"{wide_width} px wide on a {SCREEN['width']} px screen")
    if phone_width > PHONE["width"]:
        problems.append(f"{phone_width} px wide on a {PHONE['width']} px phone")
    return problems, wide


def phone_screenshot(page, page_path: str) -> None:
    """The first three phone screens: where a phone's reader meets the page's idea and layout."""
    (SCREENSHOTS / "phone").mkdir(parents=True, exist_ok=True)
    phone_height = page.evaluate("() => document.documentElement.scrollHeight")
    page.screenshot(
        path=str(
            SCREENSHOTS
            / "phone"
            / (page_path.replace("/", "_").removesuffix(".html") + ".png")
        ),
        full_page=True,
        clip={
            "x": 0,
            "y": 0,
            "width": PHONE["width"],
            "height": min(phone_height, 3 * PHONE["height"]),
        },
    )
