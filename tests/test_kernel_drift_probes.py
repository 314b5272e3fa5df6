"""scripts/measure_kernel_drift.py keys its probes to cell ids and fails loudly on a rename."""

import copy
import json
from pathlib import Path

import pytest
from scripts_module import load_script

ROOT = Path(__file__).resolve().parents[1]


def cells_of(path: str) -> list:
    return json.loads((ROOT / path).read_text(encoding="utf-8"))["cells"]


def test_every_probe_finds_its_cell_and_the_names_it_reads():
    script = load_script("measure_kernel_drift")
    assert set(script.NOTEBOOK_PROBES) == set(script.NOTEBOOKS)
    for path in script.NOTEBOOK_PROBES:
        script.check_probes(path, cells_of(path))


def test_a_renamed_variable_or_a_missing_cell_is_an_error():
    script = load_script("measure_kernel_drift")
    path = "book/appendix_errata.ipynb"
    cell_id, description, _, code = script.NOTEBOOK_PROBES[path][1]
    read = sorted(script._read(code))
    assert read, "the probe reads a name computed by the notebook"
    cells = copy.deepcopy(cells_of(path))
    for cell in cells:
        if cell["cell_type"] == "code":
            source = "".join(cell["source"])
            cell["source"] = [source.replace(read[0], read[0] + "_renamed")]
    with pytest.raises(ValueError, match=f"reads .*{read[0]}"):
        script.check_probes(path, cells)
    gone = [cell for cell in cells_of(path) if cell.get("id") != cell_id]
    with pytest.raises(ValueError, match=f"no cell with id {cell_id}"):
        script.check_probes(path, gone)
