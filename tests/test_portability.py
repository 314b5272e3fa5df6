"""The `torch` marker, and that torch in pytest and in the notebook kernels really runs with the
threads and kernels the environment asks for (OMP_NUM_THREADS, ATEN_CPU_CAPABILITY)."""

import importlib
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import module_reaches_torch

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "tests"


# ---------------------------------------------------------------- the `torch` marker


def test_every_test_module_that_imports_torch_is_marked():
    imports_torch = re.compile(r"^(import torch\b|from torch\b)|importorskip\(\"torch\"\)", re.M)  # at the top
    marked, unmarked = set(), set()
    for path in sorted(TESTS.glob("test_*.py")):
        module = importlib.import_module(path.stem)
        (marked if module_reaches_torch(module) else unmarked).add(path.stem)
        if imports_torch.search(path.read_text(encoding="utf-8")):
            assert path.stem in marked, f"{path.name} imports torch but is not marked"
    # through a posenc module that imports torch (posenc.precision), without importing torch itself
    assert "test_precision" in marked
    assert {"test_rope", "test_rope_golden", "test_fast_rope", "test_torch_rope", "test_benchmark"} <= marked
    # numpy-only modules stay out
    assert {"test_sinusoidal", "test_scaling", "test_shift_matrix", "test_workflows", "test_book"} <= unmarked


def test_a_selection_of_no_torch_tests_fails_instead_of_passing_silently():
    # `pytest -m torch` over modules without torch selects nothing: pytest exits with 5.
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-m", "torch", "tests/test_sinusoidal.py"],
                            cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 5, result.stdout[-2000:]


# ---------------------------------------------------------------- torch follows the environment


@pytest.mark.torch
def test_torch_in_pytest_runs_with_the_requested_threads_and_kernels():
    import torch

    from posenc.notebook import torch_threads_from_environment

    if "OMP_NUM_THREADS" not in os.environ and "ATEN_CPU_CAPABILITY" not in os.environ:
        pytest.skip("neither OMP_NUM_THREADS nor ATEN_CPU_CAPABILITY is set (make sets OMP_NUM_THREADS)")
    if "OMP_NUM_THREADS" in os.environ:
        assert torch.get_num_threads() == torch_threads_from_environment()
    if "ATEN_CPU_CAPABILITY" in os.environ:
        assert torch.backends.cpu.get_cpu_capability() == os.environ["ATEN_CPU_CAPABILITY"].upper()


@pytest.mark.torch
def test_notebook_kernels_run_with_the_requested_threads_and_kernels():
    """A kernel started as nbval starts it, set up as every torch chapter's first cell does."""
    import torch
    from jupyter_client.manager import start_new_kernel

    from posenc.notebook import torch_threads_from_environment

    code = ("import posenc, torch; posenc.setup_notebook(seed=0, use_torch=True); "
            "print(torch.get_num_threads(), torch.backends.cpu.get_cpu_capability())")
    manager, client = start_new_kernel(kernel_name="python3")
    try:
        printed = []
        client.execute_interactive(code, timeout=120,
                                   output_hook=lambda msg: printed.append(msg["content"].get("text", "")))
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)
    threads, capability = "".join(printed).split()
    assert int(threads) == torch_threads_from_environment()
    assert capability == torch.backends.cpu.get_cpu_capability()   # this process has the same environment


@pytest.mark.torch
def test_setup_notebook_takes_its_torch_threads_from_omp_num_threads(monkeypatch):
    import torch

    import posenc
    from posenc.notebook import torch_threads_from_environment

    before = torch.get_num_threads()
    try:
        for value, expected in [("2", 2), ("1", 1), ("3,1", 3), ("", 1)]:
            monkeypatch.setenv("OMP_NUM_THREADS", value)
            assert torch_threads_from_environment() == expected
            posenc.setup_notebook(seed=0, use_torch=True)
            assert torch.get_num_threads() == expected
        monkeypatch.delenv("OMP_NUM_THREADS")
        assert torch_threads_from_environment() == 1
        monkeypatch.setenv("OMP_NUM_THREADS", "2")
        posenc.setup_notebook(seed=0, use_torch=True, torch_threads=1)   # an explicit count wins
        assert torch.get_num_threads() == 1
        for bad in ("0", "two", "-1"):
            monkeypatch.setenv("OMP_NUM_THREADS", bad)
            with pytest.raises(ValueError, match="OMP_NUM_THREADS"):
                torch_threads_from_environment()
    finally:
        torch.set_num_threads(before)
