"""book/_ext/stored_outputs.py: the strict build renders stored outputs only when asked."""

import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "book" / "_ext"))
import stored_outputs  # noqa: E402


@pytest.mark.parametrize(
    "value, mode", [(None, "force"), ("", "force"), ("0", "force"), ("1", "off")]
)
def test_the_variable_switches_execution_off_only_when_it_is_1(
    monkeypatch, value, mode
):
    if value is None:
        monkeypatch.delenv(stored_outputs.VARIABLE, raising=False)
    else:
        monkeypatch.setenv(stored_outputs.VARIABLE, value)
    config = SimpleNamespace(nb_execution_mode="force")
    stored_outputs.render_stored_outputs(None, config)
    assert config.nb_execution_mode == mode


def test_a_misspelt_value_is_an_error(monkeypatch):
    monkeypatch.setenv(stored_outputs.VARIABLE, "yes")
    with pytest.raises(ValueError, match=stored_outputs.VARIABLE):
        stored_outputs.render_stored_outputs(
            None, SimpleNamespace(nb_execution_mode="force")
        )


def test_make_test_renders_stored_outputs_and_make_book_executes():
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    strict = makefile.split("\nstrict-build-en:", 1)[1].split("\n\n", 1)[0]
    chinese = makefile.split("\nZH_BUILD :=", 1)[1].split("\n\n", 1)[0]
    book = makefile.split("\nbook:", 1)[1].split("\n\n", 1)[0]
    assert (
        f"{stored_outputs.VARIABLE}=1" in strict and stored_outputs.VARIABLE not in book
    )
    # the Chinese edition renders the same stored outputs (make book runs it after executing)
    assert f"{stored_outputs.VARIABLE}=1" in chinese
    assert "stored_outputs: book/_ext" in (ROOT / "_config.yml").read_text(
        encoding="utf-8"
    )
    assert "execute_notebooks: force" in (ROOT / "_config.yml").read_text(
        encoding="utf-8"
    )
