"""A link on every page to the same page in the other edition (English at the root of the
HTML, Chinese under ``zh/``).

The English build is ``language`` None or "en"; the Chinese build has ``language = "zh_CN"``
and is written to ``_build/html/zh``. The link is relative, so both editions work from any
address and offline.
"""

from __future__ import annotations

import html
import re
from pathlib import Path

from sphinx.application import Sphinx

CHINESE = "zh_CN"
CHINESE_DIR = "zh"


def other_edition(pagename: str, language: str | None) -> tuple[str, str, str]:
    """(href, link text, language tag) of ``pagename`` in the other edition."""
    depth = pagename.count("/")
    if language == CHINESE:
        return "../" * (depth + 1) + f"{pagename}.html", "English", "en"
    return "../" * depth + f"{CHINESE_DIR}/{pagename}.html", "中文", "zh-CN"


def add_switch(app: Sphinx, pagename, templatename, context, doctree) -> None:
    if app.builder.format != "html" or "body" not in context:
        return
    href, text, tag = other_edition(pagename, app.config.language)
    context["body"] = (
        f'<p class="language-switch"><a href="{href}" hreflang="{tag}" lang="{tag}">'
        f"{text}</a></p>\n" + context["body"]
    )


#: The labels of hidden cells (cell metadata), the table of contents' captions and the title,
#: which gettext does not extract, translated by hand in one catalogue;
#: tests/test_translation.py checks every one has a translation.
MESSAGES = Path(__file__).resolve().parents[2] / "locales" / "zh_CN" / "LC_MESSAGES"
LABELS = MESSAGES / "cell_labels.po"
#: The theme's interface, Chinese build only (ARCHITECTURE.md, "Two editions"):
#: sphinx.po fills the gaps of Sphinx's and pydata-sphinx-theme's catalogues (domain
#: "sphinx", which Sphinx itself loads from locale_dirs ahead of theirs); booktheme.po those
#: of sphinx-book-theme's (put ahead of the theme's own here); interface.po the strings
#: written into the HTML untranslatable (myst-nb's toggles, the book theme's navigation
#: labels, matplotlib's animation controls, the search box); alt_text.po every image's alt
#: text (gettext does not extract it).
BOOKTHEME = MESSAGES / "booktheme.po"
INTERFACE = MESSAGES / "interface.po"
ALT_TEXT = MESSAGES / "alt_text.po"


def catalogue(path: Path) -> dict[str, str]:
    from babel.messages.pofile import read_po

    with path.open("rb") as file:
        return {m.id: m.string for m in read_po(file) if m.id and m.string}


def cell_labels() -> dict[str, str]:
    return catalogue(LABELS)


def translate_title(app: Sphinx, config) -> None:
    """The Chinese build's title (the sidebar and every page's <title>)."""
    if config.language == CHINESE:
        config.html_title = cell_labels().get(config.html_title, config.html_title)


def translate_cell_labels(app: Sphinx, doctree) -> None:
    """In the Chinese build, the "Show ..." / "Hide ..." labels of hidden cells and the
    captions of the table of contents (from _toc.yml, which gettext does not see)."""
    if app.config.language != CHINESE:
        return
    from sphinx import addnodes

    labels = cell_labels()
    for toctree in doctree.findall(addnodes.toctree):
        caption = toctree.get("caption")
        if caption:
            toctree["caption"] = labels.get(caption, caption)
    for node in doctree.findall(lambda n: hasattr(n, "attributes")):
        for key in ("prompt_show", "prompt_hide"):
            value = node.attributes.get(key)
            if isinstance(value, str):
                node[key] = labels.get(value, value)


def translate_config(app: Sphinx, config) -> None:
    """The Chinese build's search box, and sphinx-togglebutton's hints from its own zh-cn
    catalogue (which Sphinx, looking for zh_CN or zh, never finds). Runs before
    togglebutton writes the hints into the page (priority 400 < 500)."""
    if config.language != CHINESE:
        return
    interface = catalogue(INTERFACE)
    options = dict(config.html_theme_options)
    text = options.get("search_bar_text", "")
    options["search_bar_text"] = interface.get(text, text)
    config.html_theme_options = options
    import gettext

    import sphinx_togglebutton

    mo = (
        Path(sphinx_togglebutton.__file__).parent
        / "translations/locales/zh-cn/LC_MESSAGES/togglebutton.mo"
    )
    with mo.open("rb") as file:
        toggle = gettext.GNUTranslations(file)
    config.togglebutton_hint = toggle.gettext("Click to show")
    config.togglebutton_hint_hide = toggle.gettext("Click to hide")
    # togglebutton.js writes its buttons' screen-reader label itself, in English, once the
    # page has loaded: relabel them after it.
    label = "Toggle hidden content"
    select = (
        f"[aria-label='{label}']"  # not aria-label="…", which translate_html rewrites
    )
    app.add_js_file(
        None,
        body=(
            f'window.addEventListener("load", () => document.querySelectorAll("{select}")'
            f'.forEach(b => b.setAttribute("aria-label", "{interface[label]}")));'
        ),
    )


class _Catalogue:
    """A gettext translations object over one of our .po files (no .mo needed)."""

    def __init__(self, messages: dict[str, str], fallback) -> None:
        self.messages, self.fallback = messages, fallback

    def gettext(self, message: str) -> str:
        if message in self.messages:
            return self.messages[message]
        return self.fallback.gettext(message) if self.fallback else message

    def ngettext(self, singular: str, plural: str, n: int) -> str:
        if n == 1 and singular in self.messages:
            return self.messages[singular]
        if self.fallback:
            return self.fallback.ngettext(singular, plural, n)
        return singular if n == 1 else plural


#: Attribute values a reader meets (tooltips, screen-reader labels, the search box's
#: placeholder, alt text) and the labels of matplotlib's animation controls.
ATTRIBUTE = re.compile(r'\b(alt|title|aria-label|placeholder|data-bs-title)="([^"]*)"')
LABEL = re.compile(r"(<label\b[^>]*>)([^<]+)(</label>)")


def translate_html(text: str, messages: dict[str, str]) -> str:
    """``text`` with every attribute value and label that ``messages`` holds translated."""

    def attribute(match: re.Match) -> str:
        value = html.unescape(match.group(2))
        if value not in messages:
            return match.group(0)
        return f'{match.group(1)}="{html.escape(messages[value], quote=True)}"'

    def label(match: re.Match) -> str:
        value = match.group(2).strip()
        if value not in messages:
            return match.group(0)
        return match.group(1) + html.escape(messages[value]) + match.group(3)

    return LABEL.sub(label, ATTRIBUTE.sub(attribute, text))


def translate_interface(app: Sphinx) -> None:
    """In the Chinese build: sphinx-book-theme's catalogue with ours ahead of it, and every
    page as rendered passed through `translate_html` with interface.po and alt_text.po."""
    if app.config.language != CHINESE or app.builder.format != "html":
        return
    from sphinx import locale

    key = ("general", "booktheme")
    locale.translators[key] = _Catalogue(
        catalogue(BOOKTHEME), locale.translators.get(key)
    )
    messages = {**catalogue(INTERFACE), **catalogue(ALT_TEXT)}
    templates = app.builder.templates
    render = templates.render

    def render_in_chinese(template: str, context: dict) -> str:
        return translate_html(render(template, context), messages)

    templates.render = render_in_chinese


def write_index(app: Sphinx, exception: Exception | None) -> None:
    """The Chinese edition's own index.html: a redirect to its preface, as the English one."""
    if exception is not None or app.builder.format != "html":
        return
    if app.config.language != CHINESE:
        return
    (Path(app.outdir) / "index.html").write_text(
        '<meta http-equiv="Refresh" content="0; url=book/intro.html" />\n',
        encoding="utf-8",
    )


def setup(app: Sphinx) -> dict:
    app.connect("html-page-context", add_switch)
    app.connect("doctree-read", translate_cell_labels)
    app.connect("config-inited", translate_title)
    app.connect("config-inited", translate_config, priority=400)
    app.connect("builder-inited", translate_interface)
    app.connect("build-finished", write_index)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
