from __future__ import annotations

import re
from pathlib import Path

import pytest

from carrag.services.errors import InvalidInput
from carrag.services.models import ChatMessage
from carrag.services.requests import AnswerQuery, RequestFactory, split_tags
from carrag.services.vocabulary import ChunkingStrategy, SearchMode
from tests.conftest import make_settings


@pytest.fixture
def requests(tmp_path: Path) -> RequestFactory:
    return RequestFactory(make_settings(tmp_path, max_question_chars=50, max_top_k=20, default_top_k=4))


def test_search_query_is_trimmed_defaulted_and_normalised(requests: RequestFactory) -> None:
    query = requests.search("  oil filter \n", tags=[" Safety", "safety", "", "Brakes "], source="  *.md ")
    assert query.question == "oil filter" and query.top_k == 4, "DEFAULT_TOP_K applies"
    assert query.filters.tags == ("safety", "brakes") and query.filters.source == "*.md"
    assert (query.mode, query.explain, query.rerank) == (SearchMode.HYBRID, False, None)
    assert requests.search("oil", source="   ").filters.source is None


@pytest.mark.parametrize(
    ("question", "top_k", "message"),
    [
        ("   ", None, "must not be empty"),
        ("x" * 51, None, "51 characters long; the limit is 50 (MAX_QUESTION_CHARS)"),
        ("oil", 0, "top_k must be between 1 and 20 (MAX_TOP_K); got 0"),
        ("oil", 21, "MAX_TOP_K"),
    ],
)
def test_question_limits(requests: RequestFactory, question: str, top_k: int | None, message: str) -> None:
    with pytest.raises(InvalidInput, match=re.escape(message)):
        requests.search(question, top_k=top_k)


def test_an_answer_query_is_its_search_plus_the_history(requests: RequestFactory) -> None:
    history = [ChatMessage("user", "hi"), ChatMessage("assistant", "hello")]
    query = AnswerQuery(requests.search(" tyre pressure? ", top_k=2, tags=["Cars"], rerank=False), history)
    assert query.question == "tyre pressure?" and list(query.history) == history
    assert query.search.filters.tags == ("cars",) and (query.search.top_k, query.search.rerank) == (2, False)


def test_ingest_command_normalises_tags_and_refuses_a_large_overlap(requests: RequestFactory) -> None:
    command = requests.ingest(tags=split_tags(" Ops, ops ,,Runbook"), chunking=ChunkingStrategy.MARKDOWN, force=True)
    assert command.tags == ["ops", "runbook"] and command.chunking == "markdown" and command.force
    assert requests.ingest(source_id="  ").source_id is None
    with pytest.raises(InvalidInput, match=r"chunk_overlap \(60\) must be at most half of chunk_size \(100\)"):
        requests.ingest(chunk_size=100, chunk_overlap=60)
    assert requests.ingest(chunk_size=100, chunk_overlap=50).chunk_overlap == 50


def test_a_document_s_tags_and_title_have_one_limit(requests: RequestFactory) -> None:
    from carrag.services.requests import MAX_TAGS, user_tags, user_title

    assert user_tags([" A", "a", "b "] + ["c"] * 1000) == ["a", "b", "c"]  # counted as stored
    assert len(user_tags([f"t{n}" for n in range(MAX_TAGS)])) == MAX_TAGS
    for tags, message in [
        ([f"t{n}" for n in range(MAX_TAGS + 1)], "51 tags given; the limit is 50"),
        (["x" * 201], "longer than 200 characters"),
    ]:
        with pytest.raises(InvalidInput, match=message):
            user_tags(tags)
        with pytest.raises(InvalidInput, match=message):
            requests.ingest(tags=tags)
    assert user_title("  Manual ") == "Manual" and user_title(None) is None
    for title, message in [("   ", "must not be blank"), ("x" * 1001, "1,001 characters long; the limit is 1000")]:
        with pytest.raises(InvalidInput, match=message):
            requests.ingest(title=title)


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("../../../../tmp/x.txt", "x.txt"),
        ("C:\\Users\\me\\report.pdf", "report.pdf"),
        ("notes\x00\x1b[31m.md", "notes[31m.md"),
        ("invoice\u202etxt.exe", "invoicetxt.exe"),  # a right-to-left override
        ("  spaced name.txt \n", "spaced name.txt"),
        ("x" * 300 + ".pdf", "x" * 251 + ".pdf"),
    ],
)
def test_an_upload_s_file_name_is_reduced_to_a_display_name(raw: str, shown: str) -> None:
    from carrag.services.requests import display_filename

    assert display_filename(raw) == shown


@pytest.mark.parametrize("raw", [None, "", "dir/", "..", "a/..", "\x00\u200f"])
def test_an_upload_without_a_usable_name_is_refused(raw: str | None) -> None:
    from carrag.services.requests import display_filename

    with pytest.raises(InvalidInput, match="no usable file name"):
        display_filename(raw)


def test_a_source_id_is_a_trimmed_label_without_hidden_characters_or_excess(requests: RequestFactory) -> None:
    assert requests.ingest(source_id="  docs/guide.md ").source_id == "docs/guide.md"
    assert requests.ingest(source_id="https://example.com/a?b=1").source_id == "https://example.com/a?b=1"
    assert requests.ingest(source_id="   ").source_id is None
    for hostile in ("guide\x00.md", "cod\u202egpj.exe", "a\nb"):
        with pytest.raises(InvalidInput, match="control or format characters"):
            requests.ingest(source_id=hostile)
    with pytest.raises(InvalidInput, match="limit is 2,048"):
        requests.ingest(source_id="x" * 2049)
