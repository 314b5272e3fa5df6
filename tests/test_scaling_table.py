"""posenc.scaling as a table: one function per method, one shared check, rope_scaling looks up and calls."""

import json
from pathlib import Path

import numpy as np
import pytest

from posenc import rope_scaling
from posenc._validation import (
    check_bool,
    check_choice,
    check_factor,
    check_options,
    check_real,
)
from posenc.scaling import (
    METHODS,
    OPTIONS,
    SCALING_METHODS,
    RopeArguments,
    ScalingMethod,
    frequencies,
)

ROOT = Path(__file__).resolve().parents[1]


# the options a method cannot run without (the table's ``required``), for dim 64
REQUIRED = {
    "longrope": {
        "short_factor": [1.0 + i / 64 for i in range(32)],
        "long_factor": [1.0 + i for i in range(32)],
    },
    "proportional": {"partial_rotary_factor": 0.25},
}


def required_for(method: str) -> dict:
    assert set(REQUIRED.get(method, {})) == set(SCALING_METHODS[method].required)
    return dict(REQUIRED.get(method, {}))


def extra_for(method: str) -> dict:
    seq_len = {"seq_len": 9000} if SCALING_METHODS[method].needs_seq_len else {}
    return {**seq_len, **required_for(method)}


def test_methods_and_options_are_read_from_the_table():
    assert METHODS == tuple(SCALING_METHODS)
    assert METHODS == (
        "none",
        "linear",
        "ntk",
        "dynamic",
        "ntk_by_parts",
        "yarn",
        "llama3",
        "longrope",
        "proportional",
    )
    assert OPTIONS == {
        name: dict(entry.options) for name, entry in SCALING_METHODS.items()
    }


@pytest.mark.parametrize("method", METHODS)
def test_every_method_returns_dim_over_2_frequencies_and_a_float(method):
    entry = SCALING_METHODS[method]
    factor = 4.0 if entry.takes_factor else 1.0
    arguments = dict(base=5e5, factor=factor, original_max_position=4096)
    inv_freq, attention_factor = rope_scaling(
        method, 64, **arguments, **extra_for(method)
    )
    assert inv_freq.dtype == np.float64 and inv_freq.shape == (32,)
    # p-RoPE leaves the slowest pairs unrotated: int(0.25 * 64 // 2) = 8 rotated, 24 zeros
    rotated = 8 if method == "proportional" else 32
    assert np.all(np.isfinite(inv_freq)) and np.all(inv_freq[:rotated] > 0)
    assert np.all(inv_freq[rotated:] == 0)
    assert isinstance(attention_factor, float)
    # an option left out takes the table's default: passing the defaults changes nothing
    defaults = {k: v for k, v in entry.options.items() if v is not None}
    again = rope_scaling(method, 64, **arguments, **extra_for(method), **defaults)
    np.testing.assert_array_equal(again[0], inv_freq)
    assert again[1] == attention_factor


@pytest.mark.parametrize("method", METHODS)
def test_the_shared_check_applies_to_every_method(method):
    extra = extra_for(method)
    factor = 2.0 if SCALING_METHODS[method].takes_factor else 1.0
    for kwargs, error, name in [
        ({"factor": factor, "bogus_option": 1}, ValueError, "bogus_option"),
        ({"factor": factor, "base": 0.0}, ValueError, "base"),
        ({"factor": 0.5}, ValueError, "factor"),
        ({"factor": True}, TypeError, "factor"),
        (
            {"factor": factor, "original_max_position": 2048.0},
            TypeError,
            "original_max_position",
        ),
    ]:
        with pytest.raises(error, match=name):
            rope_scaling(method, 64, **kwargs, **extra)
    for dim in (63, 0, -2):
        with pytest.raises(ValueError, match="dim"):
            rope_scaling(method, dim, factor=factor, **extra)
    with pytest.raises(TypeError, match="dim"):
        rope_scaling(method, 64.0, factor=factor, **extra)
    required = required_for(method)
    if SCALING_METHODS[method].needs_seq_len:
        with pytest.raises(ValueError, match="seq_len"):
            rope_scaling(method, 64, factor=factor, **required)
    elif SCALING_METHODS[method].optional_seq_len:
        assert rope_scaling(method, 64, factor=factor, **required)[0].shape == (32,)
        assert rope_scaling(method, 64, factor=factor, seq_len=100, **required)
    else:
        with pytest.raises(ValueError, match="seq_len"):
            rope_scaling(method, 64, factor=factor, seq_len=100, **required)
    if SCALING_METHODS[method].reads_seq_len:
        with pytest.raises(ValueError, match="seq_len"):
            rope_scaling(method, 64, factor=factor, **{**extra, "seq_len": 0})
        with pytest.raises(TypeError, match="seq_len"):
            rope_scaling(method, 64, factor=factor, **{**extra, "seq_len": 9000.0})
    for name in SCALING_METHODS[method].required:
        without = {k: v for k, v in extra.items() if k != name}
        for kwargs in (without, {**extra, name: None}):
            with pytest.raises(
                ValueError, match=rf"requires the option\(s\) \['{name}'\]"
            ):
                rope_scaling(method, 64, factor=factor, **kwargs)


def test_an_option_of_another_method_is_named_with_what_the_method_takes():
    with pytest.raises(
        ValueError,
        match=r"'linear' does not take the option\(s\) \['beta_fast'\]; it takes no options",
    ):
        rope_scaling("linear", 64, factor=2.0, beta_fast=32)
    with pytest.raises(
        ValueError,
        match=r"\['mscale'\]; it takes \['beta_fast', 'beta_slow', 'truncate'\]",
    ):
        rope_scaling("ntk_by_parts", 64, factor=2.0, mscale=1.0)
    with pytest.raises(
        ValueError,
        match=r"method must be one of \('none', 'linear', .*'longrope', 'proportional'\), "
        r"got 'su'",
    ):
        rope_scaling("su", 64, factor=2.0)  # Phi-3's first name for longrope


def test_an_entry_in_the_table_is_all_a_new_method_needs(monkeypatch):
    def compute_halfway(
        rope: RopeArguments, *, share: float
    ) -> tuple[np.ndarray, float]:
        """Interpolate by s**share: a made-up method, for this test only."""
        return rope.theta / rope.factor**share, 1.0

    def compute_by_length(rope: RopeArguments) -> tuple[np.ndarray, float]:
        """Linear scaling by the current length: a made-up method that reads seq_len."""
        return rope.theta * rope.original_max_position / max(
            rope.seq_len, rope.original_max_position
        ), 1.0

    monkeypatch.setitem(
        SCALING_METHODS, "halfway", ScalingMethod(compute_halfway, {"share": 0.5})
    )
    monkeypatch.setitem(
        SCALING_METHODS,
        "by_length",
        ScalingMethod(compute_by_length, needs_seq_len=True),
    )
    theta = frequencies(16, 100.0)
    np.testing.assert_allclose(
        rope_scaling("halfway", 16, base=100.0, factor=4.0)[0], theta / 2, rtol=1e-15
    )
    np.testing.assert_allclose(
        rope_scaling("halfway", 16, base=100.0, factor=4.0, share=1.0)[0],
        theta / 4,
        rtol=1e-15,
    )
    np.testing.assert_allclose(
        rope_scaling(
            "by_length", 16, base=100.0, original_max_position=64, seq_len=256
        )[0],
        theta / 4,
        rtol=1e-15,
    )
    # the shared check covers the new methods at once
    with pytest.raises(ValueError, match="beta_fast"):
        rope_scaling("halfway", 16, factor=4.0, beta_fast=32)
    with pytest.raises(ValueError, match="seq_len"):
        rope_scaling("halfway", 16, factor=4.0, seq_len=10)
    with pytest.raises(ValueError, match="seq_len is required for method 'by_length'"):
        rope_scaling("by_length", 16)
    with pytest.raises(ValueError, match="dim"):
        rope_scaling("halfway", 15, factor=4.0)
    # and the one existing seq_len check names every method that reads it
    with pytest.raises(
        ValueError, match="only used by method 'dynamic', 'longrope', 'by_length'"
    ):
        rope_scaling("linear", 16, factor=4.0, seq_len=10)


def test_an_entry_with_required_options_or_an_optional_seq_len(monkeypatch):
    def compute_listed(
        rope: RopeArguments, *, scales: object
    ) -> tuple[np.ndarray, float]:
        """Divide pair i by scales[i], and by 2 past L: made up, for this test only."""
        past = rope.seq_len is not None and rope.seq_len > rope.original_max_position
        return rope.theta / np.asarray(scales) / (2.0 if past else 1.0), 1.0

    monkeypatch.setitem(
        SCALING_METHODS,
        "listed",
        ScalingMethod(
            compute_listed,
            {"scales": None},
            optional_seq_len=True,
            required=("scales",),
        ),
    )
    theta = frequencies(4, 100.0)
    scales = [1.0, 4.0]
    for seq_len, divisor in ((None, 1.0), (64, 1.0), (65, 2.0)):
        np.testing.assert_array_equal(
            rope_scaling(
                "listed",
                4,
                base=100.0,
                original_max_position=64,
                seq_len=seq_len,
                scales=scales,
            )[0],
            theta / np.array(scales) / divisor,
        )
    with pytest.raises(
        ValueError, match=r"'listed' requires the option\(s\) \['scales'\]"
    ):
        rope_scaling("listed", 4)
    with pytest.raises(ValueError, match="'dynamic', 'longrope', 'listed'"):
        rope_scaling("linear", 4, factor=2.0, seq_len=10)
    with pytest.raises(ValueError, match="not among the options"):
        ScalingMethod(compute_listed, {"scales": None}, required=("scale",))
    with pytest.raises(ValueError, match="exclude each other"):
        ScalingMethod(compute_listed, needs_seq_len=True, optional_seq_len=True)


def test_a_table_entry_cannot_be_changed_in_place():
    entry = SCALING_METHODS["yarn"]
    with pytest.raises(TypeError):
        entry.options["beta_fast"] = 8.0
    with pytest.raises(AttributeError):
        entry.needs_seq_len = True


def test_the_reusable_checks_name_the_argument():
    assert (
        check_real(-2, "shift") == -2.0 and check_bool(np.bool_(True), "flag") is True
    )
    assert check_factor(3) == 3.0 and check_choice("b", "kind", ("a", "b")) == "b"
    check_options({"a": 1}, ("a", "b"), "thing")
    for call, error, name in [
        (lambda: check_real("1", "shift"), TypeError, "shift"),
        (lambda: check_real(float("inf"), "shift"), ValueError, "shift"),
        (lambda: check_bool(1, "flag"), TypeError, "flag"),
        (lambda: check_factor(0.99, "stretch"), ValueError, "stretch"),
        (lambda: check_factor(float("nan")), ValueError, "factor"),
        (lambda: check_choice(1, "kind", ("a", "b")), ValueError, "kind"),
        (
            lambda: check_options({"c": 1}, ("a",), "thing"),
            ValueError,
            r"thing does not take the option\(s\) \['c'\]",
        ),
    ]:
        with pytest.raises(error, match=name):
            call()


def test_the_book_shows_every_methods_function_and_not_the_whole_rope_scaling():
    # chapter 5's page and its section pages on the methods, and "Other roads" (p-RoPE)
    pages = (
        "05_yarn.ipynb",
        "05a_yarn_in_detail.ipynb",
        "05d_more_methods.ipynb",
        "06_other_roads.ipynb",
    )
    markdown = "\n".join(
        "".join(cell["source"])
        for page in pages
        for cell in json.loads((ROOT / "book" / page).read_text(encoding="utf-8"))[
            "cells"
        ]
        if cell["cell_type"] == "markdown"
    )
    shown = set()
    lines = markdown.splitlines()
    for k, line in enumerate(lines):
        if line.startswith("```{literalinclude} ../src/posenc/scaling.py"):
            option = lines[k + 1]
            if option.startswith(":pyobject: "):
                shown.add(option.removeprefix(":pyobject: ").strip())
    functions = {entry.function.__name__ for entry in SCALING_METHODS.values()}
    assert functions <= shown
    assert "rope_scaling" not in shown
