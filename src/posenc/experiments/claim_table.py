"""Chapter 6's claims table, as data: every comparative sentence of the page, with the
comparisons that must all hold for it to be shown.

Each :class:`Claim` is one row: what is claimed, on which metric and lengths, and its
:class:`Comparison` terms over evaluated :class:`Setting` s and subsets of :class:`Answers`.
:mod:`posenc.experiments.claims` evaluates the table on any seeds.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from posenc.experiments.inference import EQUIVALENCE_MARGIN

#: The floor of chapter 6: the best guess that does not match the query marker.
FLOOR = "most frequent value"


@dataclass(frozen=True)
class Setting:
    """One evaluated setting: ``model`` ("base" or "finetune_<method>"), ``method``, length
    ``multiple`` x L and factor s (None: s = multiple). The base model at L is plain RoPE;
    ``method="floor"`` is the no-marker-matching guess on the same sequences, and
    ``method="local"`` a model that finds every needle within the trained distances and
    makes that guess beyond them."""

    method: str
    multiple: int
    model: str = "base"
    factor: float | None = None


@dataclass(frozen=True)
class Answers:
    """Which answers a mean counts: "all", "far" (beyond the trained distances), "near", or
    needles at distance in (low, high]; ``layer`` set: the attention entropy of that layer
    (per chunk) instead of accuracy."""

    which: str = "all"
    low: float = 0.0
    high: float = np.inf
    layer: int | None = None


ALL, FAR, NEAR = Answers("all"), Answers("far"), Answers("near")


@dataclass(frozen=True)
class Comparison:
    """``sum(c * mean(setting, answers))`` over ``terms``; > 0 is the claimed direction."""

    terms: tuple[tuple[float, Setting, Answers], ...]
    kind: str = "direction"  # or "equivalence"


def beats(first: Setting, second: Setting, answers: Answers = ALL) -> Comparison:
    """First above second on ``answers``."""
    return Comparison(((1.0, first, answers), (-1.0, second, answers)))


def same(first: Setting, second: Setting, answers: Answers = ALL) -> Comparison:
    """First and second within :data:`~posenc.experiments.inference.EQUIVALENCE_MARGIN`."""
    return Comparison(((1.0, first, answers), (-1.0, second, answers)), "equivalence")


@dataclass(frozen=True)
class Claim:
    """One row of the claims table: ``comparisons`` must all hold for the claim to be shown."""

    key: str
    statement: str
    metric: str
    lengths: str
    comparisons: tuple[Comparison, ...]

    @property
    def test(self) -> str:
        kinds = {c.kind for c in self.comparisons}
        if kinds == {"direction"}:
            return "direction, z > 1.645 in every seed"
        if kinds == {"equivalence"}:
            return f"equivalence, 90% interval within ±{EQUIVALENCE_MARGIN:g} in every seed"
        return "mixed"


def _base(method: str, multiple: int) -> Setting:
    return Setting(method, multiple)


SCALED = ("linear", "ntk", "dynamic", "ntk_by_parts", "yarn")
GOOD, FADING = ("linear", "ntk_by_parts", "yarn"), ("ntk", "dynamic")


def _tuned(method: str, multiple: int, factor: float | None = None) -> Setting:
    return Setting(method, multiple, f"finetune_{method}", factor)


def _ntk_band(low: float, high: float) -> Answers:
    return Answers("distance", low, high)


#: Distances from which NTK-aware scaling at 8L turns pairs 4, 5 and 6 farther than training
#: did: (L - 2) theta_i / theta'_i for L = 128, base 500, head 16 (asserted in chapter 6).
NTK_LEAVES = {4: 413.0, 5: 556.0, 6: 749.0}

CLAIMS: tuple[Claim, ...] = (
    Claim(
        "none-below-floor",
        "no scaling: far needles below the no-matching floor",
        "far needles",
        "4L, 8L",
        tuple(beats(Setting("floor", n), _base("none", n), FAR) for n in (4, 8)),
    ),
    Claim(
        "every-method-beats-none",
        "every method beats no scaling",
        "all needles",
        "2L, 4L, 8L",
        tuple(beats(_base(m, n), _base("none", n)) for m in SCALED for n in (2, 4, 8)),
    ),
    Claim(
        "none-below-local-model",
        "no scaling: below finding near needles, guessing far ones",
        "all needles",
        "8L",
        (beats(Setting("local", 8), _base("none", 8)),),
    ),
    Claim(
        "good-beat-fading",
        "PI, NTK-by-parts, YaRN each beat NTK-aware, dynamic",
        "far needles and all needles",
        "4L, 8L",
        tuple(
            beats(_base(g, n), _base(f, n), answers)
            for g in GOOD
            for f in FADING
            for n in (4, 8)
            for answers in (FAR, ALL)
        ),
    ),
    Claim(
        "fading-falls",
        "NTK-aware and dynamic fall from 2L to 4L and to 8L",
        "all needles",
        "2L > 4L > 8L",
        tuple(
            beats(_base(f, a), _base(f, b)) for f in FADING for a, b in ((2, 4), (4, 8))
        ),
    ),
    Claim(
        "fading-falls-more",
        "NTK-aware, dynamic drop more from 2L to 8L than the rest",
        "all needles",
        "2L, 8L",
        tuple(
            Comparison(
                (
                    (1.0, _base(f, 2), ALL),
                    (-1.0, _base(f, 8), ALL),
                    (-1.0, _base(g, 2), ALL),
                    (1.0, _base(g, 8), ALL),
                )
            )
            for f in FADING
            for g in GOOD
        ),
    ),
    Claim(
        "ntk-same-as-dynamic",
        "NTK-aware and dynamic NTK do not differ",
        "far needles and all needles",
        "2L, 4L, 8L",
        tuple(
            same(_base("ntk", n), _base("dynamic", n), a)
            for n in (2, 4, 8)
            for a in (FAR, ALL)
        ),
    ),
    Claim(
        "pi-falls",
        "PI scores lower at 8L than at 2L and than at L",
        "all needles",
        "L, 2L, 8L",
        (
            beats(_base("linear", 2), _base("linear", 8)),
            beats(_base("none", 1), _base("linear", 8)),
        ),
    ),
    Claim(
        "by-parts-falls",
        "NTK-by-parts and YaRN score lower at 8L than at L",
        "all needles",
        "L, 8L",
        tuple(beats(_base("none", 1), _base(m, 8)) for m in ("ntk_by_parts", "yarn")),
    ),
    Claim(
        "by-parts-beat-pi",
        "NTK-by-parts and YaRN beat Position Interpolation",
        "far needles and all needles",
        "4L, 8L",
        tuple(
            beats(_base(m, n), _base("linear", n), a)
            for m in ("ntk_by_parts", "yarn")
            for n in (4, 8)
            for a in (FAR, ALL)
        ),
    ),
    Claim(
        "by-parts-beat-pi-2L",
        "NTK-by-parts and YaRN beat Position Interpolation at 2L",
        "far needles",
        "2L",
        tuple(
            beats(_base(m, 2), _base("linear", 2), FAR)
            for m in ("ntk_by_parts", "yarn")
        ),
    ),
    Claim(
        "yarn-same-as-by-parts-2L",
        "YaRN and NTK-by-parts do not differ at 2L",
        "far needles and all needles",
        "2L",
        tuple(same(_base("yarn", 2), _base("ntk_by_parts", 2), a) for a in (FAR, ALL)),
    ),
    Claim(
        "yarn-beats-by-parts",
        "YaRN beats NTK-by-parts (the temperature helps)",
        "far needles",
        "4L, 8L",
        tuple(beats(_base("yarn", n), _base("ntk_by_parts", n), FAR) for n in (4, 8)),
    ),
    Claim(
        "yarn-same-as-by-parts",
        "YaRN and NTK-by-parts do not differ",
        "far needles",
        "4L, 8L",
        tuple(same(_base("yarn", n), _base("ntk_by_parts", n), FAR) for n in (4, 8)),
    ),
    Claim(
        "ntk-collapse-beyond-pair-5",
        "NTK-aware at 8L: 413-556 tokens beat 556-749 tokens",
        "needles by distance",
        "8L",
        (
            Comparison(
                (
                    (1.0, _base("ntk", 8), _ntk_band(NTK_LEAVES[4], NTK_LEAVES[5])),
                    (-1.0, _base("ntk", 8), _ntk_band(NTK_LEAVES[5], NTK_LEAVES[6])),
                )
            ),
        ),
    ),
    Claim(
        "by-parts-no-collapse",
        "NTK-by-parts beats NTK-aware on needles beyond 749 tokens",
        "needles by distance",
        "8L",
        (
            beats(
                _base("ntk_by_parts", 8),
                _base("ntk", 8),
                _ntk_band(NTK_LEAVES[6], np.inf),
            ),
        ),
    ),
    Claim(
        "rechoose-s",
        "tuned model, s = length / L, beats itself at tuning s",
        "all needles",
        "L, 8L",
        (
            *(beats(_tuned(m, 8), _tuned(m, 8, 4)) for m in ("linear", "yarn")),
            beats(_tuned("linear", 1), _tuned("linear", 1, 4)),
        ),
    ),
    Claim(
        "finetune-helps-none-and-pi",
        "fine-tuning helps plain RoPE and PI (tuned beats base)",
        "all needles",
        "4L",
        (
            beats(_tuned("none", 4), _base("none", 4)),
            beats(_tuned("linear", 4, 4), _base("linear", 4)),
        ),
    ),
    Claim(
        "finetune-helps-yarn",
        "fine-tuning helps YaRN (tuned beats base)",
        "all needles",
        "4L",
        (beats(_tuned("yarn", 4, 4), _base("yarn", 4)),),
    ),
    Claim(
        "none-does-not-catch-up",
        "plain RoPE, fine-tuned, below every scaled base model",
        "all needles",
        "4L",
        tuple(beats(_base(m, 4), _tuned("none", 4)) for m in SCALED),
    ),
    Claim(
        "tuned-yarn-beats-tuned-pi",
        "after the same fine-tune, YaRN beats Position Interpolation",
        "all needles",
        "4L",
        (beats(_tuned("yarn", 4, 4), _tuned("linear", 4, 4)),),
    ),
    Claim(
        "untuned-yarn-beats-tuned-pi",
        "YaRN without fine-tuning beats PI fine-tuned",
        "all needles",
        "4L",
        (beats(_base("yarn", 4), _tuned("linear", 4, 4)),),
    ),
    Claim(
        "finetune-narrows-gap",
        "fine-tuning narrows YaRN's lead over Position Interpolation",
        "all needles",
        "4L",
        (
            Comparison(
                (
                    (1.0, _base("yarn", 4), ALL),
                    (-1.0, _base("linear", 4), ALL),
                    (-1.0, _tuned("yarn", 4, 4), ALL),
                    (1.0, _tuned("linear", 4, 4), ALL),
                )
            ),
        ),
    ),
    Claim(
        "temperature-lowers-entropy-layer-2",
        "YaRN's entropy below NTK-by-parts' in layer 2",
        "entropy at the query rows, layer 2",
        "2L, 4L, 8L",
        tuple(
            beats(_base("ntk_by_parts", n), _base("yarn", n), Answers(layer=1))
            for n in (2, 4, 8)
        ),
    ),
    Claim(
        "by-parts-lowers-entropy",
        "NTK-by-parts' attention entropy below plain RoPE's",
        "entropy at the query rows, layers 1 and 2",
        "2L, 4L, 8L",
        tuple(
            beats(_base("none", n), _base("ntk_by_parts", n), Answers(layer=layer))
            for n in (2, 4, 8)
            for layer in (0, 1)
        ),
    ),
)
