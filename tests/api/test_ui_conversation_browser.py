"""The Ask screen as a conversation, in headless Chromium (see test_ui_browser.py for the set-up).

1. Against a real server with the extractive answerer (LLM=none, deterministic): two questions make two
   turns; the follow-up is sent with the first turn as ``history``; each turn's citations open its own
   sources; "New conversation" starts over.
2. With fixed ``/query/stream`` responses (written to the response contract, served by Playwright in
   place of the server's, so the checks do not depend on what a model writes): an unsupported sentence
   is marked, an answer cut by the token limit says so, source cards highlight the ``highlights``
   ranges, and a "the documents don't say" answer is shown as such with the closest passages.
"""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from carrag.bench.browser import ask, chromium, open_page
from carrag.bench.server import server_process
from tests.api.test_ui_browser import MANUAL, SPLIT_SMALL_DOCUMENTS, require_chromium

pytestmark = pytest.mark.browser

TURN_DONE = "n => document.querySelectorAll('#conversation .turn:not([data-state=streaming])').length >= n"


@pytest.fixture(scope="module")
def browser():
    require_chromium()
    with chromium() as instance:
        yield instance


def stream_requests(page) -> list[dict]:
    """The JSON bodies of every POST /query/stream the page sends, in order."""
    bodies: list[dict] = []
    page.on(
        "request", lambda request: bodies.append(request.post_data_json) if "/query/stream" in request.url else None
    )
    return bodies


def test_a_follow_up_question_is_asked_in_the_conversation(browser, tmp_path: Path) -> None:
    with server_process(tmp_path / "data", LLM="none", **SPLIT_SMALL_DOCUMENTS) as server:
        uploaded = httpx.post(
            f"{server.url}/ingest/file",
            files={"file": (MANUAL.name, MANUAL.read_bytes(), "application/pdf")},
            timeout=60,
        )
        assert uploaded.status_code == 200, uploaded.text
        page = open_page(browser, server)
        bodies = stream_requests(page)

        ask(page, "Which oil filter fits the engine?")
        page.wait_for_function(TURN_DONE, arg=1)
        first_answer = page.inner_text("#conversation .turn >> nth=0 >> .answer-text")
        assert "Motorcraft" in first_answer
        assert page.input_value("#ask-question") == "", "the box is cleared for the next question"

        ask(page, "How often should it be changed?")
        page.wait_for_function(TURN_DONE, arg=2)
        turns = page.locator("#conversation .turn")
        assert turns.count() == 2, "the first turn stays on screen"
        assert turns.nth(0).locator(".turn-question").inner_text().endswith("Which oil filter fits the engine?")
        assert turns.nth(1).locator(".turn-question").inner_text().endswith("How often should it be changed?")
        assert turns.nth(0).locator(".answer-text").inner_text() == first_answer, "the first answer is kept"
        assert turns.nth(1).locator(".answer-text").inner_text().strip()
        assert page.locator("#answer-text").count() == 1, "ids mark the latest turn only"

        assert "history" not in bodies[0]
        assert bodies[1]["question"] == "How often should it be changed?"
        assert [message["role"] for message in bodies[1]["history"]] == ["user", "assistant"]
        assert bodies[1]["history"][0]["content"] == "Which oil filter fits the engine?"
        assert bodies[1]["history"][1]["content"] == first_answer.replace("[1]", "[Source 1]"), "the answer as sent"

        # A citation of the first turn opens the first turn's source.
        turns.nth(0).locator("a.citation").first.click()
        assert "2019_Ford_F150_Owners_Manual.pdf" in page.inner_text("#source-dialog-title")
        assert "FL-500S" in page.inner_text("#source-dialog-text")
        page.keyboard.press("Escape")

        page.click("#ask-new")
        assert page.locator("#conversation .turn").count() == 0
        ask(page, "Which oil filter fits the engine?")
        page.wait_for_function(TURN_DONE, arg=1)
        assert "history" not in bodies[2], "a new conversation starts without history"
        assert page.errors == [], page.errors


PASSAGE = (
    "Engine oil and filter. Change the engine oil and filter every 7,500 miles. "
    "Use Motorcraft oil filter FL-500S. Check the level at every fuel stop."
)
HIGHLIGHT = "Use Motorcraft oil filter FL-500S."


def source(number: int, text: str, **extra: object) -> dict:
    return {
        "document_id": f"doc-{number}",
        "filename": f"manual-{number}.pdf",
        "source_id": f"manual-{number}.pdf",
        "chunk_index": number,
        "text": text,
        "score": 0.5,
        "page": number,
        "pages": [number],
    } | extra


def sse(*events: tuple[str, object]) -> str:
    return "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events)


def graded_answer() -> str:
    """A generated answer with one supported and one unsupported sentence, cut by the token limit."""
    start = PASSAGE.index(HIGHLIGHT)
    sources = [source(1, PASSAGE)]
    streamed = "The engine takes the Motorcraft FL-500S filter [Source 1]. It costs twelve dollars [Source 4]. It"
    final = "The engine takes the Motorcraft FL-500S filter [Source 1]. It costs twelve dollars. It"
    first, second = "The engine takes the Motorcraft FL-500S filter [Source 1].", "It costs twelve dollars."
    sentences = [
        {"text": first, "start": 0, "end": len(first), "support": 0.91, "source": 1, "supported": True},
        {
            "text": second,
            "start": final.index(second),
            "end": final.index(second) + len(second),
            "support": 0.12,
            "source": None,
            "supported": False,
        },
    ]
    done = {
        "model": "stub-llm",
        "duration_ms": 1234.0,
        "answer": final,
        "answer_mode": "generate",
        "requested_mode": "generate",
        "fallback_reason": None,
        "answerable": True,
        "finish_reason": "length",
        # As in the SSE `done` event: per source position (in /query: sources[*].highlights).
        "highlights": [[{"start": start, "end": start + len(HIGHLIGHT)}]],
        "grounding": {
            "grounded": False,
            "support": 0.12,
            "sentences": sentences,
            "citations_removed": [4],
            "citations_added": [],
            "unsupported": [1],
        },
    }
    tokens = [("token", {"text": streamed[i : i + 9], "draft": True}) for i in range(0, len(streamed), 9)]
    return sse(("sources", sources), *tokens, ("done", done))


def draft_then_failure() -> str:
    """generate mode: the model's draft streams, then generation fails before the check."""
    tokens = [("token", {"text": "It holds 3.2 ", "draft": True}), ("token", {"text": "psi.", "draft": True})]
    return sse(("sources", [source(1, PASSAGE)]), *tokens, ("error", {"detail": "the model crashed"}))


def documents_do_not_say() -> str:
    closest = [
        source(1, "Ducks are farmed for their meat, eggs and feathers.", highlights=[{"start": 0, "end": 5}]),
        source(2, PASSAGE),
    ]
    done = {
        "model": None,
        "duration_ms": 40.0,
        "answer_mode": "none",
        "requested_mode": "auto",
        "answerable": False,
        "finish_reason": "no_answer",
        "grounding": None,
    }
    answer = "The documents do not contain the answer to this question."
    return sse(("sources", closest), ("token", {"text": answer}), ("done", done))


def test_grounding_cut_off_highlights_and_documents_do_not_say(browser, tmp_path: Path) -> None:
    with server_process(tmp_path / "data", LLM="none") as server:
        page = open_page(browser, server)
        bodies = stream_requests(page)

        def respond(route) -> None:
            question = route.request.post_data_json["question"]
            if "Mongolia" in question:
                body = documents_do_not_say()
            elif "pressure" in question:
                body = draft_then_failure()
            else:
                body = graded_answer()
            route.fulfill(status=200, headers={"Content-Type": "text/event-stream"}, body=body)

        page.route("**/query/stream", respond)

        page.click("nav.tabs >> text=Ask")
        page.click("#ask-form summary")
        page.select_option("#ask-mode", "generate")
        ask(page, "Which oil filter fits the engine, and what does it cost?")
        page.wait_for_function(TURN_DONE, arg=1)
        assert bodies[0]["answer_mode"] == "generate"
        turn = page.locator("#conversation .turn").nth(0)
        # The final (checked) answer replaces the streamed one: the phantom [Source 4] is gone.
        assert (
            turn.locator(".answer-text").inner_text()
            == "The engine takes the Motorcraft FL-500S filter [1]. It costs twelve dollars. It"
        )
        unsupported = turn.locator(".sentence.unsupported")
        assert unsupported.count() == 1 and unsupported.inner_text() == "It costs twelve dollars."
        assert "Not supported by the sources" in unsupported.get_attribute("title")
        assert turn.locator(".sentence:not(.unsupported)").count() == 1
        assert turn.locator(".sentence:not(.unsupported) a.citation").count() == 1
        assert turn.locator(".notice.stopped").is_visible()
        assert "cut off" in turn.locator(".notice.stopped").inner_text()
        meta = turn.locator(".answer-meta").inner_text()
        assert "1 sentence not supported by the sources" in meta and "missing source 4" in meta
        assert not turn.locator(".notice.no-answer").is_visible()
        kind = turn.locator(".answer-kind")
        assert kind.get_attribute("data-kind") == "generated", "it says plainly that a model wrote it"
        assert kind.inner_text().startswith("Generated by stub-llm")
        assert not turn.locator(".notice.draft").is_visible(), "the checked answer replaced the draft"
        assert "draft" not in turn.locator(".answer-text").get_attribute("class")
        # The source card and the opened passage mark the sentence the answer relies on.
        assert turn.locator(".sources li mark.highlight").inner_text() == HIGHLIGHT
        turn.locator("a.citation").first.click()
        assert page.locator("#source-dialog-text mark.highlight").inner_text() == HIGHLIGHT
        assert page.inner_text("#source-dialog-text") == PASSAGE
        page.keyboard.press("Escape")

        ask(page, "What is the capital of Mongolia?")
        page.wait_for_function(TURN_DONE, arg=2)
        refused = page.locator("#conversation .turn").nth(1)
        assert "no-answer" in refused.get_attribute("class")
        assert refused.locator(".notice.no-answer").is_visible()
        assert "documents don't say" in refused.locator(".notice.no-answer").inner_text()
        assert refused.locator(".sources-title").inner_text() == "Closest passages"
        assert refused.locator(".sources li").count() == 2
        assert refused.locator(".sources li mark.highlight").inner_text() == "Ducks", (
            "sources[*].highlights, as in /query"
        )
        assert refused.locator(".sentence.unsupported").count() == 0
        assert not refused.locator(".answer-kind").is_visible(), "neither quoted nor generated: the notice says it"
        assert not refused.locator(".notice.stopped").is_visible()
        # The follow-up went with the first turn's final answer as history.
        assert bodies[1]["history"][1]["content"].endswith("It costs twelve dollars. It")

        # A draft that never got its check stays labelled as a draft.
        ask(page, "What is the tire pressure?")
        page.wait_for_function(TURN_DONE, arg=3)
        failed = page.locator("#conversation .turn").nth(2)
        assert failed.get_attribute("data-state") == "error"
        assert (
            failed.locator(".notice.draft").is_visible()
            and "not checked" in failed.locator(".notice.draft").inner_text()
        )
        assert "draft" in failed.locator(".answer-text").get_attribute("class")
        assert page.errors == [], page.errors


def test_the_real_server_quotes_with_highlights_and_says_when_the_documents_do_not(browser, tmp_path: Path) -> None:
    """The same marks from the real answer pipeline (extractive, no LLM): the quoted sentence is highlighted
    in its source card, and a question nothing ingested answers is shown as "the documents don't say"."""
    with server_process(tmp_path / "data", LLM="none", **SPLIT_SMALL_DOCUMENTS) as server:
        uploaded = httpx.post(
            f"{server.url}/ingest/file",
            files={"file": (MANUAL.name, MANUAL.read_bytes(), "application/pdf")},
            timeout=60,
        )
        assert uploaded.status_code == 200, uploaded.text
        page = open_page(browser, server)
        # "Server default" says what it is on this server (GET /health's defaults).
        page.wait_for_function("document.querySelector('#ask-mode option').textContent !== 'Server default'")
        assert page.locator("#ask-mode option").first.text_content() == "Server default: quoted from the sources"
        rerank = page.locator("#ask-rerank option").first.text_content()
        assert rerank == "Server default: off (no reranker model installed)"
        assert page.get_attribute("#ask-top-k", "placeholder") == "default: 5"

        ask(page, "Which oil filter fits the engine?")
        page.wait_for_function(TURN_DONE, arg=1)
        quoted = page.locator("#conversation .turn").nth(0)
        assert "FL-500S" in quoted.locator(".answer-text").inner_text()
        assert "quoted from the sources" in quoted.locator(".answer-meta").inner_text()
        kind = quoted.locator(".answer-kind")
        assert kind.get_attribute("data-kind") == "quoted" and kind.inner_text().startswith(
            "Quoted from your documents"
        )
        assert "no language model wrote them" in kind.inner_text()
        assert "FL-500S" in " ".join(quoted.locator(".sources li mark.highlight").all_inner_texts())

        ask(page, "What is the capital of Mongolia?")
        page.wait_for_function(TURN_DONE, arg=2)
        refused = page.locator("#conversation .turn").nth(1)
        assert "no-answer" in refused.get_attribute("class")
        assert refused.locator(".notice.no-answer").is_visible()
        assert refused.locator(".sources-title").inner_text() == "Closest passages"
        assert refused.locator(".sources li").count() >= 1
        assert page.errors == [], page.errors


def test_a_question_asked_while_an_answer_streams_can_still_be_stopped(browser, tmp_path: Path) -> None:
    """Ctrl+Enter asks while an answer is streaming (the Ask button is disabled, the shortcut is not): the
    first stream is aborted, and its clean-up, which runs after the second question has started, must
    leave the second question's Stop button shown and working."""
    with server_process(tmp_path / "data", LLM="none") as server:
        page = open_page(browser, server)
        streams: list = []  # held: neither answer arrives until the test says so
        page.route("**/query/stream", lambda route: streams.append(route))

        ask(page, "Which oil filter fits the engine?")
        page.wait_for_selector("#ask-stop:not([hidden])")
        page.fill("#ask-question", "And how often is it changed?")
        page.press("#ask-question", "Control+Enter")
        page.wait_for_function(TURN_DONE, arg=1)  # the first turn was stopped; its clean-up has run
        assert "Stopped." in page.locator("#conversation .turn").nth(0).locator(".answer-meta").inner_text()
        assert len(streams) == 2
        assert page.is_visible("#ask-stop") and page.is_disabled("#ask-submit"), "the second is still streaming"

        page.click("#ask-stop")
        page.wait_for_function(TURN_DONE, arg=2)
        assert "Stopped." in page.locator("#conversation .turn").nth(1).locator(".answer-meta").inner_text()
        assert page.is_hidden("#ask-stop") and page.is_enabled("#ask-submit")
        assert page.errors == [], page.errors
        page.context.close()
