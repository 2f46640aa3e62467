"""The grounding check against real recorded Ollama answers and against answers written to fail it."""

from __future__ import annotations

import json

from carrag.services.answers.grounding import check_grounding, normalise_citations
from tests.ollama_replay import RECORDINGS

RECORDED = "".join(
    json.loads(line)["message"]["content"] for line in (RECORDINGS / "chat_stream.ndjson").read_text().splitlines()
)  # "Snapshots are retained for thirty days.\n\nThe answer is: 30 days"
SNAPSHOTS = (
    "Backups\nThe database takes a snapshot every night. Snapshots are retained for thirty days, then deleted. "
    "Restoring a snapshot takes about ten minutes."
)
BRAKES = (
    "Brake fluid\nUse DOT 4 LV brake fluid. Replace the brake fluid every three years because it absorbs "
    "moisture from the air. Check the level monthly."
)
OIL = (
    "Engine oil service\nThe correct oil filter for the 3.5L EcoBoost engine is the Motorcraft FL-500S. "
    "Change the engine oil and filter every 7,500 miles or six months, whichever comes first."
)
MIN_SUPPORT = 0.55


async def test_recorded_ollama_answer_is_grounded_in_its_source(embedder, fitted_sources) -> None:
    question = "How long are snapshots retained?"
    sources = await fitted_sources(question, [SNAPSHOTS, BRAKES])
    grounding = await check_grounding(RECORDED, sources, embedder, question=question, min_support=MIN_SUPPORT)
    assert grounding.grounded, grounding.as_dict()
    assert [s.source for s in grounding.sentences] == [1, 1]
    assert grounding.citations_added == [1], "the uncited, supported sentences get their source"
    assert grounding.answer.count("[Source 1]") == 2
    highlights = grounding.highlights()
    start, end = highlights[0][0]
    assert "retained for thirty days" in SNAPSHOTS[start:end]


async def test_recorded_ollama_answer_is_not_grounded_in_unrelated_sources(embedder, fitted_sources) -> None:
    question = "How often should the brake fluid be replaced?"
    sources = await fitted_sources(question, [BRAKES, OIL])
    grounding = await check_grounding(RECORDED, sources, embedder, question=question, min_support=MIN_SUPPORT)
    assert not grounding.grounded
    assert grounding.unsupported == [0, 1]
    assert grounding.citations_added == [] and "[Source" not in grounding.answer


async def test_phantom_citations_are_removed_and_reported(embedder, fitted_sources) -> None:
    question = "Which oil filter fits the EcoBoost?"
    sources = await fitted_sources(question, [OIL, BRAKES])
    answer = "The EcoBoost takes the Motorcraft FL-500S oil filter [Source 3: wikiHow]. See also [Sources 1, 7]."
    grounding = await check_grounding(answer, sources, embedder, question=question, min_support=MIN_SUPPORT)
    assert grounding.citations_removed == [3, 7]
    assert "[Source 3" not in grounding.answer and "wikiHow" not in grounding.answer
    assert grounding.sentences[0].supported and grounding.sentences[0].source == 1
    assert "[Source 1]" in grounding.sentences[0].text


async def test_invented_numbers_make_a_sentence_unsupported(embedder, fitted_sources) -> None:
    question = "How often should the oil be changed?"
    sources = await fitted_sources(question, [OIL, BRAKES])
    answer = "Change the engine oil and filter every 10,000 miles [Source 1]. The capital is worth 1.28 billion USD."
    grounding = await check_grounding(answer, sources, embedder, question=question, min_support=MIN_SUPPORT)
    assert not grounding.grounded
    assert grounding.unsupported == [0, 1]
    right = "Change the engine oil and filter every 7,500 miles [Source 1]."
    checked = await check_grounding(right, sources, embedder, question=question, min_support=MIN_SUPPORT)
    assert checked.grounded and checked.support >= MIN_SUPPORT


async def test_a_citation_to_a_source_that_does_not_support_the_sentence_is_moved(embedder, fitted_sources) -> None:
    question = "Which oil filter fits the EcoBoost?"
    sources = await fitted_sources(question, [BRAKES, OIL])
    answer = "The correct oil filter for the EcoBoost engine is the Motorcraft FL-500S [Source 1]."
    grounding = await check_grounding(answer, sources, embedder, question=question, min_support=MIN_SUPPORT)
    assert grounding.sentences[0].source == 2
    assert grounding.citations_removed == [1] and grounding.citations_added == [2]
    assert grounding.answer == "The correct oil filter for the EcoBoost engine is the Motorcraft FL-500S [Source 2]."


async def test_offsets_index_the_final_answer(embedder, fitted_sources) -> None:
    question = "Which oil filter fits the EcoBoost?"
    sources = await fitted_sources(question, [OIL])
    answer = "Use the Motorcraft FL-500S filter. Change oil and filter every 7,500 miles or six months."
    grounding = await check_grounding(answer, sources, embedder, question=question, min_support=MIN_SUPPORT)
    for sentence in grounding.sentences:
        assert grounding.answer[sentence.start : sentence.end] == sentence.text


def test_citation_forms_are_normalised() -> None:
    text, removed = normalise_citations("A [Source 2: manual.pdf]. B [2]. C [Sources 1, 2 and 9]. D [source 0].", 2)
    assert text == "A [Source 2]. B [Source 2]. C [Source 1] [Source 2]. D."
    assert removed == [0, 9]


MANUAL = (
    "2019 Ford F-150 Owner's Manual\n"
    "The oil filter for the 3.5L EcoBoost engine is the Motorcraft FL-500S. Use Motorcraft SAE 5W-30 full "
    "synthetic oil. Replace the oil filter at every oil change."
)


async def test_an_invented_clause_is_unsupported_however_close_it_embeds(embedder, fitted_sources) -> None:
    """The acceptance report's case: the claim repeats the source's terms, then adds a relative clause that no
    source says (support was 0.70, "grounded")."""
    question = "Which oil filter fits the engine?"
    sources = await fitted_sources(question, [MANUAL, BRAKES])
    answer = (
        "The engine takes the Motorcraft FL-500S oil filter [Source 1]. The engine takes the Motorcraft FL-500S oil "
        "filter, which is a motor car fuel filter that has been modified to fit the 3.5L EcoBoost engine [Source 1]."
    )
    grounding = await check_grounding(answer, sources, embedder, question=question, min_support=MIN_SUPPORT)
    assert [s.supported for s in grounding.sentences] == [True, False], grounding.as_dict()
    assert {"motor", "car", "fuel"} <= set(grounding.sentences[1].unfound_terms)
    assert grounding.sentences[1].support < MIN_SUPPORT, "the reported support says so too"
    assert not grounding.grounded


async def test_answers_written_to_fail_with_invented_reasons_and_descriptions(embedder, fitted_sources) -> None:
    question = "How often should the brake fluid be replaced?"
    sources = await fitted_sources(question, [BRAKES, OIL])
    invented = (
        "Replace the brake fluid every three years, since old fluid corrodes the calipers and boils under hard "
        "braking [Source 1]."
    )
    grounding = await check_grounding(invented, sources, embedder, question=question, min_support=MIN_SUPPORT)
    assert grounding.unsupported == [0]
    filter_question = "Which oil filter fits the EcoBoost?"
    filter_sources = await fitted_sources(filter_question, [OIL, BRAKES])
    described = "The EcoBoost takes the Motorcraft FL-500S filter, a racing filter built for diesel trucks [Source 1]."
    checked = await check_grounding(
        described, filter_sources, embedder, question=filter_question, min_support=MIN_SUPPORT
    )
    assert checked.unsupported == [0]


async def test_faithful_paraphrases_stay_supported(embedder, fitted_sources) -> None:
    question = "How often should the brake fluid be replaced?"
    sources = await fitted_sources(question, [BRAKES, OIL])
    answer = (
        "You should replace the brake fluid every three years [Source 1]. "
        "Replace the brake fluid every three years, because it absorbs moisture from the air. Check the level monthly."
    )
    grounding = await check_grounding(answer, sources, embedder, question=question, min_support=MIN_SUPPORT)
    assert grounding.grounded, grounding.as_dict()


async def test_a_sentence_joining_two_cited_sources_keeps_both_citations(embedder, fitted_sources) -> None:
    question = "Which fluids does the truck need, and how often are they changed?"
    sources = await fitted_sources(question, [BRAKES, OIL])
    answer = (
        "Use DOT 4 LV brake fluid and replace it every three years [Source 1], and change the engine oil and "
        "filter every 7,500 miles or six months [Source 2]."
    )
    grounding = await check_grounding(answer, sources, embedder, question=question, min_support=MIN_SUPPORT)
    assert grounding.grounded, grounding.as_dict()
    assert grounding.answer == answer and grounding.citations_removed == []


async def test_terms_scattered_over_a_passage_do_not_support_a_claim(embedder, fitted_sources) -> None:
    """Every word is in the passage, but not together: the window, not the bag of the passage, must hold them."""
    passage = (
        "Warranty\nThe warranty covers the battery for eight years. Dealers sell floor mats in black. "
        "The spare tire sits under the bed. Towing above 5,000 pounds needs a hitch. Lock the tailgate when parked. "
        "Wash the paint by hand. The radio has six presets. Salted winter roads leave rust on the frame."
    )
    question = "What does the warranty cover?"
    sources = await fitted_sources(question, [passage])
    answer = "The warranty covers rust on the frame, the floor mats, the tailgate and the radio [Source 1]."
    grounding = await check_grounding(answer, sources, embedder, question=question, min_support=MIN_SUPPORT)
    assert grounding.unsupported == [0], grounding.as_dict()


NUMERIC_TYPES = (
    "Numeric types\n\n| Name | Storage size | Range |\n|---|---|---|\n"
    "| smallint | 2 bytes | -32768 to +32767 |\n| integer | 4 bytes | -2147483648 to +2147483647 |"
)


async def test_a_range_with_the_wrong_sign_is_unsupported(embedder, fitted_sources) -> None:
    """The issue's case: "1 to 32768" was marked supported by a source saying "-32768 to +32767"."""
    question = "What is the range of the smallint type?"
    sources = await fitted_sources(question, [NUMERIC_TYPES])
    wrong = await check_grounding(
        "The range of the smallint type is 1 to 32768 [Source 1].",
        sources,
        embedder,
        question=question,
        min_support=MIN_SUPPORT,
    )
    assert not wrong.grounded and wrong.sentences[0].unfound_values
    right = await check_grounding(
        "The smallint type ranges from -32768 to +32767 [Source 1].",
        sources,
        embedder,
        question=question,
        min_support=MIN_SUPPORT,
    )
    assert right.grounded, right.as_dict()


async def test_a_value_in_another_unit_is_unsupported(embedder, fitted_sources) -> None:
    question = "How much storage does an integer take?"
    sources = await fitted_sources(question, [NUMERIC_TYPES])
    wrong = await check_grounding(
        "An integer takes 4 kilobytes [Source 1].", sources, embedder, question=question, min_support=MIN_SUPPORT
    )
    assert not wrong.grounded
    right = await check_grounding(
        "An integer takes 4 bytes [Source 1].", sources, embedder, question=question, min_support=MIN_SUPPORT
    )
    assert right.grounded, right.as_dict()
