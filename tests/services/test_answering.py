"""The answer flow end to end in process: modes, refusal, fallback, loops, follow-ups, what the model sees."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence

import pytest

from carrag.services.errors import NotRetryable
from carrag.services.models import ChatMessage, ComponentHealth
from carrag.services.requests import AnswerQuery, IngestCommand, SearchQuery
from tests.conftest import FIXTURES, close_container, make_settings, open_container


class RecordingLLM:
    """Answers with a fixed text, one word per delta, and keeps every prompt it was sent."""

    provider, model, capable = "ollama", "recording", True

    def __init__(self, text: str) -> None:
        self.text = text
        self.calls: list[dict[str, object]] = []

    async def stream(
        self, messages: Sequence[ChatMessage], *, max_tokens: int, temperature: float
    ) -> AsyncIterator[str]:
        self.calls.append({"messages": list(messages), "max_tokens": max_tokens, "temperature": temperature})
        for index, word in enumerate(self.text.split(" ")):
            if index >= max_tokens:
                return
            await asyncio.sleep(0)
            yield word + " "

    async def health(self) -> ComponentHealth:
        return ComponentHealth("llm", "ok", "test", self.model)

    async def aclose(self) -> None:
        pass


GROUNDED = "The correct oil filter for the 3.5L EcoBoost engine is the Motorcraft FL-500S [Source 1]."
INVENTED = "The EcoBoost needs a Bosch 3323 filter and 9.5 quarts of oil [Source 4]."


@pytest.fixture
async def answers_with(tmp_path, embedding_backend):
    opened = []

    async def build(llm: RecordingLLM, **settings_overrides: object):
        settings = make_settings(tmp_path / str(len(opened)), tagger="off", llm="ollama", **settings_overrides)
        container = await open_container(settings, embedding_backend, llm=llm)
        opened.append(container)
        for path in sorted((FIXTURES / "corpus").glob("*.txt")):
            await container.ingestion.ingest_file(path.read_bytes(), path.name, IngestCommand())
        return container.answers

    yield build
    for container in opened:
        await close_container(container)


QUESTION = "Which oil filter fits the 3.5L EcoBoost engine?"


async def test_extract_answers_with_the_sentence_that_answers_and_no_llm(answers_with) -> None:
    llm = RecordingLLM(GROUNDED)
    answers = await answers_with(llm)
    answer = await answers.answer(AnswerQuery(SearchQuery(QUESTION, 3), answer_mode="extract"))
    assert llm.calls == [] and answer.model is None
    assert answer.answer_mode == "extract" and answer.grounding is None and answer.answerable
    assert "Motorcraft FL-500S" in answer.answer and "[Source 1]" in answer.answer
    highlight = answer.sources[0].highlights[0]
    assert "FL-500S" in answer.sources[0].text[highlight["start"] : highlight["end"]]


async def test_generate_reports_the_grounding_check_and_fixes_citations(answers_with) -> None:
    answers = await answers_with(RecordingLLM(INVENTED))
    answer = await answers.answer(AnswerQuery(SearchQuery(QUESTION, 3), answer_mode="generate"))
    assert answer.answer_mode == "generate" and answer.model == "recording"
    grounding = answer.grounding
    assert grounding is not None and grounding["grounded"] is False and grounding["unsupported"] == [0]
    assert grounding["citations_removed"] == [4] and "[Source 4]" not in answer.answer


async def test_auto_keeps_a_grounded_answer(answers_with) -> None:
    answers = await answers_with(RecordingLLM(GROUNDED))
    answer = await answers.answer(AnswerQuery(SearchQuery(QUESTION, 3), answer_mode="auto"))
    assert answer.answer_mode == "generate" and answer.requested_mode == "auto" and answer.fallback_reason is None
    assert answer.grounding["grounded"] and answer.answer.startswith("The correct oil filter")
    assert any(source.highlights for source in answer.sources)


async def test_auto_falls_back_to_extract_when_not_grounded_and_says_so(answers_with) -> None:
    answers = await answers_with(RecordingLLM(INVENTED))
    answer = await answers.answer(AnswerQuery(SearchQuery(QUESTION, 3), answer_mode="auto"))
    assert answer.answer_mode == "extract" and answer.requested_mode == "auto"
    assert answer.fallback_reason == "generated answer not grounded: 1 of 1 sentences unsupported"
    assert "Bosch" not in answer.answer and "FL-500S" in answer.answer and answer.model is None


class StalledLLM(RecordingLLM):
    """Never produces its first token (an overloaded machine, a model that hangs)."""

    async def stream(
        self, messages: Sequence[ChatMessage], *, max_tokens: int, temperature: float
    ) -> AsyncIterator[str]:
        self.calls.append({"messages": list(messages)})
        await asyncio.sleep(30)
        yield "never"


async def test_auto_falls_back_to_extract_when_generation_times_out(answers_with) -> None:
    """Measured under load: SmolLM2 passed LLM_TIMEOUT and auto answered HTTP 503 though extract needs no LLM."""
    answers = await answers_with(StalledLLM(""), llm_timeout=0.2)
    answer = await answers.answer(AnswerQuery(SearchQuery(QUESTION, 3), answer_mode="auto"))
    assert answer.answer_mode == "extract" and "FL-500S" in answer.answer
    assert answer.fallback_reason == "generation failed: generation exceeded 0s (LLM_TIMEOUT)"
    with pytest.raises(Exception, match="LLM_TIMEOUT"):
        await answers.answer(AnswerQuery(SearchQuery(QUESTION, 3), answer_mode="generate"))


class RefusingLLM(RecordingLLM):
    """Fails as an unreachable or refusing model server does: its own error, before any token."""

    async def stream(
        self, messages: Sequence[ChatMessage], *, max_tokens: int, temperature: float
    ) -> AsyncIterator[str]:
        raise NotRetryable("llm", "the server refused the key")
        yield ""


async def test_a_failing_llm_is_answered_with_its_own_error_once(answers_with) -> None:
    """The error reached the client as "llm unavailable: llm unavailable: ..." (re-wrapped by `answer`)."""
    answers = await answers_with(RefusingLLM(""))
    with pytest.raises(NotRetryable) as raised:
        await answers.answer(AnswerQuery(SearchQuery(QUESTION, 3), answer_mode="generate"))
    assert raised.value.message == "llm unavailable: the server refused the key"


async def test_the_documents_dont_say_without_calling_the_llm(answers_with) -> None:
    llm = RecordingLLM(GROUNDED)
    answers = await answers_with(llm)
    answer = await answers.answer(
        AnswerQuery(SearchQuery("What is the capital of Mongolia?", 3), answer_mode="generate")
    )
    assert llm.calls == [] and answer.model is None
    assert not answer.answerable and answer.answer_mode == "none" and answer.finish_reason == "no_answer"
    assert answer.answer.startswith("The documents do not contain the answer") and answer.sources
    forced = await answers.answer(AnswerQuery(SearchQuery("What is the capital of Mongolia?", 3), min_relevance=0.0))
    assert forced.answerable, "min_relevance=0 never refuses"


async def test_a_follow_up_is_retrieved_with_the_previous_turn(answers_with) -> None:
    answers = await answers_with(RecordingLLM(GROUNDED))
    history = [ChatMessage("user", "How much can the truck tow?"), ChatMessage("assistant", "13,200 lbs [Source 1].")]
    answer = await answers.answer(
        AnswerQuery(SearchQuery("Does it need a special package for that?", 3), history=history)
    )
    assert answer.sources[0].chunk.filename == "towing.txt"


async def test_a_loop_is_cut_and_reported(answers_with) -> None:
    looping = "The filter is the Motorcraft FL-500S. " * 12
    answers = await answers_with(RecordingLLM(looping.strip()))
    answer = await answers.answer(AnswerQuery(SearchQuery(QUESTION, 3), answer_mode="generate"))
    assert answer.finish_reason == "loop" and answer.answer.count("FL-500S") == 1


async def test_the_token_limit_is_reported_and_request_parameters_reach_the_llm(answers_with) -> None:
    llm = RecordingLLM(GROUNDED)
    answers = await answers_with(llm, llm_max_tokens=200)
    answer = await answers.answer(
        AnswerQuery(
            SearchQuery(QUESTION, 3),
            answer_mode="generate",
            max_tokens=5,
            temperature=0.7,
            client_instructions="Be brief.",
        )
    )
    assert answer.finish_reason == "length" and answer.usage["completion_tokens"] == 5
    call = llm.calls[0]
    assert call["max_tokens"] == 5 and call["temperature"] == 0.7
    system = call["messages"][0].content
    assert system.index("ONLY the provided context") < system.index("Be brief.")
    capped = await answers.answer(AnswerQuery(SearchQuery(QUESTION, 3), answer_mode="generate", max_tokens=10000))
    assert llm.calls[-1]["max_tokens"] == 200 and capped.finish_reason == "stop"


async def test_every_listed_source_reaches_the_model(answers_with) -> None:
    llm = RecordingLLM(GROUNDED)
    answers = await answers_with(llm, max_context_chars=1200)
    answer = await answers.answer(AnswerQuery(SearchQuery(QUESTION, 5), answer_mode="generate", min_relevance=0.0))
    prompt = llm.calls[0]["messages"][-1].content
    assert all(f"[Source {n}:" in prompt for n in range(1, len(answer.sources) + 1))
    assert prompt.index("Question:") - prompt.index("Context:") <= 1200 + 20


async def events_of(answers, request: AnswerQuery) -> list[tuple[str, object]]:
    return [(event.kind, event.data) async for event in answers.stream_answer(request)]


async def test_auto_sends_no_model_text_until_it_is_checked(answers_with) -> None:
    """The acceptance report saw the invented text stream first in auto mode; now only the checked answer goes out."""
    answers = await answers_with(RecordingLLM(INVENTED))
    events = await events_of(answers, AnswerQuery(SearchQuery(QUESTION, 3), answer_mode="auto"))
    kinds = [kind for kind, _ in events]
    assert kinds == ["sources", "token", "done"], "one token: the checked answer (here the fallback)"
    token, done = events[1][1], events[2][1]
    assert isinstance(token, str) and "Bosch" not in token and token == done.answer
    assert done.answer_mode == "extract" and done.requested_mode == "auto"

    kept = await answers_with(RecordingLLM(GROUNDED))
    events = await events_of(kept, AnswerQuery(SearchQuery(QUESTION, 3), answer_mode="auto"))
    assert [kind for kind, _ in events] == ["sources", "token", "done"]
    assert events[1][1] == events[2][1].answer and events[2][1].answer_mode == "generate"


async def test_generate_streams_the_model_text_as_a_draft(answers_with) -> None:
    answers = await answers_with(RecordingLLM(INVENTED))
    events = await events_of(answers, AnswerQuery(SearchQuery(QUESTION, 3), answer_mode="generate"))
    tokens = [data for kind, data in events if kind == "token"]
    assert len(tokens) > 1 and all(token["draft"] is True for token in tokens)  # type: ignore[index]
    done = events[-1][1]
    assert done.grounding["unsupported"] == [0], "the final answer's check marks the invented sentence"


async def test_echoed_prompt_scaffolding_is_stripped_before_the_check(answers_with) -> None:
    echoed = (
        f"{GROUNDED}\nQuestion: Which oil filter fits the 3.5L EcoBoost engine [Source 2]?\n"
        f"Answer based on context above: {GROUNDED}"
    )
    answers = await answers_with(RecordingLLM(echoed))
    answer = await answers.answer(AnswerQuery(SearchQuery(QUESTION, 3), answer_mode="auto"))
    assert answer.answer_mode == "generate", answer.fallback_reason
    assert "Question:" not in answer.answer and "Answer based on" not in answer.answer
    assert [s["text"].startswith("The correct oil filter") for s in answer.grounding["sentences"]] == [True, True]
