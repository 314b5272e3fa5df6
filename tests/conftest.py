import os
from pathlib import Path

import pytest
from hypothesis import settings

ROOT = Path(__file__).resolve().parents[1]

# Deterministic property tests: the same examples on every run, no example database.
settings.register_profile(
    "book", derandomize=True, database=None, deadline=None, max_examples=200
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "book"))


@pytest.fixture
def root() -> Path:
    return ROOT


# The `torch` marker: `make portability` re-runs the tests marked `torch` under every CPU
# kernel family torch offers (`pytest -m torch`). A test module that uses torch says so in
# one line at its top, `pytestmark = pytest.mark.torch`; a module that uses torch in a few
# tests only marks those (`@pytest.mark.torch`). tests/test_portability.py checks the lines.
