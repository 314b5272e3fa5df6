"""`make portability`: the torch marker, the notebook list, the kernel families it runs, and that
torch in pytest and in the notebook kernels really runs with the requested threads and kernels."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from scripts_module import load_script

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "tests"


def makefile_variable(name: str) -> list[str]:
    text = (ROOT / "Makefile").read_text(encoding="utf-8").replace("\\\n", " ")
    match = re.search(rf"^{name}\s*:?=(.*)$", text, re.M)
    assert match, f"{name} is not set in the Makefile"
    return match.group(1).split()


# ---------------------------------------------------------------- the `torch` marker


MODULE_MARK = re.compile(r"^pytestmark = \[?\s*pytest\.mark\.torch\b", re.M)


def test_a_test_module_is_marked_torch_by_its_own_line_exactly_when_it_uses_torch():
    torch_modules = torch_modules_of_posenc()
    marked = set()
    for path in sorted(TESTS.glob("test_*.py")):
        text = path.read_text(encoding="utf-8")
        has_line = bool(MODULE_MARK.search(text))
        by_hand = "@pytest.mark.torch" in text
        if has_line:
            marked.add(path.stem)
        assert not (has_line and by_hand), f"{path.name}: one way of marking"
        if uses_torch(text, torch_modules):
            assert has_line or by_hand, f"{path.name} uses torch but is not marked"
        else:  # numpy-only modules stay out, or `make portability` reruns everything
            assert not has_line, f"{path.name} is marked torch but does not use it"
    assert {
        "test_precision",
        "test_rope",
        "test_fast_rope",
        "test_torch_rope",
    } <= marked


def test_the_module_line_marks_every_test_of_the_module(tmp_path):
    (tmp_path / "test_marked.py").write_text(
        "import pytest\n\npytestmark = pytest.mark.torch\n\n\ndef test_a():\n    pass\n"
    )
    (tmp_path / "test_plain.py").write_text("def test_b():\n    pass\n")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-m",
            "torch",
            "--co",
            str(tmp_path),
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert "test_marked.py::test_a" in result.stdout, result.stdout
    assert "test_plain" not in result.stdout


def test_a_selection_of_no_torch_tests_fails_instead_of_passing_silently():
    # `pytest -m torch` over modules without torch selects nothing: pytest exits with 5, which
    # scripts/portability.py reports as a failure.
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-m",
            "torch",
            "tests/test_sinusoidal.py",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 5, result.stdout[-2000:]


# ---------------------------------------------------------------- the Makefile target


def test_make_test_runs_portability_after_unit_and_nbval():
    text = (ROOT / "Makefile").read_text(encoding="utf-8")
    test_recipe = re.search(r"^test:.*\n((?:\t.*\n)+)", text, re.M).group(1)
    steps = [line.split() for line in test_recipe.splitlines()]
    order = [
        word
        for step in steps
        for word in step
        if word in {"unit", "nbval", "portability"}
    ]
    assert order == ["unit", "nbval", "portability"], test_recipe
    portability_step = next(step for step in steps if "portability" in step)
    assert "PORTABILITY_COVERED=--skip-covered" in portability_step
    recipe = re.search(r"^portability:.*\n((?:\t.*\n)+)", text, re.M).group(1)
    assert (
        "scripts/portability.py" in recipe
        and "$(TORCH_NOTEBOOKS)" in recipe
        and "-m 'torch and not kernel_independent'" in recipe
    )


def torch_modules_of_posenc() -> set[str]:
    """posenc modules that import torch at their top, directly or through another posenc
    module they import at their top, as dotted names below posenc."""
    imports = {}
    for path in (ROOT / "src" / "posenc").rglob("*.py"):
        parts = path.relative_to(ROOT / "src" / "posenc").with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        text = path.read_text(encoding="utf-8")
        imports[name] = (
            bool(re.search(r"^(import torch\b|from torch\b)", text, re.M)),
            set(re.findall(r"^from posenc\.([\w.]+) import", text, re.M)),
        )
    found = {name for name, (direct, _) in imports.items() if direct}
    while True:
        more = {n for n, (_, uses) in imports.items() if uses & found} - found
        if not more:
            return found
        found |= more


def uses_torch(code: str, torch_modules: set[str]) -> bool:
    if re.search(r"^\s*(import torch\b|from torch\b)", code, re.M):
        return True
    for module in torch_modules:
        parent, _, last = module.rpartition(".")
        if re.search(rf"\bposenc\.{re.escape(module)}\b", code):
            return True
        package = rf"posenc\.{re.escape(parent)}" if parent else "posenc"
        if re.search(
            rf"^\s*from {package} import [^\n]*\b{re.escape(last)}\b", code, re.M
        ):
            return True
    return False


def test_torch_notebooks_lists_every_notebook_that_uses_torch():
    listed = makefile_variable("TORCH_NOTEBOOKS")
    assert all((ROOT / path).is_file() for path in listed), listed
    torch_modules = torch_modules_of_posenc()
    assert {
        "book.precision",
        "torch_rope",
        "fast_rope",
        "bench.forms",
        "bench.clock",
    } <= torch_modules
    for path in sorted((ROOT / "book").glob("*.ipynb")):
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        code = "\n".join(
            "".join(c["source"]) for c in cells if c["cell_type"] == "code"
        )
        name = f"book/{path.name}"
        assert uses_torch(code, torch_modules) == (name in listed), (
            f"{name}: TORCH_NOTEBOOKS is out of date"
        )


# ---------------------------------------------------------------- which kernel families run


def test_plan_runs_every_family_the_processor_has_and_says_why_the_others_are_skipped():
    portability = load_script("portability")
    x86 = {"default": "DEFAULT", "avx2": "AVX2", "avx512": "AVX512"}
    run, skipped = portability.plan("AVX512", x86)
    assert run == ["default", "avx2", "avx512"] and list(skipped) == ["sve256"]
    # without AVX-512 the value is not even tried: torch would trust it and crash
    assert portability.available("AVX2") == (
        ["default", "avx2"],
        {
            "avx512": "this processor lacks it (torch's own choice here is AVX2)",
            "sve256": "this processor lacks it (torch's own choice here is AVX2)",
        },
    )
    run, skipped = portability.plan("AVX2", {"default": "DEFAULT", "avx2": "AVX2"})
    assert run == ["default", "avx2"] and set(skipped) == {"avx512", "sve256"}
    # arm64 with and without 256-bit SVE
    assert portability.plan("SVE256", {"default": "DEFAULT", "sve256": "SVE256"})[
        0
    ] == ["default", "sve256"]
    assert portability.plan("DEFAULT", {"default": "DEFAULT"})[0] == ["default"]
    # a family this script does not name (a newer torch's) still runs, above default
    run, skipped = portability.plan(
        "SVE128", {"default": "DEFAULT", "sve128": "SVE128"}
    )
    assert run == ["default", "sve128"] and set(skipped) == {"avx2", "avx512", "sve256"}
    # a value torch ignores (it warns and keeps its own choice) is skipped, with the reason
    run, skipped = portability.plan("AVX512", dict(x86, avx2="AVX512"))
    assert run == ["default", "avx512"] and "does not honour" in skipped["avx2"]


# ---------------------------------------------------------------- torch follows the environment


@pytest.mark.torch
def test_torch_in_pytest_runs_with_the_requested_threads_and_kernels():
    import torch

    from posenc.book.notebook import torch_threads_from_environment

    if "OMP_NUM_THREADS" not in os.environ and "ATEN_CPU_CAPABILITY" not in os.environ:
        pytest.skip(
            "neither OMP_NUM_THREADS nor ATEN_CPU_CAPABILITY is set (make sets OMP_NUM_THREADS)"
        )
    if "OMP_NUM_THREADS" in os.environ:
        assert torch.get_num_threads() == torch_threads_from_environment()
    if "ATEN_CPU_CAPABILITY" in os.environ:
        assert (
            torch.backends.cpu.get_cpu_capability()
            == os.environ["ATEN_CPU_CAPABILITY"].upper()
        )


@pytest.mark.torch
def test_notebook_kernels_run_with_the_requested_threads_and_kernels():
    """A kernel started as nbval starts it, set up as every torch chapter's first cell does."""
    import torch
    from jupyter_client.manager import start_new_kernel

    from posenc.book.notebook import torch_threads_from_environment

    code = (
        "import torch; from posenc.book import setup_notebook; setup_notebook(seed=0, use_torch=True); "
        "print(torch.get_num_threads(), torch.backends.cpu.get_cpu_capability())"
    )
    manager, client = start_new_kernel(kernel_name="python3")
    try:
        printed = []
        client.execute_interactive(
            code,
            timeout=120,
            output_hook=lambda msg: printed.append(msg["content"].get("text", "")),
        )
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)
    threads, capability = "".join(printed).split()
    assert int(threads) == torch_threads_from_environment()
    assert (
        capability == torch.backends.cpu.get_cpu_capability()
    )  # this process has the same environment


@pytest.mark.torch
def test_setup_notebook_takes_its_torch_threads_from_omp_num_threads(monkeypatch):
    import torch

    from posenc.book.notebook import setup_notebook, torch_threads_from_environment

    before = torch.get_num_threads()
    try:
        for value, expected in [("2", 2), ("1", 1), ("3,1", 3), ("", 1)]:
            monkeypatch.setenv("OMP_NUM_THREADS", value)
            assert torch_threads_from_environment() == expected
            setup_notebook(seed=0, use_torch=True)
            assert torch.get_num_threads() == expected
        monkeypatch.delenv("OMP_NUM_THREADS")
        assert torch_threads_from_environment() == 1
        monkeypatch.setenv("OMP_NUM_THREADS", "2")
        setup_notebook(
            seed=0, use_torch=True, torch_threads=1
        )  # an explicit count wins
        assert torch.get_num_threads() == 1
        for bad in ("0", "two", "-1"):
            monkeypatch.setenv("OMP_NUM_THREADS", bad)
            with pytest.raises(ValueError, match="OMP_NUM_THREADS"):
                torch_threads_from_environment()
    finally:
        torch.set_num_threads(before)
