"""posenc.t5_bias against transformers' own buckets, a transcription of its rule, and properties."""

import json
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scripts_module import load_script

import posenc
from posenc import t5_relative_position_bucket

GOLDEN = Path(__file__).resolve().parent / "golden" / "relative_bias_transformers.npz"


def relative_position_bucket(
    relative_position, bidirectional, num_buckets, max_distance
):
    """Transcribed, element by element in Python float64, from transformers 5.24's
    ``T5Attention._relative_position_bucket`` (models/t5/modeling_t5.py, itself adapted
    from Mesh TensorFlow), to check posenc against it; not used by posenc."""
    relative_buckets = 0
    if bidirectional:
        num_buckets //= 2
        relative_buckets += (relative_position > 0) * num_buckets
        relative_position = abs(relative_position)
    else:
        relative_position = -min(relative_position, 0)
    max_exact = num_buckets // 2
    is_small = relative_position < max_exact
    if is_small:
        return relative_buckets + relative_position
    relative_position_if_large = max_exact + int(
        math.log(relative_position / max_exact)
        / math.log(max_distance / max_exact)
        * (num_buckets - max_exact)
    )
    relative_position_if_large = min(relative_position_if_large, num_buckets - 1)
    return relative_buckets + relative_position_if_large


@pytest.fixture(scope="module")
def golden():
    data = np.load(GOLDEN, allow_pickle=False)
    return json.loads(str(data["meta"])), data


def test_golden_file_is_the_scripts_grid(golden):
    meta, data = golden
    script = load_script("make_bias_golden")
    assert meta["t5_options"] == script.t5_options()
    assert [(r["options"], r["argument"]) for r in meta["t5_rejected"]] == [
        (r["options"], r["argument"]) for r in script.t5_rejected()
    ]
    np.testing.assert_array_equal(data["t5_positions"], script.POSITIONS)
    assert meta["transformers"] == "5.24.0" and meta["torch"].startswith("2.13.0")
    assert {"bidirectional": True, "num_buckets": 32, "max_distance": 128} in meta[
        "t5_options"
    ]
    assert {o["bidirectional"] for o in meta["t5_options"]} == {True, False}
    assert data["t5_buckets"].shape == (
        len(meta["t5_options"]),
        data["t5_positions"].size,
    )


def test_same_buckets_as_transformers_for_every_stored_position(golden):
    meta, data = golden
    positions = data["t5_positions"]
    for options, theirs in zip(meta["t5_options"], data["t5_buckets"]):
        ours = t5_relative_position_bucket(positions, **options)
        assert ours.dtype == np.int64 and ours.shape == positions.shape
        np.testing.assert_array_equal(
            ours, theirs.astype(np.int64), err_msg=str(options)
        )


def test_what_posenc_refuses_transformers_mishandles(golden):
    """Odd counts waste a bucket, too few buckets divide by zero, max_distance at or
    below the exact range gives negative buckets: posenc names the argument instead."""
    meta, _ = golden
    assert len(meta["t5_rejected"]) == 7
    for row in meta["t5_rejected"]:
        options, done = row["options"], row["transformers"]
        half = (
            options["num_buckets"] // 2
            if options["bidirectional"]
            else options["num_buckets"]
        )
        if "raises" not in done and options["max_distance"] > half // 2:
            # a bucket range with one missing: never num_buckets - 1
            assert f"{options['num_buckets'] - 1}" not in done.split("for")[0][-4:]
        with pytest.raises(ValueError, match=row["argument"]):
            t5_relative_position_bucket(0, **options)
    negative = [
        r for r in meta["t5_rejected"] if "-9223372036854775" in r["transformers"]
    ]
    assert negative and all(r["argument"] == "max_distance" for r in negative)


@pytest.mark.parametrize(
    "bidirectional, num_buckets, max_distance",
    [
        (True, 32, 128),
        (False, 32, 128),
        (True, 64, 256),
        (False, 7, 50),
        (True, 10, 33),
    ],
)
def test_matches_the_transcription_in_float64(bidirectional, num_buckets, max_distance):
    """posenc computes in float32 like transformers; the float64 transcription agrees on
    every relative position from -3000 to 3000 (no boundary falls between the two)."""
    positions = np.arange(-3000, 3001)
    ours = t5_relative_position_bucket(
        positions,
        bidirectional=bidirectional,
        num_buckets=num_buckets,
        max_distance=max_distance,
    )
    theirs = [
        relative_position_bucket(int(r), bidirectional, num_buckets, max_distance)
        for r in positions
    ]
    np.testing.assert_array_equal(ours, theirs)


def test_t5_default_buckets_by_hand():
    """32 buckets, 128: 0..7 exact, then 8 + floor(ln(n/8) / ln 16 * 8), capped at 15."""
    n = np.array([0, 1, 7, 8, 11, 12, 16, 23, 32, 64, 127, 128, 10**6])
    expected = [0, 1, 7, 8, 8, 9, 10, 11, 12, 14, 15, 15, 15]
    np.testing.assert_array_equal(t5_relative_position_bucket(-n), expected)
    np.testing.assert_array_equal(
        t5_relative_position_bucket(n[1:]), np.add(expected[1:], 16)
    )
    np.testing.assert_array_equal(
        t5_relative_position_bucket(-n, bidirectional=False),
        # 16 exact, then 16 + floor(ln(n/16) / ln 8 * 16), capped at 31
        [0, 1, 7, 8, 11, 12, 16, 18, 21, 26, 31, 31, 31],
    )
    # a key after the query is bucket 0 for the decoder, like r = 0
    np.testing.assert_array_equal(
        t5_relative_position_bucket([1, 5, 10**6], bidirectional=False), [0, 0, 0]
    )


options = st.sampled_from(
    [
        (True, 32, 128),
        (False, 32, 128),
        (True, 16, 64),
        (False, 9, 40),
        (True, 64, 1000),
    ]
)


@given(
    options=options, r=st.lists(st.integers(-(10**7), 10**7), min_size=1, max_size=50)
)
def test_buckets_monotone_in_distance_and_the_halves(options, r):
    bidirectional, num_buckets, max_distance = options
    kwargs = dict(
        bidirectional=bidirectional, num_buckets=num_buckets, max_distance=max_distance
    )
    r = np.array(r)
    buckets = t5_relative_position_bucket(r, **kwargs)
    assert buckets.min() >= 0 and buckets.max() <= num_buckets - 1
    half = num_buckets // 2 if bidirectional else num_buckets
    behind = r <= 0
    if bidirectional:
        assert np.all(buckets[behind] < half) and np.all(buckets[~behind] > half)
        # the two halves mirror each other: bucket(n) + B = bucket(-n) for n > 0
        ahead = r[~behind]
        np.testing.assert_array_equal(
            t5_relative_position_bucket(ahead, **kwargs),
            t5_relative_position_bucket(-ahead, **kwargs) + half,
        )
    else:
        assert np.all(buckets[~behind] == 0)
    # monotone in the distance on each side
    distance = np.abs(r[behind])
    order = np.argsort(distance, kind="stable")
    assert np.all(np.diff(buckets[behind][order]) >= 0)


@pytest.mark.parametrize(
    "bidirectional, num_buckets, max_distance",
    [(True, 32, 128), (False, 32, 128), (True, 8, 20), (False, 5, 128)],
)
def test_buckets_cover_every_index(bidirectional, num_buckets, max_distance):
    """Every bucket is used, but num_buckets / 2 when bidirectional: a key after the
    query is at least 1 ahead, so the "ahead, distance 0" bucket is never reached (T5's
    rule; transformers' too)."""
    r = np.arange(-2 * max_distance, 2 * max_distance + 1)
    used = set(
        t5_relative_position_bucket(
            r,
            bidirectional=bidirectional,
            num_buckets=num_buckets,
            max_distance=max_distance,
        ).tolist()
    )
    unused = {num_buckets // 2} if bidirectional else set()
    assert used == set(range(num_buckets)) - unused


def test_shapes_are_kept():
    grid = np.arange(5)[None, :] - np.arange(3)[:, None]  # key - query
    assert t5_relative_position_bucket(grid).shape == (3, 5)
    assert t5_relative_position_bucket(7).shape == ()
    assert t5_relative_position_bucket([]).shape == (0,)
    assert posenc.t5_relative_position_bucket is t5_relative_position_bucket


@pytest.mark.parametrize(
    "args, kwargs, error, name",
    [
        ((np.array([0.0, 1.0]),), {}, TypeError, "relative_position"),
        (([True, False],), {}, TypeError, "relative_position"),
        (([0, math.nan],), {}, TypeError, "relative_position"),
        (("12",), {}, TypeError, "relative_position"),
        (([0],), {"bidirectional": 1}, TypeError, "bidirectional"),
        (([0],), {"num_buckets": 32.0}, TypeError, "num_buckets"),
        (([0],), {"num_buckets": True}, TypeError, "num_buckets"),
        (([0],), {"num_buckets": 0}, ValueError, "num_buckets"),
        (([0],), {"num_buckets": 31}, ValueError, "num_buckets"),
        (([0],), {"num_buckets": 2}, ValueError, "num_buckets"),
        (([0],), {"num_buckets": 1, "bidirectional": False}, ValueError, "num_buckets"),
        (([0],), {"max_distance": 8}, ValueError, "max_distance"),
        (([0],), {"max_distance": 0}, ValueError, "max_distance"),
        (([0],), {"max_distance": 128.0}, TypeError, "max_distance"),
        (([0],), {"max_distance": math.nan}, TypeError, "max_distance"),
    ],
)
def test_bad_input_names_the_argument(args, kwargs, error, name):
    with pytest.raises(error, match=name):
        t5_relative_position_bucket(*args, **kwargs)


def test_live_against_installed_transformers():
    pytest.importorskip("transformers")
    script = load_script("make_bias_golden")
    for options in script.t5_options()[::5]:
        np.testing.assert_array_equal(
            t5_relative_position_bucket(script.POSITIONS, **options),
            script.transformers_buckets(options),
        )
