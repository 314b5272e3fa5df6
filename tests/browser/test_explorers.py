"""Every explorer in the built book, in headless Chromium, offline: it draws, its controls change
the drawing, a drawn value agrees with posenc, and a phone can reach its controls.

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
import pytest

from posenc.book.explorers import EXAMPLE_KEY, EXAMPLE_QUERY
from tests.browser.test_rendered_pages import (
    HTML,
    PHONE,
    SCREEN,
    SCREENSHOTS,
    browser,  # noqa: F401 (fixture)
    server,  # noqa: F401 (fixture)
)


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

    with open(ce.DEFAULT_DIR / ce.SUMMARY_FILE, encoding="utf-8") as file:
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


def test_every_explorer_in_the_book_is_checked():
    assert set(explorer_pages()) <= set(CHECKS), (
        f"explorers without a check here: {sorted(set(explorer_pages()) - set(CHECKS))}"
    )


@pytest.mark.parametrize("name", sorted(explorer_pages()))
def test_explorer_moves_and_draws_what_posenc_computes(name, server, browser):  # noqa: F811
    page_path = explorer_pages()[name]
    check = CHECKS[name]
    element = f"explorer-{name}"
    context = browser.new_context(viewport=SCREEN, service_workers="block")
    page = context.new_page()
    problems, outside = [], []
    page.on(
        "console",
        lambda m: m.type == "error" and problems.append(f"console: {m.text}"),
    )
    page.on("pageerror", lambda error: problems.append(f"page error: {error}"))

    def only_the_build(route):
        if route.request.url.startswith(server) or route.request.url.startswith(
            "data:"
        ):
            route.continue_()
        else:
            outside.append(route.request.url)
            route.abort()

    page.route("**/*", only_the_build)
    page.goto(server + page_path, wait_until="load")
    svg = page.locator(f"#{element} svg")
    svg.first.wait_for(state="attached", timeout=15000)

    before = _drawing(page, element)
    assert before, f"{name}: the explorer drew nothing"
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
        assert after != before, f"{name}: moving {control} to {value} changed nothing"
        before = after

    for control, value in check["set"]:
        _set_control(page, element, control, value)
    wanted = [m for m in _labels(page, element) if _matches(m, check["mark"])]
    readings = [_number(m[check["read"]]) for m in wanted if check["read"] in m]
    assert readings, f"{name}: no drawn mark {check['mark']} with {check['read']!r}"
    expected = check["expected"]()
    # Drawn values carry the grid's 4 significant digits (posenc.book.explorer_grids.DIGITS),
    # and Vega's label shows at most that many.
    assert any(
        math.isclose(r, expected, rel_tol=2e-3, abs_tol=1e-4) for r in readings
    ), (
        f"{name}: drew {readings[:4]} for {check['mark']}, posenc computes {expected:.6g}"
    )

    page.set_viewport_size(PHONE)
    page.wait_for_timeout(200)
    controls = page.evaluate(
        """(id) => [...document.querySelectorAll('#' + id + ' .vega-bindings input, #' + id +
                   ' .vega-bindings select')].map(e => { const r = e.getBoundingClientRect();
                   return [e.name, r.left, r.right, r.width, r.height]; })""",
        element,
    )
    unreachable = [
        c for c in controls if c[3] == 0 or c[1] < 0 or c[2] > PHONE["width"]
    ]
    assert controls and not unreachable, (
        f"{name}: controls off a phone's screen: {unreachable}"
    )
    (SCREENSHOTS / "phone").mkdir(parents=True, exist_ok=True)
    page.locator(f"#{element}").screenshot(
        path=str(SCREENSHOTS / "phone" / f"explorer-{name}.png")
    )
    context.close()
    assert not outside, f"{name}: requests outside the build: {outside[:3]}"
    assert not problems, f"{name}: " + "; ".join(problems[:3])


def test_pages_without_an_explorer_do_not_load_vega():
    with_explorer = set(explorer_pages().values())
    for page in sorted(HTML.glob("book/*.html")):
        loads = "_static/vega/" in page.read_text(encoding="utf-8")
        assert loads == (str(page.relative_to(HTML)) in with_explorer), page.name


def test_vega_is_served_once_from_the_build():
    bundles = list((HTML / "_static" / "vega").glob("vega-bundle-*.js"))
    if explorer_pages():
        assert len(bundles) == 1 and bundles[0].stat().st_size > 100_000
    assert Path(__file__).name  # the module is importable without a build
