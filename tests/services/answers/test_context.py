from __future__ import annotations

from carrag.services.answers.context import clean_for_model, fit_context
from carrag.services.answers.scoring import score_passages


def test_link_targets_images_and_page_chrome_are_stripped() -> None:
    page = (
        "Skip to content\n[Home](https://x.example/) | [Shop](https://x.example/shop) | [Blog](/blog)\n"
        'The [yellow duck](https://x.example/duck "Duck") floats. ![a duck](duck.png)\nShare\nAccept all cookies'
    )
    assert clean_for_model(page) == "The yellow duck floats. a duck"


async def test_every_source_reaches_the_model_within_the_budget(embedder) -> None:
    filler = " ".join(f"Unrelated maintenance remark number {i}." for i in range(60))
    passages = [f"{filler} The oil filter is the FL-500S. {filler}" for _ in range(5)]
    scored = await score_passages("Which oil filter?", passages, embedder)
    fitted = fit_context(scored, passages, [f"f{i}.txt" for i in range(5)], 3000)
    assert len(fitted) == 5 and all(source.text for source in fitted)
    assert sum(len(source.text) + 80 for source in fitted) <= 3000
    assert all("The oil filter is the FL-500S." in source.text for source in fitted), "the best sentence of each"
    for source in fitted:
        assert all(clean_for_model(s.sentence.text) in source.text for s in source.sentences)


async def test_a_short_source_goes_in_whole(embedder) -> None:
    passages = ["Short passage about the oil filter.", "Another short one."]
    scored = await score_passages("oil filter", passages, embedder)
    fitted = fit_context(scored, passages, ["a", "b"], 3000)
    assert [source.text for source in fitted] == passages and all(source.whole for source in fitted)
