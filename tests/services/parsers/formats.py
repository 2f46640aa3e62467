"""Paths of the format fixtures, shared by the parser and API tests."""

from __future__ import annotations

from tests.conftest import FIXTURES

FORMATS = FIXTURES / "formats"
REAL = FORMATS / "real"


def fixture_bytes(name: str) -> bytes:
    return (FORMATS / name).read_bytes()
