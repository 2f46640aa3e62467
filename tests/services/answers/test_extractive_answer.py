from __future__ import annotations

from carrag.services.answers.extractive import chosen_units, extract_answer
from carrag.services.answers.features import Candidate
from carrag.services.answers.model import load_model
from carrag.services.answers.units import Unit, read_units

MANUAL = (
    "Engine oil service\n"
    "This section explains routine maintenance of the engine. Check the oil level every month with the dipstick. "
    "The correct oil filter for the 3.5L EcoBoost engine is the Motorcraft FL-500S. "
    "Dispose of used oil at a recycling centre."
)
TABLE = "## Sheet: Sizes\n\nproduct,size,colour\nrubber duck,large,yellow\nrubber duck,small,blue\nfrog,medium,green"


async def test_the_unit_that_answers_not_the_first_one(read) -> None:
    reading = await read("Which oil filter fits the EcoBoost?", [MANUAL])
    answer = extract_answer(load_model().rank(reading), companion=1.0)
    assert answer.text == "The correct oil filter for the 3.5L EcoBoost engine is the Motorcraft FL-500S. [Source 1]"
    (start, end) = answer.highlights[0][0]
    assert MANUAL[start:end] == "The correct oil filter for the 3.5L EcoBoost engine is the Motorcraft FL-500S."


async def test_a_table_row_is_quoted_with_its_column_names(read) -> None:
    reading = await read("What colour is the small rubber duck?", [MANUAL, TABLE])
    answer = extract_answer(load_model().rank(reading), companion=1.0)
    assert answer.text == "product: rubber duck; size: small; colour: blue [Source 2]"
    start, end = answer.highlights[1][0]
    assert TABLE[start:end] == "rubber duck,small,blue", "the highlight is the row itself"


def by_hand(*units: tuple[int, str, float]) -> list[Candidate]:
    """(source, text, probability), most probable first: candidates made without a model."""
    candidates, offset = [], 0
    for source, text, probability in units:
        candidates.append(Candidate(source, Unit("sentence", offset, offset + len(text), text), {}, None, probability))
        offset += len(text) + 1
    return sorted(candidates, key=lambda c: -c.probability)


def test_companions_join_only_when_the_model_finds_them_as_likely() -> None:
    ranked = by_hand(
        (0, "First fact about the engine oil.", 0.8), (0, "Second fact about the filter.", 0.9), (0, "Seats.", 0.1)
    )
    answer = extract_answer(ranked, companion=0.5)
    assert answer.text == "First fact about the engine oil. [Source 1] Second fact about the filter. [Source 1]"
    assert answer.highlights == {0: [(0, 32), (33, 62)]}, "one passage keeps its document order"
    assert extract_answer(ranked, companion=0.95).text == "Second fact about the filter. [Source 1]"


def test_companions_come_from_the_best_units_passage() -> None:
    ranked = by_hand(
        (0, "Weaker sentence in passage number one.", 0.80),
        (1, "Best sentence in source two.", 0.90),
        (1, "Another sentence of source two.", 0.85),
    )
    answer = extract_answer(ranked, companion=0.5)
    assert answer.text == "Best sentence in source two. [Source 2] Another sentence of source two. [Source 2]"
    assert set(answer.highlights) == {1}


def test_an_item_of_a_chosen_list_is_not_quoted_twice() -> None:
    units = read_units("The nut comes in two types:\n\n- all-metal\n- fiber lock")
    whole = next(unit for unit in units if unit.kind == "list")
    item = next(unit for unit in units if unit.kind == "item")
    ranked = [Candidate(0, whole, {}, None, 0.9), Candidate(0, item, {}, None, 0.8)]
    assert chosen_units(ranked, companion=0.5) == ranked[:1]
    assert extract_answer(ranked, 0.5).text == "The nut comes in two types: all-metal; fiber lock [Source 1]"


def test_nothing_to_extract_from() -> None:
    assert extract_answer([], companion=0.5).text == ""


# The README's own case: Carrag's docs repeat the example question inside curl examples.
DOCS_WITH_EXAMPLE = (
    "## Ask a question\n\n"
    "```bash\n"
    "curl -H 'Content-Type: application/json' -d '{\"question\": \"Which oil filter fits the EcoBoost?\"}' "
    "http://127.0.0.1:8000/query\n"
    "```\n"
)


async def test_code_that_repeats_the_question_is_not_the_answer(read) -> None:
    reading = await read("Which oil filter fits the EcoBoost?", [DOCS_WITH_EXAMPLE, MANUAL])
    answer = extract_answer(load_model().rank(reading), companion=1.0)
    assert answer.text.startswith("The correct oil filter for the 3.5L EcoBoost engine is the Motorcraft FL-500S.")
    assert "curl" not in answer.text


async def test_code_is_quoted_with_the_line_announcing_it(read) -> None:
    install = "## Installation\n\nTo use Carrag, install it from your package manager, e.g. pip:\n\n```bash\npip install carrag\n```\n"
    reading = await read("How do I install Carrag with pip?", [install])
    answer = extract_answer(load_model().rank(reading), companion=1.0)
    assert "pip install carrag" in answer.text
    assert answer.text.startswith("To use Carrag, install it from your package manager, e.g. pip:")
