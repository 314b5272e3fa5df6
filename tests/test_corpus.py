"""posenc.experiments.corpus: the stored King James Bible, its split, tokens and baseline."""

import collections
import hashlib
import lzma
import math

import numpy as np
import pytest

from posenc.experiments import corpus

RAW = corpus.read_raw()
MANIFEST = corpus.read_manifest()
PARTS = corpus.load_split()


def independent_parts(raw: bytes) -> dict[str, bytes]:
    """The split computed another way: references cut at the first space, books told
    apart by stripping the chapter:verse digits, parts by hand-written book ranges."""
    train_end, test_end = (
        "Acts",
        "Phmn",
    )  # Genesis .. Acts, Romans .. Philemon, then rest
    parts = {"train": [], "test": [], "validation": []}
    part = "train"
    previous = None
    for line in raw.split(b"\n")[1:-1]:
        reference, text = line.split(b" ", 1)
        book = reference.decode().rstrip("0123456789:")
        if previous == train_end and book != train_end:
            part = "test"
        if previous == test_end and book != test_end:
            part = "validation"
        parts[part].append(text + b"\n")
        previous = book
    return {name: b"".join(lines) for name, lines in parts.items()}


def test_stored_text_is_the_recorded_source_text():
    source = MANIFEST["source"]
    assert hashlib.sha256(RAW).hexdigest() == source["text_sha256"]
    assert len(RAW) == source["text_bytes"] == 4_404_475
    assert source["package"] == "bible-kjv-text" and source["version"] == "4.38"
    assert (
        (corpus.CORPUS_DIR / "copyright")
        .read_text()
        .startswith("        Bible Retrieval System")
    )
    compressed = (corpus.CORPUS_DIR / corpus.TEXT_FILE).read_bytes()
    assert len(compressed) <= 3_000_000
    assert lzma.decompress(compressed) == RAW


def test_raw_text_is_a_title_and_the_31102_verses():
    lines = RAW.split(b"\n")
    assert lines[0].startswith(b"Holy Bible, Authorized (King James) Version.")
    assert lines[1] == b"Ge1:1 In the beginning God created the heaven and the earth."
    assert lines[-1] == b"" and len(lines) == 1 + 31_102 + 1
    verses = corpus.parse_verses(RAW)
    assert len(verses) == 31_102
    assert (verses[-1].book, verses[-1].chapter, verses[-1].verse) == ("Rev", 22, 21)
    assert len({(v.book, v.chapter, v.verse) for v in verses}) == len(verses)


@pytest.mark.parametrize(
    "part, books, verses, size, first, last",
    [
        ("train", 44, 27_931, 3_754_453, b"In the beginning God created the heaven",
         b"with all confidence, no man forbidding him.\n"),
        ("validation", 9, 1_138, 153_005, b"God, who at sundry times and in divers",
         b"The grace of our Lord Jesus Christ be with you all. Amen.\n"),
        ("test", 13, 2_033, 230_392, b"Paul, a servant of Jesus Christ, called",
         b"The grace of our Lord Jesus Christ be with your spirit. Amen.\n"),
    ],
)  # fmt: skip
def test_split_sizes_and_boundaries(part, books, verses, size, first, last):
    text = PARTS[part]
    assert len(corpus.part_books(part)) == books
    assert text.count(b"\n") == verses and len(text) == size
    assert text.startswith(first) and text.endswith(last)
    recorded = MANIFEST["split"][part]
    assert (recorded["books"], recorded["verses"], recorded["bytes"]) == (
        books,
        verses,
        size,
    )


def test_split_agrees_with_an_independent_split():
    assert PARTS == independent_parts(RAW)
    assert sum(map(len, PARTS.values())) == MANIFEST["normalised"]["bytes"]
    # every byte of the normalised text is the raw text's less the title and references
    references = sum(len(line.split(b" ", 1)[0]) + 1 for line in RAW.split(b"\n")[1:-1])
    title = len(RAW.split(b"\n")[0]) + 1
    assert sum(map(len, PARTS.values())) == len(RAW) - title - references


def test_split_is_deterministic_and_recorded():
    again = corpus.split_text(corpus.parse_verses(corpus.read_raw()))
    assert again == PARTS
    for part in corpus.PARTS:
        digest = hashlib.sha256(PARTS[part]).hexdigest()
        assert digest == MANIFEST["split"][part]["sha256"]


def test_parts_do_not_overlap_and_cover_every_verse_once():
    books = [set(corpus.part_books(part)) for part in corpus.PARTS]
    assert not (books[0] & books[1] or books[0] & books[2] or books[1] & books[2])
    assert set().union(*books) == set(corpus.BOOKS)
    verses = corpus.parse_verses(RAW)
    lines = collections.Counter(verse.text + b"\n" for verse in verses)
    train_lines = PARTS["train"].splitlines(keepends=True)
    assert (
        collections.Counter(
            train_lines
            + PARTS["validation"].splitlines(keepends=True)
            + PARTS["test"].splitlines(keepends=True)
        )
        == lines
    )
    train = set(train_lines)
    for part in ("validation", "test"):  # no held-out verse is a verbatim train verse
        assert not train & set(PARTS[part].splitlines(keepends=True))


def test_normalised_text_has_no_references_and_63_distinct_bytes():
    text = b"".join(PARTS[part] for part in corpus.PARTS)
    assert not any(byte in text for byte in b"0123456789")
    assert len(set(text)) == MANIFEST["normalised"]["distinct_bytes"] == 63
    assert max(text) < 128  # ASCII


def test_tokens_round_trip_to_the_text():
    tokens = corpus.byte_tokens(PARTS["test"])
    assert tokens.dtype == np.int64 and tokens.shape == (len(PARTS["test"]),)
    assert tokens[0] == ord("P")
    assert corpus.detokenize(tokens) == PARTS["test"]
    assert corpus.detokenize(np.arange(256)) == bytes(range(256))
    with pytest.raises(ValueError, match="tokens"):
        corpus.detokenize(np.array([65, 256]))
    with pytest.raises(TypeError, match="tokens"):
        corpus.detokenize(np.array([65.0]))
    with pytest.raises(TypeError, match="text"):
        corpus.byte_tokens("text")


def test_unigram_bits_per_byte_equal_an_independent_count():
    counts = collections.Counter(PARTS["train"])
    total = len(PARTS["train"]) + 256
    expected = -sum(
        math.log2((counts[byte] + 1) / total) for byte in PARTS["test"]
    ) / len(PARTS["test"])
    log2_probs = corpus.unigram_log2_probs(corpus.byte_tokens(PARTS["train"]))
    measured = corpus.bits_per_byte(log2_probs, corpus.byte_tokens(PARTS["test"]))
    assert measured == pytest.approx(expected, rel=1e-12)
    assert round(measured, 4) == 4.3941  # the numbers kjv/README.md states
    for part, stated in (("train", 4.3569), ("validation", 4.3156)):
        tokens = corpus.byte_tokens(PARTS[part])
        assert round(corpus.bits_per_byte(log2_probs, tokens), 4) == stated
    assert np.exp2(log2_probs).sum() == pytest.approx(1.0, abs=1e-12)
    with pytest.raises(ValueError, match="alpha"):
        corpus.unigram_log2_probs(np.array([1, 2]), alpha=0.0)


def test_parse_verses_rejects_what_is_not_the_file():
    title = b"Title\n"
    with pytest.raises(ValueError, match="line 3"):
        corpus.parse_verses(title + b"Ge1:1 In the beginning\nno reference\n")
    with pytest.raises(ValueError, match="BOOKS"):
        corpus.parse_verses(title + b"Exo1:1 These are\nGe1:1 In the beginning\n")
    with pytest.raises(ValueError, match="title"):
        corpus.parse_verses(b"Ge1:1 In the beginning\nGe1:2 And the earth\n")
    with pytest.raises(TypeError, match="raw"):
        corpus.parse_verses("text")


def test_split_must_cover_every_book_once():
    verses = corpus.parse_verses(RAW)
    with pytest.raises(ValueError, match="split"):
        corpus.split_text(verses, {"train": ("Ge", "Rev"), "test": ("Rom", "Phmn")})
    with pytest.raises(ValueError, match="split"):
        corpus.split_text(verses, {"train": ("Ge", "Acts")})
    with pytest.raises(ValueError, match="part"):
        corpus.part_books("dev")


def test_training_windows_are_seeded_slices_of_the_text():
    tokens = np.arange(1000, dtype=np.int64)
    task = corpus.TextTask(tokens)
    batch = task.sample(np.random.default_rng([0, 1]), 64, 50)
    again = task.sample(np.random.default_rng([0, 1]), 64, 50)
    other = task.sample(np.random.default_rng([1, 1]), 64, 50)
    assert batch.tokens.shape == (64, 51)
    np.testing.assert_array_equal(batch.tokens, again.tokens)
    assert not np.array_equal(batch.tokens, other.tokens)
    np.testing.assert_array_equal(np.diff(batch.tokens, axis=1), 1)  # contiguous
    assert batch.tokens.min() >= 0 and batch.tokens.max() <= 999
    np.testing.assert_array_equal(batch.inputs[:, 1:], batch.targets[:, :-1])
    starts = task.sample(np.random.default_rng(0), 4000, 998).tokens[:, 0]
    assert set(starts.tolist()) == {0, 1}  # every start that leaves L + 1 tokens
    with pytest.raises(ValueError, match="length"):
        task.sample(np.random.default_rng(0), 1, 1000)


def test_evaluation_windows_predict_every_token_once():
    tokens = np.arange(1001, dtype=np.int64)
    windows = corpus.evaluation_windows(tokens, 100)
    assert windows.tokens.shape == (10, 101)
    np.testing.assert_array_equal(windows.targets.ravel(), np.arange(1, 1001))
    spread = corpus.evaluation_windows(tokens, 100, count=3)
    np.testing.assert_array_equal(spread.tokens[:, 0], [0, 300, 600])
    short = corpus.evaluation_windows(np.arange(1000), 100)
    assert short.tokens.shape == (9, 101)  # the last partial window is left out
    with pytest.raises(ValueError, match="count"):
        corpus.evaluation_windows(tokens, 100, count=11)
    with pytest.raises(ValueError, match="length"):
        corpus.evaluation_windows(tokens, 0)


def test_fixed_target_windows_score_the_same_tokens_at_every_length():
    tokens = np.arange(2000, dtype=np.int64)
    longest = corpus.fixed_target_windows(tokens, 512, 32, 512, count=5)
    assert longest.tokens.shape == (5, 513) and longest.tokens[0, 0] == 0
    for length in (32, 64, 128, 512):
        windows = corpus.fixed_target_windows(tokens, length, 32, 512, count=5)
        assert windows.tokens.shape == (5, length + 1)
        np.testing.assert_array_equal(np.diff(windows.tokens, axis=1), 1)
        np.testing.assert_array_equal(
            windows.targets[:, -32:], longest.targets[:, -32:]
        )
    np.testing.assert_array_equal(longest.targets[:, -1], 512 + 32 * np.arange(5))
    with pytest.raises(ValueError, match="scored"):
        corpus.fixed_target_windows(tokens, 16, 32, 512, count=5)
    with pytest.raises(ValueError, match="count"):
        corpus.fixed_target_windows(tokens, 64, 32, 512, count=60)


def test_fixed_target_windows_spread_by_stride_without_scoring_a_byte_twice():
    tokens = np.arange(2000, dtype=np.int64)
    spread = corpus.fixed_target_windows(tokens, 64, 32, 512, count=4, stride=400)
    np.testing.assert_array_equal(spread.targets[:, -1], 512 + 400 * np.arange(4))
    short = corpus.fixed_target_windows(tokens, 32, 32, 512, count=4, stride=400)
    np.testing.assert_array_equal(short.targets, spread.targets[:, -32:])
    with pytest.raises(ValueError, match="stride"):
        corpus.fixed_target_windows(tokens, 64, 32, 512, count=4, stride=31)
    with pytest.raises(ValueError, match="count"):
        corpus.fixed_target_windows(tokens, 64, 32, 512, count=4, stride=500)
