from __future__ import annotations

import logging

import pytest

from carrag.services.llms.base import complete  # noqa: F401  (LLMTagger uses it)
from carrag.services.tagging import KeywordTagger, LLMTagger, auto_tags, clean_tags, merge_tags
from tests.ollama_replay import OllamaReplay


def test_clean_and_merge() -> None:
    assert clean_tags([" Ford", "F-150 ", "ford", "", "'2019'", "- truck"], 5) == ["ford", "f-150", "2019", "truck"]
    assert merge_tags(["ford", "truck"], ["Truck", "maintenance"]) == ["ford", "truck", "maintenance"]


@pytest.mark.parametrize(
    ("filename", "text", "expected_prefix"),
    [
        (
            "2019_Ford_F150_Owners_Manual.pdf",
            "This owner's manual covers the Ford F-150. The F-150 is a truck.",
            ["ford", "f-150", "2019", "owners manual"],
        ),
        (
            "camry.pdf",
            "Toyota Camry service manual. The Toyota Camry 2021 model. Toyota Camry hybrid.",
            ["toyota", "camry", "2021", "service manual"],
        ),
    ],
)
def test_keyword_tagger_finds_make_model_year(filename: str, text: str, expected_prefix: list[str]) -> None:
    tags = KeywordTagger().tags_sync(text, filename)
    assert tags[: len(expected_prefix)] == expected_prefix
    assert len(tags) <= 5


def test_keyword_tagger_on_non_vehicle_text() -> None:
    text = (
        "Abstract. Diffusion tensor imaging of cerebral white matter in newborns shows anisotropy. "
        "White matter development is measured with diffusion imaging. References follow."
    )
    tags = KeywordTagger().tags_sync(text, "paper.txt")
    assert "research paper" in tags and "diffusion" in tags
    assert not any(t.isdigit() for t in tags)


async def test_llm_tagger_parses_reply_from_ollama() -> None:
    from carrag.services.llms.ollama import OllamaLLM

    with OllamaReplay() as replay:
        llm = OllamaLLM(replay.url, "smollm2")
        tagger = LLMTagger(llm, "Tag it.", content_chars=8000, max_tags=5, timeout=10)
        tags = await tagger.tags("x" * 10000, "manual.pdf")
        sent = replay.requests[-1][2]["messages"]
        await llm.aclose()
    assert sent[0] == {"role": "system", "content": "Tag it."}
    assert sent[1]["content"].startswith("Filename: manual.pdf") and sent[1]["content"].count("x") == 8000
    assert tags and all(t == t.lower().strip() for t in tags) and len(tags) <= 5


async def test_failures_yield_no_tags(caplog) -> None:
    caplog.set_level(logging.WARNING, logger="carrag.services.tagging")  # `carrag eval` raises the root's level

    class Exploding:
        name = "exploding"

        async def tags(self, text, filename):
            raise TimeoutError

    assert await auto_tags(Exploding(), "text", "f.txt") == []
    assert "auto-tagging failed" in caplog.text


def test_keyword_tagger_keeps_vehicle_rules_and_adds_key_phrases_not_filler() -> None:
    text = (
        "This owner's manual covers the Ford F-150. Whenever you find nothing in this heading, read a little more. "
        "Tire pressure monitoring system: check the tire pressure monthly. The tire pressure monitoring system "
        "warns when a tire is low. Trailer brake controller settings depend on the trailer weight."
    )
    tags = KeywordTagger().tags_sync(text, "2019_Ford_F150_Owners_Manual.pdf")
    assert tags[:4] == ["ford", "f-150", "2019", "owners manual"]
    assert len(tags) == 5 and tags[4] not in {"whenever", "nothing", "heading", "little", "find"}
    assert " " in tags[4], "a multi-word term fills the slot"


def test_keyword_tagger_on_german_and_placeholder_text() -> None:
    german = (
        "Die Bremsflüssigkeit muss alle zwei Jahre gewechselt werden, auch wenn das Fahrzeug wenig gefahren "
        "wird. Bremsflüssigkeit ist hygroskopisch; sind eine Reihe von Prüfungen nötig, prüft die Werkstatt "
        "die Bremsflüssigkeit und die Bremsscheiben."
    )
    tags = KeywordTagger().tags_sync(german, "bremsen.pdf")
    assert tags and not {"auch", "sind", "eine"} & {word for tag in tags for word in tag.split()}
    lorem = "Lorem ipsum dolor sit amet, consectetur adipiscing elit. Nulla vitae morbi tristique. " * 20
    assert KeywordTagger().tags_sync(lorem, "template.docx") == []


class _ScriptedLLM:
    def __init__(self, reply: str) -> None:
        self.reply = reply

    async def complete(self, messages, *, max_tokens, temperature):
        return self.reply


async def test_llm_tags_are_validated_like_keywords(monkeypatch: pytest.MonkeyPatch) -> None:
    import carrag.services.tagging as tagging

    async def scripted(llm, messages, **kwargs):
        return llm.reply

    monkeypatch.setattr(tagging, "complete", scripted)
    german = "Die Bremsflüssigkeit muss alle zwei Jahre gewechselt werden, auch wenn das Fahrzeug steht. " * 3
    tagger = LLMTagger(
        _ScriptedLLM("Tags: auch, Ford, sind, F-150, 2019, eine, Bremsflüssigkeit, nothing"),
        "Tag it.",
        content_chars=8000,
        max_tags=5,
        timeout=10,
    )
    assert await tagger.tags(german, "bremsen.pdf") == ["ford", "f-150", "2019", "bremsflüssigkeit"]
