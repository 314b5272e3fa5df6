"""Label the bibliography by author and year, as the text cites it.

The chapters cite with sphinxcontrib-bibtex's author-year style, "(Vaswani et al., 2017)",
but its default bibliography style, pybtex's ``alpha``, labels the list "[VSP+17]". This
extension registers three plugins that make the two agree:

- the pybtex label style ``author_year``: "Vaswani et al., 2017", "Wang and Komatsuzaki,
  2021"; two works with the same label get "a", "b" after the year, in list order;
- the pybtex formatting style ``author_year`` (``bibtex_default_style``): pybtex's
  ``unsrt`` entries, sorted by author, year and title, labelled as above, with the title
  linking to the work's ``url`` instead of printing the address after it (a long address
  cannot break, so the full stop after it wrapped onto a line of its own);
- the referencing style ``author_year_labels`` (``bibtex_reference_style``): the
  author-year citations of sphinxcontrib-bibtex, whose year carries the same "a"/"b" as
  the label, so "(Mikolov et al., 2013a)" in the text points at "[Mikolov et al., 2013a]".
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from string import ascii_lowercase

import pybtex.plugin
from pybtex.richtext import Text
from pybtex.style.formatting.unsrt import Style as UnsrtStyle
from pybtex.style.labels import BaseLabelStyle
from pybtex.style.sorting.author_year_title import SortingStyle
from pybtex.style.template import field as bib_field
from pybtex.style.template import href, join, sentence
from sphinx.application import Sphinx
from sphinxcontrib.bibtex.plugin import register_plugin
from sphinxcontrib.bibtex.style.referencing import (
    BaseReferenceStyle,
    BracketStyle,
    PersonStyle,
)
from sphinxcontrib.bibtex.style.referencing.author_year import (
    AuthorYearReferenceStyle,
)
from sphinxcontrib.bibtex.style.template import join as cite_join
from sphinxcontrib.bibtex.style.template import (
    join2,
    node,
    post_text,
    pre_text,
    reference,
)

NAME = "author_year"
REFERENCE_STYLE = "author_year_labels"
LABEL_YEAR_SEPARATOR = ", "


def _last_names(person) -> str:
    """The person's last name (with a prefix such as "von"), braces removed."""
    parts = [*person.rich_prelast_names, *person.rich_last_names]
    return Text(" ").join(parts).render_as("text")


class AuthorYearLabelStyle(BaseLabelStyle):
    """Labels such as "Vaswani et al., 2017", "a"/"b" added where two would be equal."""

    def format_labels(self, sorted_entries):
        labels = [self.format_label(entry) for entry in sorted_entries]
        count = Counter(labels)
        used = Counter()
        for label in labels:
            if count[label] == 1:
                yield label
            else:
                yield label + ascii_lowercase[used[label]]
                used[label] += 1

    def format_label(self, entry) -> str:
        persons = entry.persons.get("author") or entry.persons.get("editor") or []
        names = [_last_names(person) for person in persons]
        if not names:
            who = Text(entry.fields.get("title", entry.key)).render_as("text")
        elif len(names) == 1:
            who = names[0]
        elif len(names) == 2:
            who = f"{names[0]} and {names[1]}"
        else:
            who = f"{names[0]} et al."
        return who + LABEL_YEAR_SEPARATOR + entry.fields.get("year", "n.d.")


class AuthorYearSorting(SortingStyle):
    """pybtex's author, year, title order, reading "{bloc97}" as bloc97, not after z."""

    def person_key(self, person):
        return super().person_key(person).replace("{", "").replace("}", "")


class AuthorYearStyle(UnsrtStyle):
    """pybtex's unsrt entries, sorted by author and year, labelled by author and year."""

    default_sorting_style = AuthorYearSorting
    default_label_style = AuthorYearLabelStyle

    def format_title(self, e, which_field, as_sentence=True):
        title = super().format_title(e, which_field, as_sentence=False)
        if "url" in e.fields:
            title = href(bib_field("url", raw=True))[title]
        return sentence[title] if as_sentence else title

    def format_web_refs(self, e):
        # The address is on the title; keep the arXiv number and the DOI, which are short.
        return sentence[
            join(sep=", ")[self.format_eprint(e)] if "eprint" in e.fields else "",
            join(sep=", ")[self.format_doi(e)] if "doi" in e.fields else "",
        ]


@node
def label_year(children, data) -> Text:
    """The year as the bibliography labels it: "2013a" where two labels would be equal."""
    assert not children
    label = data["formatted_entry"].label
    return Text(label.rpartition(LABEL_YEAR_SEPARATOR)[2])


@dataclass
class _Parenthetical(BaseReferenceStyle):
    """(Mikolov et al., 2013a): sphinxcontrib-bibtex's, with the labelled year."""

    bracket: BracketStyle = field(default_factory=BracketStyle)
    person: PersonStyle = field(default_factory=PersonStyle)

    def role_names(self):
        return [f"{alt}p{full}" for alt in ["", "al"] for full in ["", "s"]]

    def outer(self, role_name, children):
        return self.bracket.outer(
            children, brackets="al" not in role_name, capfirst=False
        )

    def inner(self, role_name):
        return join2(sep1=" ", sep2=", ")[
            pre_text,
            reference[
                cite_join(sep=", ")[
                    self.person.author_or_editor_or_title(full="s" in role_name),
                    label_year,
                ]
            ],
            post_text,
        ]


@dataclass
class _Textual(BaseReferenceStyle):
    """Mikolov et al. (2013a): sphinxcontrib-bibtex's, with the labelled year."""

    bracket: BracketStyle = field(default_factory=BracketStyle)
    person: PersonStyle = field(default_factory=PersonStyle)

    def role_names(self):
        return [f"{cap}t{full}" for cap in ["", "c"] for full in ["", "s"]]

    def outer(self, role_name, children):
        return self.bracket.outer(children, brackets=False, capfirst="c" in role_name)

    def inner(self, role_name):
        return cite_join(sep=" ")[
            self.person.author_or_editor_or_title(full="s" in role_name),
            cite_join[
                self.bracket.left,
                join2(sep1=" ", sep2=", ")[pre_text, reference[label_year], post_text],
                self.bracket.right,
            ],
        ]


@dataclass
class AuthorYearLabelsReferenceStyle(AuthorYearReferenceStyle):
    """sphinxcontrib-bibtex's author_year, with years that match the labels."""

    def __post_init__(self):
        super().__post_init__()
        labelled = [
            _Parenthetical(bracket=self.bracket_parenthetical, person=self.person),
            _Textual(bracket=self.bracket_textual, person=self.person),
        ]
        # The parent's first two styles are its parenthetical and textual ones.
        self.styles[:2] = labelled
        self.role_style.update(
            (role_name, style) for style in labelled for role_name in style.role_names()
        )


def setup(app: Sphinx) -> dict:
    pybtex.plugin.register_plugin("pybtex.style.labels", NAME, AuthorYearLabelStyle)
    pybtex.plugin.register_plugin("pybtex.style.formatting", NAME, AuthorYearStyle)
    register_plugin(
        "sphinxcontrib.bibtex.style.referencing",
        REFERENCE_STYLE,
        AuthorYearLabelsReferenceStyle,
    )
    return {"parallel_read_safe": True, "parallel_write_safe": True}
