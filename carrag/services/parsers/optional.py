"""Formats whose parser library is optional: import it on first use, or explain how to install it."""

from __future__ import annotations

import importlib
from types import ModuleType

from carrag.services.errors import MissingDependency


def import_optional(module: str, *, package: str, extension: str) -> ModuleType:
    """Import ``module`` or raise `MissingDependency` (a 400) naming the package to install."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingDependency(
            f"{extension} files need the Python package {package!r}, which is not installed on this "
            f"server. Install it with `pip install {package}` (or reinstall Carrag: `pip install -e .`)."
        ) from exc
