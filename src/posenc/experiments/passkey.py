"""A seeded passkey-retrieval task: keys hidden in random filler, asked for at the end.

Like the passkey test of the YaRN paper (a number hidden in filler text, asked for at
the end), shrunk so a tiny model learns it on a CPU. A sequence of ``length`` tokens is

    body (length - 2K tokens)                               | queries (2K tokens)
    f f m_a v_a f f f f m_b v_b f ... f m_c v_c f ... f      | m_b v_b m_a v_a m_c v_c ...

* filler ``f``: uniform random tokens ``0 .. num_filler - 1``;
* K = ``num_pairs`` needles ``(marker, value)``: a marker token (``num_filler ..
  num_filler + num_markers - 1``, each used at most once per sequence) followed by a value
  drawn from the *filler* vocabulary, at random non-overlapping places in the body;
* the queries: every marker of the sequence again, in random order, each followed by its
  value. The model is scored only where it reads a query marker and must predict the value.

Because values look like filler, the only way to answer is to find the earlier copy of the
query marker and read the token after it (an induction head), across the whole body.
Everything is numpy and seeded by the caller's ``np.random.Generator``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from posenc._validation import check_positive_int


@dataclass(frozen=True)
class PasskeyBatch:
    """One batch of the task. B sequences of n tokens with K needles each.

    ``tokens``: (B, n) int64. ``answer_positions``: (K,) the positions of the query markers,
    where the model must predict the value (the same for every row: n - 2K, n - 2K + 2, ...).
    ``targets``: (B, K) the value expected after each query marker. ``needle_positions``:
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
    """Vocabulary and needle count of the task; :meth:`sample` draws a batch."""

    num_filler: int = 64
    num_markers: int = 8
    num_pairs: int = 4

    def __post_init__(self) -> None:
        check_positive_int(self.num_filler, "num_filler")
        check_positive_int(self.num_markers, "num_markers")
        check_positive_int(self.num_pairs, "num_pairs")
        if self.num_pairs > self.num_markers:
            raise ValueError(f"num_pairs ({self.num_pairs}) must not exceed num_markers ({self.num_markers})")

    @property
    def vocab_size(self) -> int:
        """Filler (and value) tokens followed by the marker tokens."""
        return self.num_filler + self.num_markers

    def min_length(self) -> int:
        """Shortest sequence that holds K needles and K queries: 4K tokens."""
        return 4 * self.num_pairs

    def sample(self, rng: np.random.Generator, batch_size: int, length: int) -> PasskeyBatch:
        """Draw ``batch_size`` sequences of ``length`` tokens from ``rng`` (see the module)."""
        if not isinstance(rng, np.random.Generator):
            raise TypeError(f"rng must be a numpy Generator (np.random.default_rng(seed)), got {type(rng).__name__}")
        batch_size = check_positive_int(batch_size, "batch_size")
        length = check_positive_int(length, "length")
        num_pairs = self.num_pairs
        if length < self.min_length():
            raise ValueError(f"length must be at least 4 * num_pairs = {self.min_length()}, got {length}")
        body = length - 2 * num_pairs
        tokens = rng.integers(0, self.num_filler, size=(batch_size, length), dtype=np.int64)
        values = rng.integers(0, self.num_filler, size=(batch_size, num_pairs), dtype=np.int64)
        markers = np.stack(
            [rng.permutation(self.num_markers)[:num_pairs] for _ in range(batch_size)]
        ).astype(np.int64) + self.num_filler
        # K sorted distinct slots c_0 < ... < c_{K-1} in 0 .. body - K - 1, spread to c_j + j:
        # marker positions at least 2 apart, so needle j occupies (p_j, p_j + 1) alone.
        slots = np.sort(np.stack([rng.choice(body - num_pairs, size=num_pairs, replace=False) for _ in range(batch_size)]), axis=1)
        marker_positions = slots + np.arange(num_pairs)
        order = np.stack([rng.permutation(num_pairs) for _ in range(batch_size)])  # query k asks needle order[k]

        rows = np.arange(batch_size)[:, None]
        tokens[rows, marker_positions] = markers
        tokens[rows, marker_positions + 1] = values
        answer_positions = body + 2 * np.arange(num_pairs)
        asked = np.take_along_axis(markers, order, axis=1)
        targets = np.take_along_axis(values, order, axis=1)
        tokens[:, answer_positions] = asked
        tokens[:, answer_positions + 1] = targets
        needle_positions = np.take_along_axis(marker_positions, order, axis=1) + 1
        return PasskeyBatch(
            tokens=tokens,
            answer_positions=answer_positions.astype(np.int64),
            targets=targets,
            needle_positions=needle_positions,
            distances=answer_positions[None, :] - needle_positions,
        )
