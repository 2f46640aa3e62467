"""DATA_DIR defaults to one per-user location (issue 14, item 8): the same store whatever the
working directory, and tests never touch the real one (tests/conftest.py points XDG_DATA_HOME away)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from carrag.services.settings import Settings, default_data_dir
from tests.conftest import ISOLATED_DATA_HOME


def test_default_is_per_user_not_the_working_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    first = Settings(_env_file=None).data_dir  # type: ignore[call-arg]
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    assert Settings(_env_file=None).data_dir == first  # type: ignore[call-arg]
    assert first.is_absolute() and first == ISOLATED_DATA_HOME / "carrag"  # the tests' isolated home


def test_xdg_data_home_wins_when_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert default_data_dir() == tmp_path / "xdg" / "carrag"
    monkeypatch.setenv("XDG_DATA_HOME", "relative/dir")  # the XDG spec says to ignore a relative path
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    if sys.platform.startswith("linux"):
        assert default_data_dir() == tmp_path / "home" / ".local" / "share" / "carrag"


def test_data_dir_from_the_environment_still_wins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DATA_DIR", str(tmp_path / "explicit"))
    settings = Settings(_env_file=None)  # type: ignore[call-arg]
    assert settings.data_dir == tmp_path / "explicit"
    assert settings.resolved_sqlite_path == tmp_path / "explicit" / "carrag.db"


def test_a_store_left_in_the_old_default_place_is_pointed_out(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert Settings(_env_file=None).legacy_store_hint() is None  # type: ignore[call-arg]
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "carrag.db").write_bytes(b"")
    hint = Settings(_env_file=None).legacy_store_hint()  # type: ignore[call-arg]
    assert hint is not None and f"DATA_DIR={tmp_path / 'data'}" in hint
    assert Settings(_env_file=None, data_dir=tmp_path / "data").legacy_store_hint() is None  # type: ignore[call-arg]
    monkeypatch.setenv("DATA_DIR", str(tmp_path / "elsewhere"))
    assert Settings(_env_file=None).legacy_store_hint() is None  # type: ignore[call-arg]
