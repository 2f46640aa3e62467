"""The optional parts of Carrag (pyproject's extras): `installed` says whether one can be imported, and
`require` stops a feature whose extra is missing with the command that installs it.
"""

from __future__ import annotations

import importlib.util

# extra -> the module it installs
EXTRAS = {
    "embedded": "llama_cpp",  # LLM=local, the default answerer
    "elasticsearch": "elasticsearch",  # STORE=elasticsearch
    "mcp": "mcp",  # /mcp and `carrag mcp`
    "eval": "ir_measures",  # `carrag eval`, `carrag bench`
}


class MissingExtra(ImportError):
    """A feature was asked for whose extra is not installed."""

    def __init__(self, extra: str, feature: str) -> None:
        super().__init__(f"{feature} needs the '{extra}' extra: pip install 'carrag[{extra}]'")
        self.extra = extra


def installed(extra: str) -> bool:
    return importlib.util.find_spec(EXTRAS[extra]) is not None


def require(extra: str, feature: str) -> None:
    if not installed(extra):
        raise MissingExtra(extra, feature)
