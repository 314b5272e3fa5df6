"""Other roads' portable re-check: fresh scores of the committed checkpoints agree with the
stored results, and a changed stored answer or loss is caught."""

import json
import shutil
from pathlib import Path

import pytest

from posenc.experiments import roads_recheck

ROOT = Path(__file__).resolve().parents[1] / "book" / "data" / "other_roads"

pytestmark = [pytest.mark.torch]


def _copy(tmp_path: Path, task: str, name: str) -> Path:
    source = ROOT / task / name / "seed_0"
    target = tmp_path / task / name / "seed_0"
    shutil.copytree(source, target)
    return target / "results.json"


def test_a_stored_passkey_chunk_is_reproduced_and_a_change_is_caught(tmp_path):
    path = _copy(tmp_path, "passkey", "alibi")
    row = roads_recheck.recheck_passkey_road(tmp_path, "alibi")
    assert row["answers"] == 128 and row["disagree"] == 0
    assert row["loss_change"] <= roads_recheck.ROADS_LOSS_RTOL
    results = json.loads(path.read_text())
    (entry,) = [
        s
        for s in results["settings"]
        if (s["model"], s["method"], s["multiple"]) == ("base", "none", 16)
    ]
    chunk = entry["chunks"][0]
    chunk["correct"] = ("0" if chunk["correct"][0] == "1" else "1") + chunk["correct"][
        1:
    ]
    chunk["loss_sum"] *= 1.001
    path.write_text(json.dumps(results))
    changed = roads_recheck.recheck_passkey_road(tmp_path, "alibi")
    assert changed["disagree"] == 1
    assert changed["loss_change"] > roads_recheck.ROADS_LOSS_RTOL


def test_a_stored_text_window_is_reproduced(tmp_path):
    _copy(tmp_path, "text", "t5")
    row = roads_recheck.recheck_text_road(tmp_path, "t5")
    assert row["change"] < roads_recheck.ROADS_TEXT_TOLERANCE
