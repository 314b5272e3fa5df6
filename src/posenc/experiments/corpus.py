"""The real text of issue 23: the King James Bible as bytes, split by books. numpy only.

The stored file ``kjv/kjv.txt.xz`` (package data, read through importlib.resources) is
the text of Debian's ``bible-kjv-text`` byte for byte (``kjv/README.md`` says where it
comes from, ``kjv/corpus.json`` records its hashes and sizes): a title line, then one verse
per line, ``Ge1:1 In the beginning God created the heaven and the earth.``, ASCII only.

Normalising (:func:`parse_verses`, :func:`split_text`), every step:

1. the title line ``Holy Bible, Authorized (King James) Version.  Textfile 930105.`` is
   dropped (it names the file, it is no Bible text);
2. each verse line loses its reference (book, chapter:verse and one space): a reference
   is a counter, not language, and a byte model would spend its capacity and its context
   on copying and incrementing numbers;
3. each verse is kept as it stands, followed by ``\\n``; nothing else is changed (two
   verses keep a double space, one a trailing space, as the file has them).

The split is by books, contiguous, in the file's order (:data:`SPLIT`): train is Genesis
to Acts, test the letters under Paul's name (Romans to Philemon), validation Hebrews to
Revelation. No verse is in two parts, so the test text is unseen. Tokens are bytes: token = byte value, the
vocabulary all 256 bytes (:data:`VOCAB_SIZE`; the normalised text uses 63), so nothing maps
and bits per byte are the model's loss in bits.

Windows: :class:`TextTask` draws seeded training windows from the train part;
:func:`evaluation_windows` cuts a part into consecutive windows (the whole-window
protocol: every position scored) and :func:`fixed_target_windows` gives windows of any
length that end on the same tokens (the fixed-target protocol: the same last tokens
scored behind a growing prefix).
"""

from __future__ import annotations

import hashlib
import json
import lzma
import re
from dataclasses import dataclass
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path

import numpy as np

from posenc._validation import check_positive_int

#: The corpus folder, package data of ``posenc.experiments``.
CORPUS_DIR = resources.files("posenc.experiments") / "kjv"
TEXT_FILE = "kjv.txt.xz"
MANIFEST_FILE = "corpus.json"
#: Tokens are bytes: token t is the byte t, for every t in 0 .. 255.
VOCAB_SIZE = 256
#: The 66 books in the file's order, by the file's own abbreviations.
BOOKS = (
    *("Ge", "Exo", "Lev", "Num", "Deu", "Josh", "Jdgs", "Ruth", "1Sm", "2Sm", "1Ki"),
    *("2Ki", "1Chr", "2Chr", "Ezra", "Neh", "Est", "Job", "Psa", "Prv", "Eccl", "SSol"),
    *("Isa", "Jer", "Lam", "Eze", "Dan", "Hos", "Joel", "Amos", "Obad", "Jonah", "Mic"),
    *(
        "Nahum",
        "Hab",
        "Zep",
        "Hag",
        "Zec",
        "Mal",
        "Mat",
        "Mark",
        "Luke",
        "John",
        "Acts",
    ),
    *("Rom", "1Cor", "2Cor", "Gal", "Eph", "Phi", "Col", "1Th", "2Th", "1Tim", "2Tim"),
    *(
        "Titus",
        "Phmn",
        "Heb",
        "Jas",
        "1Pet",
        "2Pet",
        "1Jn",
        "2Jn",
        "3Jn",
        "Jude",
        "Rev",
    ),
)
PARTS = ("train", "validation", "test")
#: Each part's first and last book (inclusive, contiguous in :data:`BOOKS`).
SPLIT = {"train": ("Ge", "Acts"), "validation": ("Heb", "Rev"), "test": ("Rom", "Phmn")}
_VERSE = re.compile(rb"([1-3]?[A-Za-z]+)(\d+):(\d+) (.*)")


@dataclass(frozen=True)
class Verse:
    """One line of the file: its reference and its text (bytes, no newline)."""

    book: str
    chapter: int
    verse: int
    text: bytes


def read_raw(path: Path | Traversable | None = None) -> bytes:
    """The stored text, decompressed: the package's file, or the xz file at ``path``."""
    source = CORPUS_DIR / TEXT_FILE if path is None else path
    return lzma.decompress(source.read_bytes())


def read_manifest(path: Path | Traversable | None = None) -> dict:
    """``corpus.json``: the source's name, version, files, hashes and sizes; the split."""
    source = CORPUS_DIR / MANIFEST_FILE if path is None else path
    return json.loads(source.read_text(encoding="utf-8"))


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def parse_verses(raw: bytes) -> list[Verse]:
    """Every verse of ``raw`` (title line first, one verse a line, ending in a newline).

    Steps 1 and 2 of the module's normalisation: the title dropped, each reference split
    off. ValueError if a line is no verse or the books are not :data:`BOOKS` in order.
    """
    if not isinstance(raw, bytes):
        raise TypeError(f"raw must be bytes, got {type(raw).__name__}")
    lines = raw.split(b"\n")
    if len(lines) < 3 or lines[-1] != b"" or _VERSE.fullmatch(lines[0]):
        raise ValueError("raw must be a title line, then verse lines, then a newline")
    verses = []
    for number, line in enumerate(lines[1:-1], start=2):
        match = _VERSE.fullmatch(line)
        if match is None:
            raise ValueError(f"raw: line {number} is not a verse: {line[:40]!r}")
        book, chapter, verse, text = match.groups()
        verses.append(Verse(book.decode(), int(chapter), int(verse), text))
    runs = tuple(
        verse.book
        for index, verse in enumerate(verses)
        if index == 0 or verse.book != verses[index - 1].book
    )  # each book once, in one run of lines
    if runs != BOOKS:
        raise ValueError(f"raw: the books are not BOOKS in order, got {runs}")
    return verses


def part_books(part: str, split: dict[str, tuple[str, str]] = SPLIT) -> tuple[str, ...]:
    """The books of ``part`` ("train", "validation" or "test"), in order."""
    if part not in split:
        raise ValueError(f"part must be one of {tuple(split)}, got {part!r}")
    first, last = split[part]
    return BOOKS[BOOKS.index(first) : BOOKS.index(last) + 1]


def split_text(
    verses: list[Verse], split: dict[str, tuple[str, str]] = SPLIT
) -> dict[str, bytes]:
    """Each part's text: its books' verses in order, each followed by ``b"\\n"`` (step 3).

    ValueError unless the parts' book ranges cover every book exactly once.
    """
    books = {part: part_books(part, split) for part in split}
    covered = sorted(BOOKS.index(book) for part in books.values() for book in part)
    if covered != list(range(len(BOOKS))):
        raise ValueError("split must give every book to exactly one part")
    part_of = {book: part for part, names in books.items() for book in names}
    lines: dict[str, list[bytes]] = {part: [] for part in split}
    for verse in verses:
        lines[part_of[verse.book]].append(verse.text + b"\n")
    return {part: b"".join(lines[part]) for part in split}


def load_split(path: Path | Traversable | None = None) -> dict[str, bytes]:
    """The three parts of the stored corpus (or of the xz file at ``path``), as bytes."""
    return split_text(parse_verses(read_raw(path)))


def byte_tokens(text: bytes) -> np.ndarray:
    """Tokens of ``text``: its bytes as int64, shape (len(text),)."""
    if not isinstance(text, bytes):
        raise TypeError(f"text must be bytes, got {type(text).__name__}")
    return np.frombuffer(text, dtype=np.uint8).astype(np.int64)


def detokenize(tokens: np.ndarray) -> bytes:
    """The bytes of ``tokens`` (integers in 0 .. 255): the inverse of :func:`byte_tokens`."""
    tokens = np.asarray(tokens)
    if tokens.ndim != 1 or not np.issubdtype(tokens.dtype, np.integer):
        raise TypeError(f"tokens must be a 1-d integer array, got {tokens.dtype}")
    if tokens.size and (tokens.min() < 0 or tokens.max() >= VOCAB_SIZE):
        raise ValueError(f"tokens must be in 0 .. {VOCAB_SIZE - 1}")
    return tokens.astype(np.uint8).tobytes()


def unigram_log2_probs(tokens: np.ndarray, alpha: float = 1.0) -> np.ndarray:
    """log2 p(b) of the add-``alpha`` unigram model of ``tokens``, shape (256,).

    p(b) = (count(b) + alpha) / (n + 256 alpha): every byte gets a probability, so a byte
    absent from the training text costs bits instead of infinity.
    """
    if not alpha > 0:
        raise ValueError(f"alpha must be positive, got {alpha}")
    counts = np.bincount(np.asarray(tokens), minlength=VOCAB_SIZE).astype(np.float64)
    return np.log2(counts + alpha) - np.log2(counts.sum() + VOCAB_SIZE * alpha)


def bits_per_byte(log2_probs: np.ndarray, tokens: np.ndarray) -> float:
    """Cross-entropy in bits per byte of ``tokens`` under a unigram model's log2 p.

    Perplexity per byte is 2 ** bits_per_byte.
    """
    return float(-np.mean(np.asarray(log2_probs)[np.asarray(tokens)]))


# --------------------------------------------------------------- windows for training


@dataclass(frozen=True)
class TextBatch:
    """Windows of L + 1 tokens, shape (batch, L + 1): inputs the first L, targets the last L."""

    tokens: np.ndarray

    @property
    def inputs(self) -> np.ndarray:
        return self.tokens[:, :-1]

    @property
    def targets(self) -> np.ndarray:
        return self.tokens[:, 1:]


def _check_length(tokens: np.ndarray, length: int) -> None:
    check_positive_int(length, "length")
    if len(tokens) < length + 1:
        raise ValueError(
            f"length ({length}) needs at least {length + 1} tokens, got {len(tokens)}"
        )


@dataclass(frozen=True)
class TextTask:
    """Training windows drawn from ``tokens`` (1-d int64, the train part)."""

    tokens: np.ndarray

    def sample(
        self, rng: np.random.Generator, batch_size: int, length: int
    ) -> TextBatch:
        """``batch_size`` windows of ``length`` + 1 tokens at uniform random starts."""
        check_positive_int(batch_size, "batch_size")
        _check_length(self.tokens, length)
        starts = rng.integers(0, len(self.tokens) - length, size=batch_size)
        return TextBatch(self.tokens[starts[:, None] + np.arange(length + 1)])


def evaluation_windows(
    tokens: np.ndarray, length: int, count: int | None = None
) -> TextBatch:
    """Consecutive windows of ``length`` + 1 tokens, window k starting at k * ``length``.

    Every token but the first is a target exactly once; a last partial window is left
    out. ``count``: only that many, every (total // count)-th, spread over the text.
    """
    _check_length(tokens, length)
    total = (len(tokens) - 1) // length
    chosen = np.arange(total)
    if count is not None:
        check_positive_int(count, "count")
        if count > total:
            raise ValueError(f"count must be at most {total} windows, got {count}")
        chosen = chosen[:: total // count][:count]
    return TextBatch(tokens[chosen[:, None] * length + np.arange(length + 1)])


def fixed_target_windows(
    tokens: np.ndarray,
    length: int,
    scored: int,
    max_length: int,
    count: int,
    stride: int | None = None,
) -> TextBatch:
    """Windows of ``length`` + 1 tokens that end where windows of ``max_length`` + 1 end.

    Window k ends at token e_k = ``max_length`` + k * ``stride`` (k = 0 .. count-1;
    ``stride`` defaults to ``scored`` and must be at least that, so no target is scored
    twice), so its last ``scored`` targets, tokens e_k - scored + 1 .. e_k, are the same
    for every ``length`` <= ``max_length``: the fixed-target protocol scores them while
    the prefix grows. Needs ``scored`` <= ``length``.
    """
    for name, value in (("scored", scored), ("max_length", max_length)):
        check_positive_int(value, name)
    check_positive_int(count, "count")
    stride = scored if stride is None else stride
    check_positive_int(stride, "stride")
    if stride < scored:
        raise ValueError(f"stride ({stride}) must be at least scored ({scored})")
    _check_length(tokens, length)
    if not scored <= length <= max_length:
        raise ValueError(
            f"need scored ({scored}) <= length ({length}) <= max_length ({max_length})"
        )
    ends = max_length + stride * np.arange(count)
    if ends[-1] >= len(tokens):
        raise ValueError(
            f"count ({count}) windows need {ends[-1] + 1} tokens, got {len(tokens)}"
        )
    return TextBatch(tokens[ends[:, None] + np.arange(-length, 1)])
