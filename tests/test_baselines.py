"""The no-matching strategies of the passkey task, against counts written out by hand."""

from collections import Counter

import numpy as np
import pytest

from posenc.experiments import baselines
from posenc.experiments.passkey import PasskeyBatch, PasskeyTask

# filler 0..2, values 3..5, markers 6..8
SMALL = PasskeyTask(
    num_filler=3, num_values=3, num_markers=3, num_pairs=1, num_decoys=2
)


def batch_of(tokens, answer_positions, targets):
    k = len(targets)
    return PasskeyBatch(
        np.array([tokens]),
        np.array(answer_positions),
        np.array([targets]),
        np.zeros((1, k), int),
        np.zeros((1, k), int),
    )


def test_strategies_on_a_sequence_counted_by_hand():
    # body "0 0 6 3 1 7 4 0 8 3 0", queries at 11 and 12 (markers 7 and 6, values 4 and 3)
    batch = batch_of([0, 0, 6, 3, 1, 7, 4, 0, 8, 3, 0, 7, 6], [11, 12], [4, 3])
    # most frequent token: 0 (five times) -> never a value
    np.testing.assert_array_equal(
        baselines.most_frequent_token(batch, SMALL), [[0.0, 0.0]]
    )
    # values so far: 3, 4, 3 -> 3 is most frequent
    np.testing.assert_array_equal(
        baselines.most_frequent_value(batch, SMALL), [[0.0, 1.0]]
    )
    # tokens after a marker: 3, 4, 3 (the query marker 7 at 11 is followed by marker 6, not counted)
    np.testing.assert_allclose(
        baselines.marker_follower(batch, SMALL), [[1 / 3, 2 / 3]]
    )
    np.testing.assert_array_equal(
        baselines.frequent_marker_follower(batch, SMALL), [[0.0, 1.0]]
    )


def test_ties_are_broken_uniformly():
    batch = batch_of([3, 3, 4, 4, 5, 6], [5], [4])
    assert baselines.most_frequent_value(batch, SMALL)[0, 0] == pytest.approx(0.5)


def brute_force_most_frequent(tokens, target):
    counts = Counter(int(t) for t in tokens)
    if not counts:
        return 0.0
    top = max(counts.values())
    tied = [t for t, c in counts.items() if c == top]
    return (target in tied) / len(tied)


def test_most_frequent_value_matches_a_counter_on_sampled_sequences():
    task = PasskeyTask()
    batch = task.sample(np.random.default_rng(0), 20, 256)
    scores = baselines.most_frequent_value(batch, task)
    for row in range(20):
        for k, position in enumerate(batch.answer_positions):
            seen = batch.tokens[row, :position]
            expected = brute_force_most_frequent(
                seen[task.is_value(seen)], batch.targets[row, k]
            )
            assert scores[row, k] == pytest.approx(expected)


@pytest.mark.parametrize("length", [256, 1024])
def test_the_marker_shortcut_is_no_better_than_the_most_frequent_value(length):
    # Values have their own vocabulary and only ever follow markers: skipping the marker
    # match leaves a guess among the values, exactly what a bag of tokens can do.
    task = PasskeyTask()
    batch = task.sample(np.random.default_rng(length), 32, length)
    np.testing.assert_array_equal(
        baselines.frequent_marker_follower(batch, task),
        baselines.most_frequent_value(batch, task),
    )
    uniform = baselines.marker_follower(batch, task)
    # k / N for k copies of the target among the N values: (1 + (N - 1) / num_values) / N on average
    needles = task.num_needles
    assert uniform.mean() == pytest.approx(
        (1 + (needles - 1) / task.num_values) / needles, rel=0.05
    )


def test_the_query_marker_itself_is_not_yet_seen():
    # "6 3 7 4 0", then the query 7 at position 5: before it every token appears once, so
    # the most frequent token is a five-way tie (1/5 on the target 4). Counting the query
    # marker as seen would make 7 the most frequent token (0 on the target).
    batch = batch_of([6, 3, 7, 4, 0, 7], [5], [4])
    assert baselines.most_frequent_token(batch, SMALL)[0, 0] == pytest.approx(1 / 5)
