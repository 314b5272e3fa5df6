"""A link on every page to the same page in the other edition (English at the root of the
HTML, Chinese under ``zh/``).

The English build is ``language`` None or "en"; the Chinese build has ``language = "zh_CN"``
and is written to ``_build/html/zh``. The link is relative, so both editions work from any
address and offline.
"""

from __future__ import annotations

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
LABELS = (
    Path(__file__).resolve().parents[2]
    / "locales"
    / "zh_CN"
    / "LC_MESSAGES"
    / "cell_labels.po"
)


def cell_labels() -> dict[str, str]:
    from babel.messages.pofile import read_po

    with LABELS.open("rb") as file:
        return {m.id: m.string for m in read_po(file) if m.id and m.string}


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
    app.connect("build-finished", write_index)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
