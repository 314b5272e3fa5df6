import os
import sys
import types
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


# ---------------------------------------------------------------- the `torch` marker
# `make portability` re-runs the tests marked `torch` under every CPU kernel family torch offers
# (`pytest -m torch`). A test module is marked when it reaches torch: it imports torch (or
# anything from it), or a posenc module, function or class whose module imports torch at its
# top (posenc.book.precision, posenc.fast_rope, posenc.torch_rope, ...). A test that imports torch
# inside its body is marked by hand (`@pytest.mark.torch`).


def _is_torch(module_name: str) -> bool:
    return module_name == "torch" or module_name.startswith("torch.")


def _reaches_torch(value: object) -> bool:
    if isinstance(value, types.ModuleType):
        name, module = value.__name__, value
    else:
        try:
            name = value.__module__
        except Exception:  # objects whose attribute lookup fails reach nothing
            return False
        if not isinstance(name, str):
            return False
        module = sys.modules.get(name)
    if _is_torch(name):
        return True
    if not name.startswith("posenc.") or module is None:
        return False
    torch_global = vars(module).get("torch")
    return isinstance(torch_global, types.ModuleType) and _is_torch(
        torch_global.__name__
    )


def module_reaches_torch(module: types.ModuleType) -> bool:
    """Whether a test module uses torch (directly, or through a posenc module that imports it)."""
    return any(_reaches_torch(value) for value in vars(module).values())


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects anything
def pytest_collection_modifyitems(config, items):
    verdicts: dict[str, bool] = {}
    for item in items:
        module = getattr(item, "module", None)
        if module is None:
            continue
        if module.__name__ not in verdicts:
            verdicts[module.__name__] = module_reaches_torch(module)
        if verdicts[module.__name__]:
            item.add_marker(pytest.mark.torch)
