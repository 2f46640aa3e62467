"""Answers quoted from a table row and from a list, and a conversation that changes topic, in the web UI
(headless Chromium; see test_ui_browser.py for the set-up), against a real server with the extractive
answerer (LLM=none: deterministic, no model writes the answer).

Two small documents hold their facts the way documentation does: SQLite's storage classes as a list after
its lead-in, PostgreSQL's integer types as a table. After a question about SQLite, a question that names
PostgreSQL stands on its own: it is searched on its own (its sources are PostgreSQL's) though the UI sends
the conversation as ``history``. (A follow-up searched with its turn: test_ui_conversation_browser.py.)
"""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from carrag.bench.browser import ask, chromium, open_page
from carrag.bench.server import server_process
from tests.api.test_ui_browser import require_chromium
from tests.api.test_ui_conversation_browser import TURN_DONE, stream_requests

pytestmark = pytest.mark.browser

SQLITE = """# Datatypes in SQLite

Most SQL database engines use static, rigid typing. SQLite uses a more general dynamic type system,
in which the datatype of a value is associated with the value itself, not with its container.

## Storage classes

Each value stored in an SQLite database has one of the following storage classes:

- NULL. The value is a NULL value.
- INTEGER. The value is a signed integer, stored in 0, 1, 2, 3, 4, 6, or 8 bytes.
- REAL. The value is a floating point value, stored as an 8-byte IEEE floating point number.
- TEXT. The value is a text string, stored using the database encoding.
- BLOB. The value is a blob of data, stored exactly as it was input.

## Boolean values

SQLite does not have a separate Boolean storage class. Boolean values are stored as the integers 0 and 1.
"""

POSTGRESQL = """# Numeric Types in PostgreSQL

Numeric types consist of two-, four-, and eight-byte integers, four- and eight-byte floating-point
numbers, and selectable-precision decimals. The table lists the available types.

| Name | Storage Size | Description | Range |
|------|--------------|-------------|-------|
| smallint | 2 bytes | small-range integer | -32768 to +32767 |
| integer | 4 bytes | typical choice for integer | -2147483648 to +2147483647 |
| bigint | 8 bytes | large-range integer | -9223372036854775808 to +9223372036854775807 |
| real | 4 bytes | variable-precision, inexact | 6 decimal digits precision |

The type integer is the common choice, as it offers the best balance between range, storage size,
and performance. The smallint type is generally only used if disk space is at a premium.
"""


@pytest.fixture(scope="module")
def browser():
    require_chromium()
    with chromium() as instance:
        yield instance


def turn(page, index: int):
    page.wait_for_function(TURN_DONE, arg=index + 1)
    return page.locator("#conversation .turn").nth(index)


def first_source(answer_turn) -> str:
    return answer_turn.locator(".sources li").first.inner_text()


def test_list_and_table_answers_and_a_change_of_topic(browser, tmp_path: Path) -> None:
    with server_process(tmp_path / "data", LLM="none") as server:
        for name, text in (("sqlite-datatypes.md", SQLITE), ("postgresql-numeric-types.md", POSTGRESQL)):
            uploaded = httpx.post(
                f"{server.url}/ingest/file", files={"file": (name, text.encode(), "text/markdown")}, timeout=60
            )
            assert uploaded.status_code == 200, uploaded.text
        page = open_page(browser, server)
        bodies = stream_requests(page)

        ask(page, "What storage classes does SQLite have?")
        listed = turn(page, 0)
        answer = listed.locator(".answer-text").inner_text()
        for storage_class in ("NULL", "INTEGER", "REAL", "TEXT", "BLOB"):
            assert storage_class in answer, answer
        assert "sqlite-datatypes.md" in first_source(listed)

        ask(page, "What is the range of the smallint type in PostgreSQL?")
        table = turn(page, 1)
        answer = table.locator(".answer-text").inner_text()
        assert "-32768 to +32767" in answer, answer
        assert "smallint" in answer and "2147483647" not in answer, "the row asked about, not the table"
        assert "postgresql-numeric-types.md" in first_source(table), "a new topic is searched on its own"
        assert [message["role"] for message in bodies[1]["history"]] == ["user", "assistant"]

        assert page.errors == [], page.errors
