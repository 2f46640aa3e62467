from __future__ import annotations

from carrag.services.answers.context import clean_for_model, fit_context


def test_link_targets_images_and_page_chrome_are_stripped() -> None:
    page = (
        "Skip to content\n[Home](https://x.example/) | [Shop](https://x.example/shop) | [Blog](/blog)\n"
        'The [yellow duck](https://x.example/duck "Duck") floats. ![a duck](duck.png)\nShare\nAccept all cookies'
    )
    assert clean_for_model(page) == "The yellow duck floats. a duck"


async def test_every_source_reaches_the_model_within_the_budget(read) -> None:
    filler = " ".join(f"Unrelated maintenance remark number {i}." for i in range(60))
    passages = [f"{filler} The oil filter is the FL-500S. {filler}" for _ in range(5)]
    reading = await read("Which oil filter?", passages)
    fitted = fit_context(reading, [f"f{i}.txt" for i in range(5)], 3000)
    assert len(fitted) == 5 and all(source.text for source in fitted)
    assert sum(len(source.text) + 80 for source in fitted) <= 3000
    assert all("The oil filter is the FL-500S." in source.text for source in fitted), "the most probable unit of each"
    for source in fitted:
        assert all(candidate.unit.display in source.text for candidate in source.units)


async def test_a_short_source_goes_in_whole(read) -> None:
    passages = ["Short passage about the oil filter.", "Another short one."]
    reading = await read("oil filter", passages)
    fitted = fit_context(reading, ["a", "b"], 3000)
    assert [source.text for source in fitted] == passages and all(source.whole for source in fitted)
