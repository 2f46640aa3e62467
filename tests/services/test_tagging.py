from __future__ import annotations

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
    class Exploding:
        name = "exploding"

        async def tags(self, text, filename):
            raise TimeoutError

    assert await auto_tags(Exploding(), "text", "f.txt") == []
    assert "auto-tagging failed" in caplog.text
