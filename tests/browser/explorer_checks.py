"""What the browser test checks on every explorer of the built book (issue 15).

For each explorer, on its page already loaded by ``test_page_reads_like_a_book``: it draws,
two of its controls change the drawing, a drawn value agrees with posenc, and a phone can
reach every control.

The explorers are found in the built pages (``div.posenc-explorer``); each one the book shows
must be listed in :data:`CHECKS` with two controls to move and one setting whose drawn value
posenc computes here. Vega-Lite labels every drawn mark for screen readers
(``aria-label="pair i: 3; wavelength: 14.9"``): the test reads the value from there. The bundle
of Vega comes from the build's _static; a page without it draws nothing, and the test fails.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np

from posenc.book.explorers import EXAMPLE_KEY, EXAMPLE_QUERY

ROOT = Path(__file__).resolve().parents[2]
HTML = ROOT / "_build" / "html"
SCREENSHOTS = ROOT / "_build" / "screenshots"
PHONE_WIDTH = 390


def explorer_pages() -> dict[str, str]:
    """{explorer name: page} for every explorer in the built HTML."""
    found = {}
    for page in sorted(HTML.glob("book/*.html")):
        for name in re.findall(
            r'class="posenc-explorer" id="explorer-([a-z0-9-]+)"',
            page.read_text(encoding="utf-8"),
        ):
            found[name] = str(page.relative_to(HTML))
    return found


def _expected_wavelength() -> float:
    import posenc

    return float(posenc.wavelengths(16, 100.0)[3])


def _expected_rope_score() -> float:
    import posenc

    query = np.array(ROPE_QUERY)
    key = np.array(ROPE_KEY)
    rotated_query = posenc.rope_matrix(9, len(query), layout="half") @ query
    rotated_key = posenc.rope_matrix(4, len(key), layout="half") @ key
    return float(rotated_query @ rotated_key)


def _expected_pi_scale() -> float:
    import posenc

    inv_freq, _ = posenc.rope_scaling(
        "linear", 128, base=500000.0, factor=8.0, original_max_position=8192
    )
    return float(inv_freq[5] / posenc.rope_inv_freq(128, 500000.0)[5])


def _expected_yarn_mean() -> float:
    """The seeds' mean accuracy of YaRN at 8L, read from results.csv (which `evaluate` wrote
    from the answers), not from the per-seed answers the explorer's grid summarises."""
    import csv

    from posenc.experiments import context_extension as ce

    with open(ROOT / ce.DEFAULT_DIR / ce.SUMMARY_FILE, encoding="utf-8") as file:
        values = [
            float(row["accuracy"])
            for row in csv.DictReader(file)
            if (row["model"], row["method"], row["length"]) == ("base", "yarn", "1024")
        ]
    assert len(values) == len(ce.DEFAULT_SEEDS)
    return float(np.mean(values))


#: The query and key chapter 4's explorer rotates (its defaults).
ROPE_QUERY = EXAMPLE_QUERY
ROPE_KEY = EXAMPLE_KEY

#: For each explorer: two controls to move, then a setting and the drawn value it must show:
#: (controls to set, the mark's label fields that pick it, the field read, posenc's value).
CHECKS = {
    "sinusoidal": {
        "move": [("d_model", "16"), ("base", "100")],
        "set": [("d_model", "16"), ("base", "100")],
        "mark": {"pair i": 3},
        "read": "wavelength",
        "expected": _expected_wavelength,
    },
    "rope": {
        "move": [("query_position", "9"), ("layout", "half")],
        "set": [("layout", "half"), ("query_position", "9"), ("key_position", "4")],
        "mark": {"key position n": 4, "query position m": 9},
        "read": "q·k",
        "expected": _expected_rope_score,
    },
    "scaling": {
        "move": [("method", "linear"), ("factor", "16")],
        "set": [("model", "llama-3.1-8b"), ("method", "linear"), ("factor", "8")],
        "mark": {"pair i": 5},
        "read": "θ′ᵢ / θᵢ",
        "expected": _expected_pi_scale,
    },
    "experiment": {
        "move": [("view", "seeds"), ("length", "256")],
        "set": [("view", "mean and spread")],
        "mark": {"length (tokens)": 1024, "method (click to pick)": "yarn"},
        "read": "accuracy",
        "expected": _expected_yarn_mean,
    },
}


def _set_control(page, element: str, name: str, value: str) -> None:
    control = page.locator(f"#{element} .vega-bindings [name='{name}']")
    kind = control.first.get_attribute("type") or control.first.evaluate(
        "e => e.tagName.toLowerCase()"
    )
    if kind == "select":
        control.first.select_option(value)
    elif kind == "radio":
        page.locator(
            f"#{element} .vega-bindings [name='{name}'][value='{value}']"
        ).check()
    elif kind == "checkbox":
        control.first.set_checked(value == "true")
    else:  # a range slider
        control.first.evaluate(
            "(e, v) => { e.value = v; e.dispatchEvent(new Event('input', {bubbles: true}));"
            " e.dispatchEvent(new Event('change', {bubbles: true})); }",
            value,
        )
    # Vega redraws asynchronously: give it a moment to settle.
    page.wait_for_timeout(60)


def _drawing(page, element: str) -> str:
    return page.evaluate(
        """(id) => [...document.querySelectorAll('#' + id + ' svg path, #' + id + ' svg text')]
            .map(e => (e.getAttribute('d') || '') + (e.textContent || '')).join('|')""",
        element,
    )


def _labels(page, element: str) -> list[dict[str, str]]:
    raw = page.evaluate(
        """(id) => [...document.querySelectorAll('#' + id + ' svg [aria-label]')]
            .map(e => e.getAttribute('aria-label'))""",
        element,
    )
    marks = []
    for label in raw:
        fields = {}
        for part in label.split("; "):
            if ": " in part:
                key, value = part.split(": ", 1)
                fields[key.strip()] = value.strip()
        if fields:
            marks.append(fields)
    return marks


def _number(text: str) -> float:
    return float(text.replace(",", "").replace("−", "-"))


def _matches(fields: dict[str, str], wanted: dict) -> bool:
    for key, value in wanted.items():
        if key not in fields:
            return False
        if isinstance(value, str):
            if fields[key] != value:
                return False
        elif not math.isclose(_number(fields[key]), value):
            return False
    return True


def explorer_problems(page, name: str) -> list[str]:
    """Everything wrong with explorer ``name`` on the loaded ``page`` (empty if nothing)."""
    if name not in CHECKS:
        return [f"{name}: an explorer without an entry in CHECKS"]
    check = CHECKS[name]
    element = f"explorer-{name}"
    problems: list[str] = []
    try:
        page.locator(f"#{element} svg").first.wait_for(state="attached", timeout=15000)
    except Exception:  # noqa: BLE001 (any failure to draw is the finding)
        return [f"{name}: the explorer drew nothing (is the Vega bundle served?)"]
    before = _drawing(page, element)
    if not before:
        return [f"{name}: the explorer drew nothing"]
    for control, value in check["move"]:
        _set_control(page, element, control, value)
        page.wait_for_function(
            """([id, before]) => [...document.querySelectorAll('#' + id + ' svg path, #' + id +
                ' svg text')].map(e => (e.getAttribute('d') || '') + (e.textContent || ''))
                .join('|') !== before""",
            arg=[element, before],
            timeout=5000,
        )
        after = _drawing(page, element)
        if after == before:
            problems.append(f"{name}: moving {control} to {value} changed nothing")
        before = after

    for control, value in check["set"]:
        _set_control(page, element, control, value)
    wanted = [m for m in _labels(page, element) if _matches(m, check["mark"])]
    readings = [_number(m[check["read"]]) for m in wanted if check["read"] in m]
    if not readings:
        return problems + [
            f"{name}: no drawn mark {check['mark']} with {check['read']!r}"
        ]
    expected = check["expected"]()
    # Drawn values carry the grid's 4 significant digits (posenc.book.explorer_grids.DIGITS),
    # and Vega's label shows at most that many.
    if not any(math.isclose(r, expected, rel_tol=2e-3, abs_tol=1e-4) for r in readings):
        problems.append(
            f"{name}: drew {readings[:4]} for {check['mark']}, posenc computes "
            f"{expected:.6g}"
        )

    page.set_viewport_size({"width": PHONE_WIDTH, "height": 844})
    page.wait_for_timeout(100)
    controls = page.evaluate(
        """(id) => [...document.querySelectorAll('#' + id + ' .vega-bindings input, #' + id +
                   ' .vega-bindings select')].map(e => { const r = e.getBoundingClientRect();
                   return [e.name, r.left, r.right, r.width, r.height]; })""",
        element,
    )
    unreachable = [c for c in controls if c[3] == 0 or c[1] < 0 or c[2] > PHONE_WIDTH]
    if not controls or unreachable:
        problems.append(f"{name}: controls off a phone's screen: {unreachable}")
    (SCREENSHOTS / "phone").mkdir(parents=True, exist_ok=True)
    page.locator(f"#{element}").screenshot(
        path=str(SCREENSHOTS / "phone" / f"explorer-{name}.png")
    )
    return problems
