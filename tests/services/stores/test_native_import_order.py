"""The embedded store's native libraries load together in either order (a segfault here kills the server)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import pytest


@pytest.mark.parametrize(
    "imports",
    [
        "import carrag.services.stores.vector_segments, onnxruntime",
        "import onnxruntime, carrag.services.stores.vector_segments",
    ],
)
def test_vector_segments_and_onnxruntime_import_in_any_order(imports: str) -> None:
    # Looked up, not imported: importing them here in the wrong order would crash the test run itself.
    missing = [name for name in ("usearch", "onnxruntime") if importlib.util.find_spec(name) is None]
    if missing:
        pytest.skip(f"not installed: {', '.join(missing)}")
    result = subprocess.run([sys.executable, "-c", imports], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, f"exit {result.returncode}: {result.stderr[-2000:]}"
