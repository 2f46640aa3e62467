"""docs/configuration.md's settings table is generated from the settings class; it must match a fresh generation."""

from __future__ import annotations

from pathlib import Path

from carrag.services.configuration_docs import configuration_markdown
from carrag.services.settings import Settings

CONFIGURATION_DOC = Path(__file__).resolve().parent.parent / "docs" / "configuration.md"


def test_configuration_doc_is_up_to_date() -> None:
    assert CONFIGURATION_DOC.read_text() == configuration_markdown(), (
        "docs/configuration.md is stale: run `make docs` (python -m carrag.services.configuration_docs)"
    )


def test_every_setting_is_described() -> None:
    text = CONFIGURATION_DOC.read_text()
    for name, field in Settings.model_fields.items():
        assert field.description, f"{name} has no description"
        assert f"| `{name.upper()}` |" in text
