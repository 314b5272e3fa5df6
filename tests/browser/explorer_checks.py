"""What the browser test checks on every explorer of the built book (issue 15).

For each explorer, on its page already loaded by ``test_page_reads_like_a_book``: it draws,
two of its controls change the drawing, a drawn value agrees with posenc, it shows the
controls that apply (and only those), and on a 390 x 844 phone it fits: what it draws and its
controls lie within the screen, the controls sit above the drawing with no blank band under
them, keep their values when the layout changes, and nothing covers a control wherever the reader scrolls it to (the theme's
"back to top" button appears when the reader scrolls up).

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
PHONE_HEIGHT = 844


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


def _seed_accuracies(method: str) -> list[float]:
    """Each seed's accuracy of ``method`` at 8L, read from results.csv (which `evaluate`
    wrote from the answers), not from the per-seed answers the explorer's grid summarises."""
    import csv

    from posenc.experiments import context_extension as ce

    with open(ROOT / ce.DEFAULT_DIR / ce.SUMMARY_FILE, encoding="utf-8") as file:
        values = [
            float(row["accuracy"])
            for row in csv.DictReader(file)
            if (row["model"], row["method"], row["length"]) == ("base", method, "1024")
        ]
    assert len(values) == len(ce.DEFAULT_SEEDS)
    return values


def _expected_ntk_mean() -> float:
    """The seeds' mean accuracy of NTK-aware at 8L, which the explorer draws as one line
    with dynamic NTK: the two means are within the chapter's 0.005."""
    ntk, dynamic = (
        np.mean(_seed_accuracies("ntk")),
        np.mean(_seed_accuracies("dynamic")),
    )
    assert abs(ntk - dynamic) < 0.005
    return float(ntk)


#: The query and key chapter 4's explorer rotates (its defaults).
ROPE_QUERY = EXAMPLE_QUERY
ROPE_KEY = EXAMPLE_KEY


def _published_factor(name: str) -> str:
    from posenc.book.presets import load_presets

    return f"s = {load_presets()[name].factor:g}"


#: For each explorer: two controls to move, then a setting and the drawn value it must show:
#: (controls to set, the mark's label fields that pick it, the field read, posenc's value).
#: Optional: "shown", settings and the controls (by name) that must then be the only ones
#: visible; "text", a setting and text the drawing must then hold (posenc's value);
#: "phone", a setting that shows the most controls, for the phone checks; "opening", the
#: controls' values on loading and a text the first drawing must hold.
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
        "move": [("method", "linear"), ("factor", "8")],  # it opens at s = 16
        "set": [("model", "llama-3.1-8b"), ("method", "linear"), ("factor", "8")],
        "mark": {"pair i": 5},
        "read": "θ′ᵢ / θᵢ",
        "expected": _expected_pi_scale,
        "shown": [
            ([("method", "published")], {"model", "method"}),
            ([("method", "none")], {"model", "method"}),
            ([("method", "ntk")], {"model", "method", "factor"}),
            (
                [("method", "yarn")],
                {"model", "method", "factor", "beta_fast", "beta_slow", "truncate"},
            ),
            (
                [("method", "llama3")],
                {"model", "method", "factor", "low_freq_factor", "high_freq_factor"},
            ),
        ],
        # the published setting draws and names the model's own factor (here 40)
        "text": (
            [("model", "deepseek-v3"), ("method", "published")],
            lambda: _published_factor("deepseek-v3"),
        ),
        "phone": [("model", "llama-3.1-8b"), ("method", "yarn")],
        # it opens on chapter 5's own head and method, where no pair meets unseen angles,
        # and names the diamonds only when it draws some (NTK-aware at s = 16 leaves 17)
        "opening": (
            {"model": "llama-2-7b", "method": "ntk_by_parts", "factor": "16"},
            "no pair meets unseen angles",
        ),
        "marked": (
            [("model", "llama-2-7b"), ("method", "ntk"), ("factor", "16")],
            # one text; on a phone the diamonds' name is a line of its own
            ("17 pairs meet unseen angles", "(vermilion diamonds)"),
        ),
    },
    "experiment": {
        "move": [("view", "seeds"), ("length", "256")],
        "set": [("view", "mean and spread")],
        "mark": {
            "length (tokens)": 1024,
            "method (click to pick)": "NTK-aware (= dynamic NTK here)",
        },
        "read": "accuracy",
        "expected": _expected_ntk_mean,
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
    if "opening" in check:
        values, opening_text = check["opening"]
        found = _control_values(page, element)
        opened = {control: found.get(control) for control in values}
        if opened != values:
            problems.append(f"{name}: opens on {opened}, not {values}")
        if not any(opening_text in t for t in _texts(page, element)):
            problems.append(f"{name}: its first drawing holds no {opening_text!r}")
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

    for setting, names in check.get("shown", []):
        for control, value in setting:
            _set_control(page, element, control, value)
        visible = set(_visible_controls(page, element))
        if visible != names:
            problems.append(
                f"{name}: at {setting} the controls shown are {sorted(visible)}, "
                f"not {sorted(names)}"
            )
    if "text" in check:
        setting, expected_text = check["text"]
        for control, value in setting:
            _set_control(page, element, control, value)
        wanted_text = expected_text()
        if not any(wanted_text in t for t in _texts(page, element)):
            problems.append(f"{name}: at {setting} no drawn text holds {wanted_text!r}")
    if "marked" in check:
        setting, marked_text = check["marked"]
        for control, value in setting:
            _set_control(page, element, control, value)
        if not any(
            all(part in t for part in marked_text) for t in _texts(page, element)
        ):
            problems.append(f"{name}: at {setting} no drawn text holds {marked_text!r}")
    for control, value in check.get("phone", []):
        _set_control(page, element, control, value)
    return problems + phone_problems(page, name)


def _visible_controls(page, element: str) -> list[str]:
    return page.evaluate(
        """(id) => [...document.querySelectorAll('#' + id + ' .vega-bindings [name]')]
            .filter(e => e.offsetParent !== null).map(e => e.getAttribute('name'))""",
        element,
    )


def _texts(page, element: str) -> list[str]:
    return page.evaluate(
        """(id) => [...document.querySelectorAll('#' + id + ' svg text')]
            .map(e => e.textContent)""",
        element,
    )


def _control_values(page, element: str) -> dict[str, str]:
    return page.evaluate(
        """(id) => Object.fromEntries([...document.querySelectorAll('#' + id +
            ' .vega-bindings [name]')].filter(e => e.type !== 'radio' || e.checked)
            .map(e => [e.name, e.type === 'checkbox' ? String(e.checked) : e.value]))""",
        element,
    )


#: Where on a phone's screen a control, a drawing and the controls' order are measured.
_LAYOUT = """(id) => {
    const root = document.getElementById(id);
    const box = e => { const r = e.getBoundingClientRect();
        return {left: r.left, right: r.right, top: r.top, bottom: r.bottom,
                width: r.width, height: r.height}; };
    const drawn = [...root.querySelectorAll('svg.marks, canvas.marks, .vega-embed > svg, ' +
                                            '.vega-embed > canvas')].map(box);
    const controls = [...root.querySelectorAll('.vega-bindings input, .vega-bindings select')]
        .filter(e => e.offsetParent !== null)
        .map(e => ({name: e.name + (e.type === 'radio' ? '=' + e.value : ''), ...box(e)}));
    const binds = [...root.querySelectorAll('.vega-bind')].filter(e => e.offsetParent !== null)
        .map(e => ({name: (e.querySelector('[name]') || {}).name, ...box(e)}));
    // The top of the first thing drawn (text or line, not the empty background).
    const inked = [...root.querySelectorAll('svg text, svg path, svg line')]
        .filter(e => !e.closest('.background') && e.getAttribute('class') !== 'background')
        .map(box).filter(r => r.width > 0 && r.height > 0);
    const ink_top = inked.length ? Math.min(...inked.map(r => r.top)) : null;
    return {drawn, controls, binds, ink_top};
}"""

#: The most blank space a phone may show between the controls and the first thing drawn.
MAX_PHONE_GAP = 40

#: Scroll the page up past the controls in steps of 16 px, from every control just under the
#: page's sticky header to every control at the bottom of the screen (the reader scrolling up:
#: then the theme shows its "back to top" button), and at each step ask the browser what is on
#: top at the centre of each control on the screen.
_COVERED = """async (id) => {
    const root = document.getElementById(id);
    const settle = () => new Promise(done => requestAnimationFrame(() =>
        requestAnimationFrame(() => setTimeout(done, 10))));
    // The page's bars that stay at the top of the screen (the theme's headers): below them.
    const bars = [0.1, 0.5, 0.9].map(x => document.elementFromPoint(innerWidth * x, 1))
        .map(e => { while (e && !['sticky', 'fixed'].includes(getComputedStyle(e).position)) {
            e = e.parentElement; } return e; })
        .filter(e => e);
    const top = Math.max(0, ...bars.map(e => e.getBoundingClientRect().bottom)) + 4;
    const controls = [...root.querySelectorAll('.vega-bindings input, .vega-bindings select')]
        .filter(e => e.offsetParent !== null);
    if (!controls.length) { return []; }
    const centre = e => { const r = e.getBoundingClientRect();
        return window.scrollY + r.top + r.height / 2; };
    const centres = controls.map(centre);
    const start = Math.max(...centres) - top, end = Math.min(...centres) - innerHeight;
    const found = new Map();
    window.scrollTo(0, start + 100);
    await settle();
    for (let s = start; s >= end; s -= 16) {
        window.scrollTo(0, s);
        await settle();
        for (const control of controls) {
            const label = control.name + (control.type === 'radio' ? '=' + control.value : '');
            if (found.has(label)) { continue; }
            const r = control.getBoundingClientRect();
            const cx = r.left + r.width / 2, cy = r.top + r.height / 2;
            if (cy < top || cy > innerHeight - 1) { continue; }
            const hit = document.elementFromPoint(cx, cy);
            if (hit && (hit === control || control.contains(hit))) { continue; }
            const what = !hit ? 'nothing' : hit.id ? '#' + hit.id : hit.tagName.toLowerCase() +
                (typeof hit.className === 'string' && hit.className ?
                 '.' + hit.className.split(' ')[0] : '');
            const owner = hit && hit.closest('[id]');
            found.set(label, `${label} at y = ${Math.round(cy)} covered by ${what}` +
                      (owner && owner !== hit ? ` (inside #${owner.id})` : ''));
        }
    }
    return [...found.values()];
}"""


def phone_problems(page, name: str) -> list[str]:
    """Explorer ``name`` on a 390 x 844 phone: within the screen, controls above the drawing,
    their values kept through the change of layout, none covered."""
    element = f"explorer-{name}"
    problems: list[str] = []
    values = _control_values(page, element)
    page.set_viewport_size({"width": PHONE_WIDTH, "height": PHONE_HEIGHT})
    # The explorer redraws for the narrower box (posenc.book.explorers.vega.responsive).
    try:
        page.wait_for_function(
            "(id) => document.getElementById(id).dataset.layout === 'narrow'",
            arg=element,
            timeout=15000,
        )
    except Exception:  # noqa: BLE001 (an explorer that never relays itself out is measured as is)
        pass
    page.wait_for_timeout(300)
    layout = page.evaluate(_LAYOUT, element)
    if not layout["drawn"]:
        return [f"{name}: nothing drawn on a phone"]
    if not layout["controls"]:
        problems.append(f"{name}: no controls on a phone")
    outside = [
        f"{kind} {item.get('name', '')} spans x {item['left']:.0f} to {item['right']:.0f}"
        for kind, items in (
            ("drawing", layout["drawn"]),
            ("control", layout["controls"]),
            ("control box", layout["binds"]),
        )
        for item in items
        if item["width"] == 0
        or item["left"] < -0.5
        or item["right"] > PHONE_WIDTH + 0.5
    ]
    if outside:
        problems.append(
            f"{name}: wider than a {PHONE_WIDTH} px phone: " + "; ".join(outside[:4])
        )
    drawing_top = min(d["top"] for d in layout["drawn"])
    below = [c["name"] for c in layout["controls"] if c["bottom"] > drawing_top + 0.5]
    if below:
        problems.append(f"{name}: controls below the top of the drawing: {below}")
    if layout["controls"] and layout["ink_top"] is not None:
        gap = layout["ink_top"] - max(c["bottom"] for c in layout["controls"])
        if gap > MAX_PHONE_GAP:
            problems.append(
                f"{name}: a blank band of {gap:.0f} px between the controls and the "
                f"drawing on a phone (at most {MAX_PHONE_GAP})"
            )
    after = _control_values(page, element)
    changed = {k: (v, after.get(k)) for k, v in values.items() if after.get(k) != v}
    if changed:
        problems.append(f"{name}: the phone's layout lost control values {changed}")
    covered = page.evaluate(_COVERED, element)
    if covered:
        problems.append(f"{name}: controls covered on a phone: " + "; ".join(covered))
    (SCREENSHOTS / "phone").mkdir(parents=True, exist_ok=True)
    # A screenshot of an element taller than the screen left its last lines blank or cut:
    # for the picture only, the phone gets a screen tall enough for the whole explorer.
    height = page.evaluate(f"() => document.getElementById('{element}').offsetHeight")
    page.set_viewport_size(
        {"width": PHONE_WIDTH, "height": max(PHONE_HEIGHT, height + 160)}
    )
    page.wait_for_timeout(300)
    page.locator(f"#{element}").scroll_into_view_if_needed()
    page.locator(f"#{element}").screenshot(
        path=str(SCREENSHOTS / "phone" / f"explorer-{name}.png")
    )
    return problems
