"""A seeded passkey-retrieval task: keys hidden among decoys in random filler, asked for at the end.

Like the passkey test of the YaRN paper (a number hidden in filler text, asked for at
the end), shrunk so a tiny model learns it on a CPU. A sequence of ``length`` tokens is

    body (length - K tokens)                                        | queries (K tokens)
    f f m_a v_a f d_1 w_1 f f m_b v_b f d_2 w_2 f ... m_c v_c f ... | m_b m_a m_c ...

* filler ``f``: uniform random tokens ``0 .. num_filler - 1``;
* needles ``(marker, value)``: a marker token (after the filler and value tokens, each
  used at most once per sequence) followed by a value token (``num_filler .. num_filler +
  num_values - 1``, uniform), at random non-overlapping places in the body. K =
  ``num_pairs`` of them are asked for; the other ``num_decoys`` (``d``, ``w`` above)
  are decoys that are never asked;
* the queries: the K asked markers again, in random order, *without* their values. The
  model is scored where it reads a query marker and must predict that marker's value.

The only way to answer is to find the earlier copy of the query marker and read the
token after it (an induction head), across the whole body. Two shortcuts are closed on
purpose. Values are never shown after the queries, so a model cannot cross off values it
has already seen answered. And every marker appears once, decoys included, so a guess
among the tokens that follow some marker (which needs no marker matching) is a guess
among all K + ``num_decoys`` values in the sequence: values have their own
vocabulary, so "a token after a marker" and "a value token" are the same set, and no
strategy that skips the marker beats guessing the most frequent value
(:mod:`posenc.experiments.baselines` measures them).
Everything is numpy and seeded by the caller's ``np.random.Generator``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from posenc._validation import check_positive_int


@dataclass(frozen=True)
class PasskeyBatch:
    """One batch of the task. B sequences of n tokens with K asked needles each.

    ``tokens``: (B, n) int64. ``answer_positions``: (K,) the positions of the query markers,
    where the model must predict the value (the same for every row: n - K, ..., n - 1).
    ``targets``: (B, K) the value expected at each query marker. ``needle_positions``:
    (B, K) position of the value token in the body that answers query k. ``distances``:
    (B, K) = answer_positions - needle_positions, the distance in tokens the answer travels.
    """

    tokens: np.ndarray
    answer_positions: np.ndarray
    targets: np.ndarray
    needle_positions: np.ndarray
    distances: np.ndarray


@dataclass(frozen=True)
class PasskeyTask:
    """Vocabulary, needle and decoy counts of the task; :meth:`sample` draws a batch."""

    num_filler: int = 64
    num_values: int = 64
    num_markers: int = 8
    num_pairs: int = 4
    num_decoys: int = 4

    def __post_init__(self) -> None:
        check_positive_int(self.num_filler, "num_filler")
        check_positive_int(self.num_values, "num_values")
        check_positive_int(self.num_markers, "num_markers")
        check_positive_int(self.num_pairs, "num_pairs")
        if (
            not isinstance(self.num_decoys, int)
            or isinstance(self.num_decoys, bool)
            or self.num_decoys < 0
        ):
            raise ValueError(
                f"num_decoys must be an integer >= 0, got {self.num_decoys!r}"
            )
        if self.num_pairs + self.num_decoys > self.num_markers:
            raise ValueError(
                f"num_pairs + num_decoys ({self.num_pairs} + {self.num_decoys}) must not exceed "
                f"num_markers ({self.num_markers}): every needle has its own marker"
            )

    @property
    def vocab_size(self) -> int:
        """Filler tokens, then value tokens, then marker tokens."""
        return self.num_filler + self.num_values + self.num_markers

    @property
    def first_marker(self) -> int:
        """The smallest marker token."""
        return self.num_filler + self.num_values

    def is_value(self, tokens: np.ndarray) -> np.ndarray:
        """Which of ``tokens`` are value tokens."""
        return (tokens >= self.num_filler) & (tokens < self.first_marker)

    @property
    def num_needles(self) -> int:
        """Needles in every sequence: the K asked and the decoys."""
        return self.num_pairs + self.num_decoys

    def min_length(self) -> int:
        """Shortest sequence: room for every needle (2 tokens each) and the K queries."""
        return 2 * self.num_needles + self.num_pairs

    def distance_range(self, length: int) -> tuple[int, int]:
        """Smallest and largest distance (query position - value position) :meth:`sample` can draw.

        The last value can sit at ``body - 1`` and be asked first (distance 1); the first
        value sits at 1 at the earliest and can be asked last (distance ``length - 2``).
        """
        return 1, length - 2

    def sample(
        self, rng: np.random.Generator, batch_size: int, length: int
    ) -> PasskeyBatch:
        """Draw ``batch_size`` sequences of ``length`` tokens from ``rng`` (see the module)."""
        if not isinstance(rng, np.random.Generator):
            raise TypeError(
                f"rng must be a numpy Generator (np.random.default_rng(seed)), got {type(rng).__name__}"
            )
        batch_size = check_positive_int(batch_size, "batch_size")
        length = check_positive_int(length, "length")
        asked = self.num_pairs
        if length < self.min_length():
            raise ValueError(
                f"length must be at least {self.min_length()} (room for every needle), got {length}"
            )
        needles = self.num_needles
        body = length - asked
        tokens = rng.integers(
            0, self.num_filler, size=(batch_size, length), dtype=np.int64
        )
        values = (
            rng.integers(0, self.num_values, size=(batch_size, needles), dtype=np.int64)
            + self.num_filler
        )
        markers = (
            np.stack(
                [rng.permutation(self.num_markers)[:needles] for _ in range(batch_size)]
            )
            + self.first_marker
        )
        # N sorted distinct slots c_0 < ... < c_{N-1} in 0 .. body - N - 1, spread to c_j + j:
        # marker positions at least 2 apart, so needle j occupies (p_j, p_j + 1) alone.
        slots = np.sort(
            np.stack(
                [
                    rng.choice(body - needles, size=needles, replace=False)
                    for _ in range(batch_size)
                ]
            ),
            axis=1,
        )
        marker_positions = slots + np.arange(needles)
        # Which needles are asked, and in which order: query k asks needle chosen[k].
        chosen = np.stack([rng.permutation(needles)[:asked] for _ in range(batch_size)])

        rows = np.arange(batch_size)[:, None]
        tokens[rows, marker_positions] = markers
        tokens[rows, marker_positions + 1] = values
        answer_positions = body + np.arange(asked)
        tokens[:, answer_positions] = np.take_along_axis(markers, chosen, axis=1)
        needle_positions = np.take_along_axis(marker_positions, chosen, axis=1) + 1
        return PasskeyBatch(
            tokens=tokens,
            answer_positions=answer_positions.astype(np.int64),
            targets=np.take_along_axis(values, chosen, axis=1),
            needle_positions=needle_positions,
            distances=answer_positions[None, :] - needle_positions,
        )
