"""The Chinese edition's catalogues (issue 16): complete, current, and faithful to the markup.

A catalogue entry is one English message (MyST source) and its Chinese translation. The tests
fail when a message is untranslated or fuzzy, when the English prose has changed since the
catalogues were updated (`make catalogues`), and when a translation lost a formula, a code span
or a cross-reference of its message.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from babel.messages.pofile import read_po

ROOT = Path(__file__).resolve().parents[1]
CATALOGUES = ROOT / "locales" / "zh_CN" / "LC_MESSAGES"


def catalogues() -> list[Path]:
    """The page catalogues (cell_labels.po, translated by hand, is not one)."""
    return sorted((CATALOGUES / "book").glob("*.po"))


def messages(path: Path):
    with path.open("rb") as file:
        return [m for m in read_po(file) if m.id]


def test_there_is_a_catalogue_per_page():
    pages = {p.stem for p in (ROOT / "book").glob("*.ipynb")} | {
        p.stem for p in (ROOT / "book").glob("*.md")
    }
    assert {p.stem for p in catalogues()} == pages


@pytest.mark.parametrize("path", catalogues(), ids=lambda p: p.stem)
def test_every_message_is_translated_and_none_is_fuzzy(path):
    untranslated = [m.id[:60] for m in messages(path) if not m.string]
    fuzzy = [m.id[:60] for m in messages(path) if m.fuzzy]
    assert not untranslated, f"untranslated: {untranslated[:3]}"
    assert not fuzzy, f"fuzzy (the English changed): {fuzzy[:3]}"


ROLE = re.compile(r"\{[\w:-]+\}`([^`]*)`")
CODE = re.compile(r"``?([^`]+)``?")


def markup(text: str) -> tuple[list[str], list[str]]:
    """The cross-reference targets (a role's text before ``<`` may be translated) and the code
    spans of a message, each sorted."""
    targets = [
        role.rsplit("<", 1)[1].rstrip(">") if "<" in role else role
        for role in ROLE.findall(text)
    ]
    code = CODE.findall(ROLE.sub(" ", text))
    return sorted(targets), sorted(code)


@pytest.mark.parametrize("path", catalogues(), ids=lambda p: p.stem)
def test_translations_keep_roles_targets_and_code(path):
    for message in messages(path):
        assert markup(message.string) == markup(message.id), message.id[:60]


def test_catalogues_hold_the_current_english(tmp_path):
    """Extract the English messages afresh: every one must be in a catalogue (run `make
    catalogues` after changing English prose, then translate what it marks)."""
    subprocess.run(
        [
            sys.executable,
            "-m",
            "sphinx",
            "-b",
            "gettext",
            "-q",
            "-D",
            "nb_execution_mode=off",
            "-D",
            "gettext_compact=0",
            str(ROOT),
            str(tmp_path),
        ],
        check=True,
        cwd=ROOT,
        env={"POSENC_RENDER_STORED": "1", "PATH": "/usr/bin:/bin"},
    )
    missing = []
    for template in tmp_path.rglob("*.pot"):
        relative = template.relative_to(tmp_path).with_suffix(".po")
        catalogue = CATALOGUES / relative
        known = {m.id for m in messages(catalogue)} if catalogue.is_file() else set()
        with template.open("rb") as file:
            for message in read_po(file):
                if message.id and message.id not in known:
                    missing.append(f"{relative}: {message.id[:60]}")
    assert not missing, f"English messages without a translation: {missing[:5]}"


def test_every_hidden_cell_label_caption_and_the_title_have_a_translation():
    """The labels of hidden cells are cell metadata: gettext does not see them, so they are
    translated in locales/zh_CN/LC_MESSAGES/cell_labels.po (book/_ext/language_switch.py)."""
    import json

    import yaml

    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    used = {
        config["sphinx"]["config"]["nb_code_prompt_show"],
        config["sphinx"]["config"]["nb_code_prompt_hide"],
    }
    for path in (ROOT / "book").glob("*.ipynb"):
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            settings = cell.get("metadata", {}).get("mystnb", {})
            used |= {
                settings[key]
                for key in ("code_prompt_show", "code_prompt_hide")
                if key in settings
            }
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
    used |= {part["caption"] for part in toc.get("parts", []) if part.get("caption")}
    used.add(config["title"])
    translated = {m.id for m in messages(CATALOGUES / "cell_labels.po") if m.string}
    assert used - translated == set(), sorted(used - translated)


MATH = re.compile(r"\$\$.*?\$\$|\$[^$]+\$", re.S)
# A note quoted in Chinese, then its English rendering: "…中文…" (*English*) or (English).
RENDERING = re.compile(
    r"[\u3400-\u9fff][^\"”]*[\"”]\s*\((?:\*(.+?)\*|([^()*]*))\)", re.S
)


def dropped_formulas(english: str) -> list[str]:
    """The formulas of a message that stand in English renderings of Chinese quotes: the
    Chinese edition quotes the note's own words and leaves the rendering out."""
    return [
        formula
        for italic, plain in RENDERING.findall(english)
        for formula in MATH.findall(italic or plain)
    ]


@pytest.mark.parametrize("path", catalogues(), ids=lambda p: p.stem)
def test_translations_keep_every_formula_but_those_of_renderings(path):
    for message in messages(path):
        expected = sorted(MATH.findall(message.id))
        for formula in dropped_formulas(message.id):
            expected.remove(formula)
        assert sorted(MATH.findall(message.string)) == expected, message.id[:60]


def glossary_terms() -> list[tuple[str, list[str]]]:
    """(English term, its Chinese names) for every glossary entry that gives Chinese names
    (the line under the term in book/appendix_glossary.md)."""
    source = (ROOT / "book" / "appendix_glossary.md").read_text(encoding="utf-8")
    lines = source.split("```{glossary}")[1].split("```")[0].split("\n")
    entries, blank = [], True
    for k, line in enumerate(lines):
        if line and not line.startswith(" ") and blank:
            below = lines[k + 1] if k + 1 < len(lines) else ""
            if (
                below
                and not below.startswith(" ")
                and re.search(r"[\u3400-\u9fff]", below)
            ):
                names = [n.strip() for n in re.split(r"[，,、;；]", below) if n.strip()]
                entries.append((line.strip(), names))
        blank = not line.strip()
    return entries


def test_the_chinese_edition_uses_the_glossarys_terms():
    """Every Chinese name the glossary gives is what the edition writes: at least one of an
    entry's names appears in the translated pages outside the glossary."""
    text = "\n".join(
        m.string
        for path in catalogues()
        if path.stem != "appendix_glossary"
        for m in messages(path)
    )
    entries = glossary_terms()
    assert len(entries) > 40
    unused = [term for term, names in entries if not any(n in text for n in names)]
    assert not unused, f"glossary terms the Chinese pages never use: {unused}"


def alt_texts() -> dict[str, str]:
    """Every image's alt text in the sources, with the page it is on: ``:alt:`` options and
    Markdown images in the text, cells' ``mystnb.image.alt``, and the ``alt`` and
    ``aria-label`` attributes in the stored HTML outputs (explorers' stills, glued images)."""
    import html
    import json

    found: dict[str, str] = {}
    for path in sorted((ROOT / "book").glob("*.ipynb")) + sorted(
        (ROOT / "book").glob("*.md")
    ):
        if path.suffix == ".md":
            cells = [{"source": path.read_text(encoding="utf-8")}]
        else:
            cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        for cell in cells:
            source = "".join(cell["source"])
            texts = re.findall(r"^\s*:alt:\s*(.+?)\s*$", source, re.M)
            texts += re.findall(r"!\[([^\]]+)\]\(", source)
            alt = cell.get("metadata", {}).get("mystnb", {}).get("image", {}).get("alt")
            texts += [alt] if alt else []
            for output in cell.get("outputs", []):
                for mime, data in output.get("data", {}).items():
                    if mime.endswith("text/html"):
                        attributes = r'\b(?:alt|aria-label)="([^"]*)"'
                        texts += map(
                            html.unescape, re.findall(attributes, "".join(data))
                        )
            for text in texts:
                if re.search(r"[A-Za-z]{3}", text):
                    found.setdefault(text, path.name)
    return found


def test_every_alt_text_has_a_translation():
    """gettext does not extract alt text: each is translated in alt_text.po (msgid the
    English text), or, for the labels of matplotlib's animation controls, in interface.po;
    book/_ext/language_switch.py applies both to the Chinese build. After changing a
    figure's alt text, add its new text to alt_text.po (and drop the old entry)."""
    translated = {
        m.id
        for name in ("alt_text.po", "interface.po")
        for m in messages(CATALOGUES / name)
        if m.string and not m.fuzzy
    }
    texts = alt_texts()
    assert len(texts) > 40
    missing = [
        f"{page}: {text}" for text, page in texts.items() if text not in translated
    ]
    assert not missing, (
        f"{len(missing)} alt texts lack a translation in "
        "locales/zh_CN/LC_MESSAGES/alt_text.po:\n" + "\n".join(missing)
    )


def test_the_alt_text_catalogue_holds_no_stale_entry():
    """An entry whose English alt text is no longer in the book is left over from an
    earlier text: replace it by the new one."""
    texts = alt_texts()
    stale = [m.id for m in messages(CATALOGUES / "alt_text.po") if m.id not in texts]
    assert not stale, f"alt_text.po entries no figure uses any more: {stale}"


@pytest.mark.parametrize(
    "name", ["alt_text.po", "interface.po", "booktheme.po", "sphinx.po"]
)
def test_the_interface_catalogues_are_translated_in_chinese_style(name):
    """Every entry translated; full-width punctuation (no ASCII comma, colon, semicolon or
    full stop after a Chinese character), no space between two Chinese characters, no
    space before %."""
    for message in messages(CATALOGUES / name):
        text = message.string
        assert text and not message.fuzzy, message.id[:60]
        assert not re.search(r"[\u3400-\u9fff][,:;.](\s|$)", text), (name, text[:60])
        assert not re.search(r"[\u3400-\u9fff] [\u3400-\u9fff]", text), (
            name,
            text[:60],
        )
        assert " %" not in text.replace(" %(", "("), (name, text[:60])


def test_the_chinese_build_replaces_whole_attribute_values_and_labels_only():
    """book/_ext/language_switch.translate_html: an attribute value or a <label> equal to a
    msgid is replaced (escaped as HTML), anything else is left as it is."""
    sys.path.insert(0, str(ROOT / "book" / "_ext"))
    from language_switch import translate_html

    messages = {"Play": "播放", 'a "b" & c': "甲“乙”与丙", "Once": "播放一次"}
    page = (
        '<button title="Play" aria-label="Play again">Play</button>'
        '<img alt="a &quot;b&quot; &amp; c"><label for="x">Once</label>'
    )
    assert translate_html(page, messages) == (
        '<button title="播放" aria-label="Play again">Play</button>'
        '<img alt="甲“乙”与丙"><label for="x">播放一次</label>'
    )
