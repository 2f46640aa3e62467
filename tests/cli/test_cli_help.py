"""`carrag --help` ends by naming the store local commands use (issue 14, item 8)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def test_help_names_the_store_in_use(tmp_path: Path) -> None:
    env = {**os.environ, "DATA_DIR": str(tmp_path / "somewhere"), "COLUMNS": "250"}
    result = subprocess.run(
        [sys.executable, "-m", "carrag.cli.main", "--help"], env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert f"sqlite at {tmp_path / 'somewhere' / 'carrag.db'}" in result.stdout
    assert not (tmp_path / "somewhere").exists()  # --help creates nothing
