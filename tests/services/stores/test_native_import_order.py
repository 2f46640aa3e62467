"""Regression: opening the embedded store (usearch) before the local embedder (onnxruntime) crashed
the process with a segfault, so `carrag serve` died at start-up."""

from __future__ import annotations

import subprocess
import sys

import pytest


def test_the_store_then_the_embedder_load_in_one_process() -> None:
    pytest.importorskip("onnxruntime")
    code = "import carrag.services.stores.vector_segments; import onnxruntime; print('ok')"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0 and result.stdout.strip() == "ok", (result.returncode, result.stderr[-2000:])
