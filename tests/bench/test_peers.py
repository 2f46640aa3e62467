"""The peers of `carrag bench --peers`: an optional extra, and the numpy baseline they are checked against."""

from __future__ import annotations

import numpy as np
import pytest
from typer.testing import CliRunner

from carrag.bench import peers
from carrag.bench.peers import NumpyPeer, Rows
from carrag.cli.main import app


def test_bench_peers_without_the_extra_names_the_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(peers, "missing_peers", lambda names: [n for n in names if n != "numpy"])
    result = CliRunner().invoke(app, ["bench", "--peers"], env={"NO_COLOR": "1", "COLUMNS": "200"})
    assert result.exit_code == 2
    assert "pip install 'carrag[peers]'" in result.output and "chroma" in result.output


def test_the_numpy_peer_is_exact_and_forgets_deleted_rows(tmp_path) -> None:
    matrix = np.random.default_rng(2).normal(size=(50, 8)).astype(np.float32)
    peer = NumpyPeer(tmp_path, 8)
    peer.add(Rows([f"r{i}" for i in range(50)], matrix, ["text"] * 50))
    probe = matrix[7] + 0.01
    unit = matrix / np.linalg.norm(matrix, axis=1, keepdims=True)
    expected = [f"r{i}" for i in np.argsort(-(unit @ probe), kind="stable")[:5]]
    assert peer.knn(probe, 5) == expected
    peer.delete(["r7"])
    assert "r7" not in peer.knn(probe, 50) and len(peer.knn(probe, 50)) == 49
