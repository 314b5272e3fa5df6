"""book/_ext/author_year_labels.py: the bibliography is labelled as the text cites it."""

import sys
from pathlib import Path

from pybtex.database import parse_file

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "book" / "_ext"))
import author_year_labels  # noqa: E402


def _labels() -> dict[str, str]:
    entries = parse_file(str(ROOT / "book" / "references.bib")).entries
    style = author_year_labels.AuthorYearStyle()
    ordered = list(style.sort(entries.values()))
    return {
        entry.key: label for entry, label in zip(ordered, style.format_labels(ordered))
    }


def test_labels_read_like_author_year_citations():
    labels = _labels()
    assert labels["vaswani2017attention"] == "Vaswani et al., 2017"
    assert labels["wang2021gptj"] == "Wang and Komatsuzaki, 2021"
    assert labels["bloc97_2023ntk"] == "bloc97, 2023"


def test_equal_labels_get_a_letter_after_the_year_and_every_label_is_unique():
    labels = _labels()
    assert labels["mikolov2013efficient"] == "Mikolov et al., 2013a"
    assert labels["mikolov2013linguistic"] == "Mikolov et al., 2013b"
    assert len(set(labels.values())) == len(labels)


def test_braced_names_sort_by_their_letters():
    entries = parse_file(str(ROOT / "book" / "references.bib")).entries
    ordered = [
        entry.key
        for entry in author_year_labels.AuthorYearStyle().sort(entries.values())
    ]
    assert ordered.index("black2022gptneox") < ordered.index("bloc97_2023ntk")
    assert ordered.index("bloc97_2023ntk") < ordered.index("chen2023extending")
