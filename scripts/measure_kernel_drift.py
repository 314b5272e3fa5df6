"""How far torch's stored-number checks move between CPU kernel families and thread counts.

Runs every configuration `make portability` uses (ATEN_CPU_CAPABILITY = each family this
processor has, 1 and 2 threads) and prints two tables:

* the notebooks that use torch, executed in full (nbclient): for each check that compares a
  fresh torch or float32 computation with a stored number, a printed digit or a threshold, the
  largest |fresh - stored| over all configurations and the largest spread between them (the
  drift); printed numbers also get their distance to the nearest rounding boundary of their
  format. Every text output is compared with the stored one, as nbval does.
* the unit tests marked torch, run with a plugin (this file, -p measure_kernel_drift) that
  records every numpy assert_allclose and torch assert_close: per call site and tolerance, the
  largest |actual - desired| and how much it moves between configurations.

    .venv/bin/python scripts/measure_kernel_drift.py          # about 3 minutes on 2 cores
    .venv/bin/python scripts/measure_kernel_drift.py --notebook book/05b_context_extension_experiment.ipynb

How the tolerances were set from it (issue 11): a check must allow the largest |fresh - stored|
measured here plus ten times the largest drift measured here, the margin for processors not
measured (arm64, other x86); where nothing moved, plus one unit in the last place of the
computation's dtype at the size of the compared values, the least another processor can change.
A tolerance more than ten times that is tightened to about ten times the measured difference.
"""

from __future__ import annotations

import argparse
import ast
import builtins
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
import portability  # noqa: E402  (scripts/portability.py: which kernel families this processor has)

NOTEBOOKS = [
    "book/04a_rope_in_production.ipynb",
    "book/appendix_errata.ipynb",
    "book/appendix_performance.ipynb",
]
MARKER = "KERNEL-DRIFT-PROBE "

# Each probe: the id of the code cell whose check it measures, a description, the tolerance the check
# uses, and python code run in the notebook's kernel right after that cell (in a copy of its
# namespace, so nothing leaks into later cells), setting `probe_values` (fresh numbers) and optionally
# `probe_stored` (what they are compared with) and `probe_printed` (a format: the values appear in the
# stored output at that format). `check_probes` fails, naming the probe, when a cell id is gone or a
# name the probe reads is no longer assigned in or before its cell.
NOTEBOOK_PROBES = {
    "book/04a_rope_in_production.ipynb": [
        (
            "0da840db",
            "float32 RoPE vs transformers (golden)",
            "atol 2e-6 (assert)",
            """
case = golden["hf_half_llama_rotary_float32"]
probe_values = np.concatenate([apply_rope(torch.tensor(case[n], dtype=torch.float32), case["positions"], layout="half")
                         .double().numpy().ravel() for n in ("q", "k")])
probe_stored = np.concatenate([np.array(case[n + "_embed"]).ravel() for n in ("q", "k")])
""",
        ),
        (
            "7720cd69",
            "RotaryEmbedding vs apply_rope, float32",
            "atol 1e-6 (assert, printed)",
            """
probe_values = [float(torch.max(torch.abs(r - apply_rope(o, torch.arange(24), layout="half"))))
          for r, o in ((q_rot, q_t), (k_rot, k_t))]
probe_stored = [0.0, 0.0]
""",
        ),
        (
            "7720cd69",
            "torch.randn float32 (seeded q_t, k_t)",
            "not compared (input of the line above)",
            """
probe_values = torch.cat([q_t.ravel(), k_t.ravel()]).double().numpy()
""",
        ),
        (
            "50e833e0",
            "printed angle errors (float32, bfloat16)",
            "printed .4f",
            """
probe_values = [errors["float32"][-1], errors["bfloat16"][-1]]
probe_printed = ".4f"
""",
        ),
        (
            "50e833e0",
            "first position over 1 rad (bfloat16), over 1e-5 (float32)",
            "discrete: argmax of a threshold",
            """
i_bf, i_32 = int(np.argmax(errors["bfloat16"] > 1.0)), int(np.argmax(errors["float32"] > 1e-5))
probe_values = [errors["bfloat16"][i_bf - 1] - 1.0, errors["bfloat16"][i_bf] - 1.0,
          errors["float32"][i_32 - 1] / 1e-5 - 1, errors["float32"][i_32] / 1e-5 - 1]
""",
        ),
        (
            "50e833e0",
            "numpy float32 apply_rope at 2e6 vs float64",
            "< 1e-5 (assert)",
            """
probe_values = [gap]
probe_stored = [0.0]
""",
        ),
    ],
    "book/appendix_errata.ipynb": [
        (
            "3a1f6c20",
            "torch float64 formulas vs apply_rope",
            "atol 1e-12 (assert)",
            """
probe_values = [float((matched[l] - posenc.apply_rope(x, np.arange(x.shape[0]), layout=l)).abs().max()) for l in matched]
probe_stored = [0.0, 0.0]
""",
        ),
        (
            "3a1f6c20",
            "printed norm change (float64 torch)",
            "printed .4f, > 0.1",
            """
probe_values = [norm_change]
probe_printed = ".4f"
""",
        ),
    ],
    "book/appendix_performance.ipynb": [
        (
            "940cdfb5",
            "transformers' cos vs cos(float32 angles)",
            "atol 3e-7 (assert, printed; 1e-6 asserted too)",
            """
probe_values = np.cos(angles32).ravel()
probe_stored = hf_cos.ravel()
""",
        ),
        (
            "f35357d0",
            "apply_rope vs numpy float64 (float32 cases)",
            "< 2e-6 (assert)",
            """
probe_values = [check(t, l)[1] for n, t in cases.items() if n != "bfloat16" for l in ("interleaved", "half")]
probe_stored = [0.0] * len(probe_values)
""",
        ),
        (
            "f35357d0",
            "apply_rope vs numpy float64 (bfloat16)",
            "< 0.05 (assert)",
            """
probe_values = [check(cases["bfloat16"], l)[1] for l in ("interleaved", "half")]
probe_stored = [0.0, 0.0]
""",
        ),
        (
            "019a9c26",
            "printed error table (torch float32/bf16/fp16)",
            "printed .0e, '< 1e-6' below 1e-6",
            """
probe_values = [e[c] for errs in (cos_errors, rotation_errors) for e in errs.values() for c in columns]
probe_values = [v for v in probe_values if not np.isnan(v) and v >= 1e-6]
probe_printed = ".0e"
""",
        ),
        (
            "019a9c26",
            "values printed as '< 1e-6'",
            "threshold 1e-6 (printed)",
            """
probe_values = [e[c] for errs in (cos_errors, rotation_errors) for e in errs.values() for c in columns]
probe_values = [v for v in probe_values if not np.isnan(v) and v < 1e-6]
probe_stored = [0.0] * len(probe_values)
""",
        ),
        (
            "019a9c26",
            "float64 angles, float32 values (all m)",
            "< 2e-7 (assert)",
            """
probe_values = rotation_errors["float64 angles, float32 values"]
probe_stored = np.zeros_like(probe_values)
""",
        ),
        (
            "019a9c26",
            "float64 angles, bfloat16 values",
            "in (1e-3, 1e-2) (assert)",
            """
probe_values = rotation_errors["float64 angles, bfloat16 values"]
""",
        ),
        (
            "f37dd093",
            "autograd gradient = R_(-m) w (float64)",
            "< 1e-12 (printed True)",
            """
probe_values = []
for layout in ("interleaved", "half"):
    g, = torch.autograd.grad((posenc.apply_rope(x_ex, pos_ex, layout=layout) * w_ex).sum(), x_ex)
    probe_values.append(float((g - posenc.apply_rope(w_ex, -pos_ex, layout=layout)).abs().max()))
probe_stored = [0.0, 0.0]
""",
        ),
        (
            "df4b2617",
            "float32 angle error around 1e-3 at the first bad m",
            "discrete: threshold 1e-3",
            """
probe_values = [error_1[first_bad - 2], error_1[first_bad - 1]]
""",
        ),
        (
            "3493dfc6",
            "bytes moved / floor's",
            "printed .2f, ranges (assert)",
            """
probe_values = list(moved.values())
probe_printed = ".2f"
""",
        ),
    ],
}

PROBE_CELL = """
import json as _json, numpy as _np
_probe = dict(globals())
exec(%r, _probe)
_out = {"values": _np.asarray(_probe["probe_values"], dtype=float).ravel().tolist()}
if "probe_stored" in _probe: _out["stored"] = _np.asarray(_probe["probe_stored"], dtype=float).ravel().tolist()
if "probe_printed" in _probe: _out["printed"] = _probe["probe_printed"]
print(%r + _json.dumps(_out))
del _probe, _out, _json, _np
"""


def _assigned(source: str) -> set[str]:
    """Names a cell's code assigns, defines or imports (IPython's % and ! lines left out)."""
    lines = [
        line for line in source.splitlines() if line.lstrip()[:1] not in ("%", "!")
    ]
    names = set()
    for node in ast.walk(ast.parse("\n".join(lines))):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {
                (alias.asname or alias.name).split(".")[0] for alias in node.names
            }
    return names


def _read(code: str) -> set[str]:
    """Names the probe reads and does not assign itself (builtins aside)."""
    loaded = {
        node.id
        for node in ast.walk(ast.parse(code))
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)
    }
    return loaded - _assigned(code) - set(dir(builtins))


def check_probes(path: str, cells: list) -> None:
    """ValueError naming the probe if its cell id is not in ``cells`` (the notebook's) or a
    name it reads is assigned in no code cell up to and including that cell."""
    ids = [cell.get("id") for cell in cells]
    for cell_id, description, _, code in NOTEBOOK_PROBES.get(path, []):
        if cell_id not in ids:
            raise ValueError(
                f"{path}: probe {description!r}: no cell with id {cell_id}"
            )
        before = cells[: ids.index(cell_id) + 1]
        known = set().union(
            *(
                _assigned("".join(c["source"]))
                for c in before
                if c["cell_type"] == "code"
            )
        )
        missing = _read(code) - known
        if missing:
            raise ValueError(
                f"{path}: probe {description!r} reads {sorted(missing)}, which no code cell "
                f"up to cell {cell_id} assigns (renamed?)"
            )


def probe_name(path: str, cell_id: str, description: str) -> str:
    return f"{Path(path).stem} cell {cell_id}: {description}"


# ---------------------------------------------------------------- unit tests: every tolerance check, recorded
# Loaded into `pytest -m torch` as a plugin (-p measure_kernel_drift): it wraps numpy's
# assert_allclose and torch's assert_close and records, per call site in tests/, the values
# checked, what they were compared with, and the tolerance. Nothing else changes.


def _as_float_array(value) -> np.ndarray:
    if hasattr(value, "detach"):  # a torch tensor
        value = value.detach().cpu()
        value = (value if value.is_complex() else value.double()).numpy()
    array = np.asarray(value)
    if np.iscomplexobj(array):
        array = np.stack([array.real, array.imag], axis=-1)
    return array.astype(float).ravel()


def pytest_configure(config):
    out = os.environ.get("KERNEL_DRIFT_OUT")
    if not out:
        return
    import inspect

    import torch

    records: dict[str, list] = {}

    def recorder(original, kind):
        def wrapped(actual, desired, *args, **kwargs):
            frame = next(
                (f for f in inspect.stack()[1:] if "/tests/" in f.filename), None
            )
            if frame is not None:
                try:
                    a, d = (
                        _as_float_array(actual),
                        np.broadcast_to(
                            _as_float_array(desired), _as_float_array(actual).shape
                        ),
                    )
                    if kind == "numpy":
                        rtol = kwargs.get("rtol", args[0] if args else 1e-7)
                        atol = kwargs.get("atol", args[1] if len(args) > 1 else 0.0)
                    else:
                        rtol, atol = kwargs.get("rtol"), kwargs.get("atol")
                        if rtol is None:
                            rtol, atol = ("default", "default")
                    site = f"{Path(frame.filename).name}:{frame.lineno} atol={atol} rtol={rtol}"
                    records.setdefault(site, []).append(
                        {"values": a.tolist(), "desired": d.tolist()}
                    )
                # a value the recorder cannot read is simply not recorded
                except Exception:
                    pass
            return original(actual, desired, *args, **kwargs)

        return wrapped

    np.testing.assert_allclose = recorder(np.testing.assert_allclose, "numpy")
    torch.testing.assert_close = recorder(torch.testing.assert_close, "torch")
    config._kernel_drift = (out, records)


def pytest_unconfigure(config):
    if hasattr(config, "_kernel_drift"):
        out, records = config._kernel_drift
        Path(out).write_text(json.dumps(records))


def unit_report(runs: list[dict]) -> None:
    """Per assertion call site: its tolerance, the largest |actual - desired| over all configurations,
    and how much that error moves between configurations (several tests draw unseeded inputs, so
    the error, not the raw values, is what can be compared from run to run)."""
    print(
        f"\n{'unit-test call site (torch-marked tests), tolerance':62s} {'calls':>5s} "
        f"{'max|actual-desired|':>19s} {'error spread':>14s}"
    )
    for site in sorted(runs[0]):
        calls = [run.get(site, []) for run in runs]
        if any(len(c) != len(calls[0]) for c in calls):
            print(f"{site:62s} the number of calls differs between configurations")
            continue
        # (configurations, calls)
        errors = np.array(
            [
                [
                    float(
                        np.max(
                            np.abs(np.array(c["values"]) - np.array(c["desired"])),
                            initial=0.0,
                        )
                    )
                    for c in run
                ]
                for run in calls
            ]
        )
        spread = float(np.max(errors.max(axis=0) - errors.min(axis=0), initial=0.0))
        print(
            f"{site:62s} {len(calls[0]):5d} {errors.max(initial=0.0):19.3g} {spread:14.3g}"
        )


def text_outputs(cell) -> str:
    parts = []
    for output in cell.get("outputs", []):
        if output.get("output_type") == "stream":
            parts.append(output["text"])
        elif "data" in output and "text/plain" in output["data"]:
            parts.append(output["data"]["text/plain"])
    text = "".join(parts)
    text = re.sub(r"0x[0-9a-fA-F]{6,16}", "0xADDRESS", text)
    return re.sub(r"<Figure size [^>]*>", "<Figure>", text)


def notebook_probes(path: str) -> dict:
    import nbclient
    import nbformat

    nb = nbformat.read(ROOT / path, as_version=4)
    check_probes(path, nb.cells)
    stored = {c.id: text_outputs(c) for c in nb.cells if c.cell_type == "code"}
    probes = NOTEBOOK_PROBES.get(path, [])
    # each probe right after its cell (inserted from the last, so earlier places stay put)
    ids = [cell.id for cell in nb.cells]
    places = sorted(
        ((ids.index(cell_id), k) for k, (cell_id, *_) in enumerate(probes)),
        reverse=True,
    )
    for place, k in places:
        cell_id, description, _, code = probes[k]
        name = probe_name(path, cell_id, description)
        probe_cell = nbformat.v4.new_code_cell(
            PROBE_CELL % (code, MARKER + name + "\t")
        )
        probe_cell.metadata["probe"] = True
        nb.cells.insert(place + 1, probe_cell)
    nbclient.NotebookClient(
        nb,
        kernel_name="python3",
        timeout=900,
        resources={"metadata": {"path": str((ROOT / path).parent)}},
    ).execute()
    by_id = {c.id: c for c in nb.cells if c.cell_type == "code"}
    result = {
        "changed cells": [
            cell_id
            for cell_id, text in stored.items()
            if "NBVAL_IGNORE_OUTPUT" not in "".join(by_id[cell_id].source)
            and text_outputs(by_id[cell_id]) != text
        ]
    }
    tolerance = {
        probe_name(path, cell_id, description): tol
        for cell_id, description, tol, _ in probes
    }
    for cell in nb.cells:
        if not cell.metadata.get("probe"):
            continue
        for line in text_outputs(cell).splitlines():
            if line.startswith(MARKER):
                name, data = line[len(MARKER) :].split("\t", 1)
                result[name] = dict(json.loads(data), tolerance=tolerance[name])
    return result


def probe(notebooks: list[str]) -> None:
    import torch

    out = {
        "capability": torch.backends.cpu.get_cpu_capability(),
        "threads": torch.get_num_threads(),
        "checks": {},
        "notebooks": {},
    }
    for path in notebooks:
        start = time.monotonic()
        result = notebook_probes(path)
        out["notebooks"][path] = {
            "changed cells": result.pop("changed cells"),
            "seconds": time.monotonic() - start,
        }
        out["checks"].update(result)
    print(MARKER + json.dumps(out))


def distance_to_rounding(value: float, fmt: str) -> float:
    """Distance from value to the nearest boundary where its text at ``fmt`` changes."""
    if fmt.endswith("f"):
        step = 10.0 ** -int(fmt[1:-1])
    else:  # ".Ne": N digits after the point, relative to the leading power of ten
        exponent = math.floor(math.log10(abs(value))) if value else 0
        step = 10.0 ** (exponent - int(fmt[1:-1]))
    frac = value / step - math.floor(value / step)
    return abs(frac - 0.5) * step


def report(runs: list[dict]) -> None:
    names = list(runs[0]["checks"])
    print(
        f"\n{'check':72s} {'tolerance':36s} {'max|fresh-stored|':>17s} {'drift (spread)':>14s}  note"
    )
    for name in names:
        per_run = [np.array(r["checks"][name]["values"]) for r in runs]
        info = runs[0]["checks"][name]
        if any(v.shape != per_run[0].shape for v in per_run):
            print(f"{name:72s} shapes differ between configurations")
            continue
        spread = max(
            float(np.max(np.abs(v - per_run[0]), initial=0.0)) for v in per_run
        )
        relative = max(
            float(
                np.max(
                    np.abs(v - per_run[0]) / np.maximum(np.abs(per_run[0]), 1e-300),
                    initial=0.0,
                )
            )
            for v in per_run
        )
        versus = ""
        if "stored" in info:
            stored = np.array(info["stored"])
            versus = f"{max(float(np.max(np.abs(v - stored), initial=0.0)) for v in per_run):.3g}"
        note = f"rel {relative:.2g}"
        if "printed" in info:
            closest = min(
                distance_to_rounding(float(x), info["printed"]) for x in per_run[0]
            )
            note += f"; nearest rounding boundary {closest:.3g} away"
        print(
            f"{name:72s} {info['tolerance']:36s} {versus:>17s} {spread:14.3g}  {note}"
        )
    print()
    for path in runs[0]["notebooks"]:
        changed = {
            f"{r['capability']}/{r['threads']}": r["notebooks"][path]["changed cells"]
            for r in runs
        }
        print(
            f"{path}: cells (by id) whose text output differs from the stored one: {changed}"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--probe",
        action="store_true",
        help="(internal) measure in this process's configuration",
    )
    parser.add_argument(
        "--notebook",
        action="append",
        default=[],
        metavar="NOTEBOOK",
        help="a torch notebook to execute (default: the three of issue 11; 05b is being rewritten)",
    )
    parser.add_argument(
        "--json", type=Path, help="also write every measured value here"
    )
    parser.add_argument(
        "--ignore",
        action="append",
        default=[],
        metavar="TEST_FILE",
        help="a torch test file to leave out of the unit-test run",
    )
    args = parser.parse_args()
    notebooks = args.notebook or NOTEBOOKS
    if args.probe:
        probe(notebooks)
        return 0

    auto = portability.torch_capability(None)
    have, _ = portability.available(auto)
    capabilities, skipped = portability.plan(
        auto, {v: portability.torch_capability(v) for v in have}
    )
    print(f"kernel families: {capabilities}; skipped: {skipped}")
    runs, unit_runs = [], []
    scratch = tempfile.mkdtemp(prefix="kernel-drift-")
    for capability in capabilities:
        for threads in portability.THREADS:
            env = dict(
                os.environ,
                ATEN_CPU_CAPABILITY=capability,
                OMP_NUM_THREADS=str(threads),
                MKL_NUM_THREADS=str(threads),
                PYTHONHASHSEED="0",
                MPLBACKEND="module://matplotlib_inline.backend_inline",
            )
            start = time.monotonic()
            command = [sys.executable, __file__, "--probe"] + [
                a for nb in notebooks for a in ("--notebook", nb)
            ]
            result = subprocess.run(
                command, env=env, capture_output=True, text=True, cwd=ROOT
            )
            line = next(
                (x for x in result.stdout.splitlines() if x.startswith(MARKER)), None
            )
            if line is None:
                print(result.stdout[-5000:], result.stderr[-5000:])
                return 1
            run = json.loads(line[len(MARKER) :])
            runs.append(run)
            unit_out = Path(scratch) / f"unit-{capability}-{threads}.json"
            unit = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "pytest",
                    "tests",
                    "--ignore=tests/browser",
                    "-m",
                    "torch",
                    "-q",
                    "-p",
                    "measure_kernel_drift",
                ]
                + [f"--ignore={t}" for t in args.ignore],
                env=dict(
                    env,
                    KERNEL_DRIFT_OUT=str(unit_out),
                    PYTHONPATH=str(Path(__file__).resolve().parent),
                ),
                capture_output=True,
                text=True,
                cwd=ROOT,
            )
            if unit.returncode != 0:
                print(unit.stdout[-5000:], unit.stderr[-3000:])
            unit_runs.append(json.loads(unit_out.read_text()))
            unit_out.unlink()
            print(
                f"{capability} x {threads} thread(s): torch reports {run['capability']}, "
                f"{run['threads']} thread(s); {time.monotonic() - start:.0f} s; unit tests exit {unit.returncode}"
            )
            assert run["capability"] == capability.upper() and run["threads"] == threads
    os.rmdir(scratch)
    if args.json:
        args.json.write_text(json.dumps({"probes": runs, "unit": unit_runs}))
    report(runs)
    unit_report(unit_runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
