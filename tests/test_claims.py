"""Chapter 6's claims table on the stored runs and the holdout seeds (reads torch-made results)."""

from pathlib import Path

import pytest

from posenc.experiments import claims
from posenc.experiments import context_extension as ce

pytestmark = pytest.mark.torch

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "book/data/context_extension"


def test_the_stored_runs_give_the_verdicts_chapter_6_states():
    rows = {row["key"]: row for row in claims.verdicts(ce.read_all_results(DATA))}
    assert set(rows) == {claim.key for claim in claims.CLAIMS}
    for key in (
        "every-method-beats-none",
        "ntk-same-as-dynamic",
        "finetune-narrows-gap",
    ):
        assert rows[key]["verdict"] == "shown"
    for key in ("yarn-beats-by-parts", "yarn-same-as-by-parts"):
        assert rows[key]["verdict"] == "not shown"


def test_substitution_refuses_a_holdout_seed_the_page_already_has():
    results = ce.read_all_results(DATA)
    with pytest.raises(ValueError, match="holdout seeds must differ"):
        claims.substitutions(results, {0: results[0]})


def test_every_claim_has_a_unique_key_and_a_test():
    keys = [claim.key for claim in claims.CLAIMS]
    assert len(keys) == len(set(keys))
    assert all(claim.test != "mixed" and claim.comparisons for claim in claims.CLAIMS)
