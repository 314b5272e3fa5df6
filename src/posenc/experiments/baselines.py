"""What a model can score on the passkey task without finding the asked marker.

Each function returns the *expected* accuracy of one guessing strategy for every answer of
a :class:`~posenc.experiments.passkey.PasskeyBatch`, shape (B, K): a strategy that picks
uniformly among tied candidates scores (copies of the target among them) / (candidates).
They see only the tokens before the query (the causal view the model has), and none of
them matches the query marker to its copy in the body:

* :func:`most_frequent_token`: the most frequent token so far, a bag of tokens that knows
  nothing of the task;
* :func:`most_frequent_value`: the most frequent *value* token so far, a bag of tokens that
  knows answers are values (the floor the book calls the no-position guess);
* :func:`marker_follower` and :func:`frequent_marker_follower`: a uniform pick, or the most
  frequent, among the tokens that follow *some* marker: the shortcut a model could take
  with the offset +1 alone, without matching the query marker.

numpy only; the page on context extension reports them as baselines.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from posenc.experiments.passkey import PasskeyBatch, PasskeyTask


def _expected_hits(candidates: np.ndarray, target: int, most_frequent: bool) -> float:
    """Expected accuracy of a uniform pick among ``candidates`` (or among the most frequent ones)."""
    if candidates.size == 0:
        return 0.0
    counts = np.bincount(candidates, minlength=target + 1)
    if most_frequent:
        tied = counts == counts.max()
        return float(tied[target]) / float(tied.sum())
    return float(counts[target]) / float(candidates.size)


def _per_answer(
    batch: PasskeyBatch,
    candidates: Callable[[np.ndarray], np.ndarray],
    most_frequent: bool,
) -> np.ndarray:
    scores = np.empty(batch.targets.shape)
    for row, tokens in enumerate(batch.tokens):
        for k, position in enumerate(batch.answer_positions):
            scores[row, k] = _expected_hits(
                candidates(tokens[:position]), int(batch.targets[row, k]), most_frequent
            )
    return scores


def _followers(seen: np.ndarray, task: PasskeyTask) -> np.ndarray:
    """Tokens that directly follow a marker in ``seen``, markers excluded (the queries follow each other)."""
    after_marker = seen[1:][seen[:-1] >= task.first_marker]
    return after_marker[after_marker < task.first_marker]


def most_frequent_token(batch: PasskeyBatch, task: PasskeyTask) -> np.ndarray:
    """(B, K) expected accuracy of guessing the most frequent token seen so far."""
    return _per_answer(batch, lambda seen: seen, most_frequent=True)


def most_frequent_value(batch: PasskeyBatch, task: PasskeyTask) -> np.ndarray:
    """(B, K) expected accuracy of guessing the most frequent value token seen so far."""
    return _per_answer(
        batch, lambda seen: seen[task.is_value(seen)], most_frequent=True
    )


def marker_follower(batch: PasskeyBatch, task: PasskeyTask) -> np.ndarray:
    """(B, K) expected accuracy of guessing uniformly among the tokens that follow a marker."""
    return _per_answer(batch, lambda seen: _followers(seen, task), most_frequent=False)


def frequent_marker_follower(batch: PasskeyBatch, task: PasskeyTask) -> np.ndarray:
    """(B, K) expected accuracy of guessing the most frequent token among those that follow a marker."""
    return _per_answer(batch, lambda seen: _followers(seen, task), most_frequent=True)


#: Every strategy by the name the book prints.
STRATEGIES = {
    "most frequent token": most_frequent_token,
    "most frequent value": most_frequent_value,
    "a token after a marker": marker_follower,
    "most frequent token after a marker": frequent_marker_follower,
}
