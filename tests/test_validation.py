"""The shared argument checks of posenc._validation: a wrong type is a TypeError, a wrong value a ValueError."""

import numpy as np
import pytest

from posenc import _validation as v


def test_check_non_negative_int():
    assert (
        v.check_non_negative_int(0, "n") == 0
        and v.check_non_negative_int(np.int64(3), "n") == 3
    )
    assert type(v.check_non_negative_int(np.int64(3), "n")) is int
    with pytest.raises(ValueError, match="^n must be a non-negative integer"):
        v.check_non_negative_int(-1, "n")
    for wrong in (1.0, True, "1", None):
        with pytest.raises(TypeError, match="^n must be a non-negative integer"):
            v.check_non_negative_int(wrong, "n")


def test_check_choice_lists_the_choices():
    assert v.check_choice("half", "layout", ("interleaved", "half")) == "half"
    for wrong in ("Half", "", None, 0, ["half"]):
        with pytest.raises(
            ValueError, match=r"^layout must be one of \('interleaved', 'half'\)"
        ):
            v.check_choice(wrong, "layout", ("interleaved", "half"))


def test_as_float_vector_and_scalar():
    np.testing.assert_array_equal(v.as_float_vector([1, 2], "f"), [1.0, 2.0])
    assert v.as_float_vector([1, 2], "f").dtype == np.float64
    for wrong in ([], np.ones((2, 2)), 3.0):
        with pytest.raises(
            ValueError, match=r"^f must be a non-empty 1-D array of shape \(k,\)"
        ):
            v.as_float_vector(wrong, "f", "(k,)")
    with pytest.raises(TypeError, match="^f must hold real numbers"):
        v.as_float_vector(["a"], "f")
    assert (
        v.as_float_scalar(2, "s") == 2.0
        and v.as_float_scalar(np.float32(0.5), "s") == 0.5
    )
    with pytest.raises(ValueError, match="^s must be a single number"):
        v.as_float_scalar([1.0], "s")
    with pytest.raises(ValueError, match="^s must hold finite numbers"):
        v.as_float_scalar(float("inf"), "s")


def test_check_index_list():
    assert v.check_index_list((2, np.int64(0)), 3, "keep") == [2, 0]
    for wrong, message in (
        ([], "at least one"),
        ([3], "indices 0 .. 2"),
        ([-1], "indices"),
        ([True], "indices"),
        ([1.0], "indices"),
        ([1, 1], "repeat"),
    ):
        with pytest.raises(ValueError, match=f"^keep must.*{message}"):
            v.check_index_list(wrong, 3, "keep")
