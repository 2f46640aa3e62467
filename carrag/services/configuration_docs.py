"""The settings table of docs/configuration.md, generated from the `Settings` fields by `make docs` (which runs
this module; tests/test_docs_configuration.py checks the table is fresh). The text above the table is written
in docs/configuration.md itself."""

from __future__ import annotations

from pathlib import Path

from carrag.services.settings import Settings


def settings_markdown() -> str:
    """The configuration table of docs/configuration.md, generated from the fields of `Settings`."""
    lines = [
        "| Variable | Default | Description |",
        "|---|---|---|",
    ]
    for name, field in Settings.model_fields.items():
        default = field.get_default(call_default_factory=True)
        extra = field.json_schema_extra if isinstance(field.json_schema_extra, dict) else {}
        if "shown_default" in extra:
            shown = str(extra["shown_default"])
        elif isinstance(default, bool):
            shown = str(default).lower()
        elif isinstance(default, list):
            shown = ",".join(default) or "(empty)"
        elif default is None:
            shown = "(unset)"
        elif isinstance(default, str) and len(default) > 60:
            shown = "(see `carrag/services/settings.py`)"
        else:
            shown = str(default)
        description = (field.description or "").replace("|", "\\|")
        lines.append(f"| `{name.upper()}` | `{shown}` | {description} |")
    return "\n".join(lines) + "\n"


CONFIGURATION_DOC = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"
SETTINGS_HEADING = "\n## Settings\n\n"


def configuration_markdown() -> str:
    """docs/configuration.md as it should be: its own text up to the settings table, then the table afresh."""
    current = CONFIGURATION_DOC.read_text()
    if SETTINGS_HEADING not in current:  # emptied, e.g. by redirecting this module's output into it
        raise SystemExit(f"{CONFIGURATION_DOC} has lost its text: `git checkout` it, then run `make docs`.")
    return current.split(SETTINGS_HEADING)[0] + SETTINGS_HEADING + settings_markdown()


if __name__ == "__main__":  # pragma: no cover - `make docs`
    CONFIGURATION_DOC.write_text(configuration_markdown())
