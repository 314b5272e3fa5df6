import os
from pathlib import Path

import pytest
from hypothesis import settings

ROOT = Path(__file__).resolve().parents[1]

# Deterministic property tests: the same examples on every run, no example database.
settings.register_profile("book", derandomize=True, database=None, deadline=None, max_examples=200)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "book"))


@pytest.fixture
def root() -> Path:
    return ROOT
