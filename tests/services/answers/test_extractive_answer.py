from __future__ import annotations

from carrag.services.answers.evidence import terms
from carrag.services.answers.extractive import extract_answer
from carrag.services.answers.scoring import ScoredPassages, ScoredSentence, score_passages
from carrag.services.answers.sentences import Sentence, code_spans

MANUAL = (
    "Engine oil service\n"
    "This section explains routine maintenance of the engine. Check the oil level every month with the dipstick. "
    "The correct oil filter for the 3.5L EcoBoost engine is the Motorcraft FL-500S. "
    "Dispose of used oil at a recycling centre."
)
TABLE = "## Sheet: Sizes\n\nproduct,size,colour\nrubber duck,large,yellow\nrubber duck,small,blue\nfrog,medium,green"


async def test_the_sentence_that_answers_not_the_first_one(embedder) -> None:
    scored = await score_passages("Which oil filter fits the EcoBoost?", [MANUAL], embedder)
    answer = extract_answer(scored)
    assert answer.text.startswith("The correct oil filter for the 3.5L EcoBoost engine is the Motorcraft FL-500S.")
    assert answer.text.count("[Source 1]") == len(answer.chosen)
    (start, end) = answer.highlights[0][0]
    assert MANUAL[start:end] == "The correct oil filter for the 3.5L EcoBoost engine is the Motorcraft FL-500S."


async def test_table_rows_are_answers_and_cite_their_source(embedder) -> None:
    scored = await score_passages("What colour is the small rubber duck?", [MANUAL, TABLE], embedder)
    answer = extract_answer(scored)
    assert "product: rubber duck; size: small; colour: blue [Source 2]" in answer.text.split("\n")
    assert all(sentence.source == 1 for sentence in answer.chosen)
    start, end = answer.highlights[1][0]
    assert TABLE[start:end] == "rubber duck,small,blue", "the highlight is the row itself"


def scored_by_hand(scores: list[tuple[int, str, float]]) -> ScoredPassages:
    """(source, sentence text, cosine) in text order; every sentence shares no term with the question."""
    sentences, offset = [], 0
    for source, text, cosine in scores:
        sentence = Sentence(offset, offset + len(text), text)
        sentences.append(ScoredSentence(source, sentence, terms(text), cosine, 0.0))
        offset += len(text) + 1
    return ScoredPassages("question", ["question"], sentences, {})


def test_sentences_of_one_passage_keep_document_order() -> None:
    scored = scored_by_hand(
        [
            (0, "First fact about the engine oil.", 0.80),
            (0, "Second fact about the oil filter.", 0.90),
            (0, "Unrelated remark about seats.", 0.10),
        ]
    )
    answer = extract_answer(scored)
    assert answer.text == "First fact about the engine oil. [Source 1] Second fact about the oil filter. [Source 1]"
    assert answer.highlights == {0: [(0, 32), (33, 66)]}


def test_sentences_of_several_passages_are_grouped_best_source_first() -> None:
    scored = scored_by_hand(
        [
            (0, "Weaker sentence in passage number one.", 0.80),
            (1, "Best sentence in source two.", 0.90),
            (1, "Same sentence repeated here.", 0.10),
            (2, "Best sentence in source two.", 0.90),
        ]
    )
    answer = extract_answer(scored)
    assert answer.text == "Best sentence in source two. [Source 2] Weaker sentence in passage number one. [Source 1]"


async def test_nothing_to_extract_from(embedder) -> None:
    scored = await score_passages("anything", [], embedder)
    assert extract_answer(scored).text == ""


def test_a_sentence_ending_in_a_colon_brings_what_it_announces() -> None:
    scored = scored_by_hand(
        [
            (0, "To install the package with pip, run:", 0.9),
            (0, "pip install docling", 0.1),
            (0, "Unrelated remark about licensing terms.", 0.1),
        ]
    )
    assert (
        extract_answer(scored).text == "To install the package with pip, run: [Source 1] pip install docling [Source 1]"
    )


# The README's own case: Carrag's docs repeat the example question inside curl examples.
DOCS_WITH_EXAMPLE = (
    "## Ask a question\n\n"
    "```bash\n"
    "curl -H 'Content-Type: application/json' -d '{\"question\": \"Which oil filter fits the EcoBoost?\"}' "
    "http://127.0.0.1:8000/query\n"
    "```\n"
)


async def test_code_that_repeats_the_question_is_not_an_answer(embedder) -> None:
    scored = await score_passages("Which oil filter fits the EcoBoost?", [DOCS_WITH_EXAMPLE, MANUAL], embedder)
    answer = extract_answer(scored)
    assert answer.text.startswith("The correct oil filter for the 3.5L EcoBoost engine is the Motorcraft FL-500S.")
    assert "curl" not in answer.text and all(sentence.source == 1 for sentence in answer.chosen)


def test_code_spans_cover_fenced_blocks_and_a_block_begun_in_the_previous_chunk() -> None:
    text = 'echo "tail of a block"\n```\nProse between.\n```python\nprint(1)\n```\nMore prose.'
    spans = code_spans(text)
    assert [text[a:b] for a, b in spans] == ['echo "tail of a block"\n```', "```python\nprint(1)\n```"]
    assert code_spans("No code here.") == []
    assert code_spans("Prose.\n```bash\nls") == [(7, len("Prose.\n```bash\nls"))], "an unclosed block runs to the end"


async def test_code_announced_by_a_sentence_is_part_of_the_answer(embedder) -> None:
    install = "## Installation\n\nTo use Carrag, install it from your package manager, e.g. pip:\n\n```bash\npip install carrag\n```\n"
    answer = extract_answer(await score_passages("How do I install Carrag with pip?", [install], embedder))
    assert answer.text.startswith("To use Carrag, install it from your package manager, e.g. pip: [Source 1]")
    assert "pip install carrag" in answer.text


async def test_a_who_answer_saying_she_brings_the_sentence_that_names_her(embedder) -> None:
    question = "Who greeted Prince Vasili Kuragin at her reception?"
    book = (
        "It was in July, 1805, and the speaker was the well-known Anna Pavlovna Scherer, maid of honor. "
        "With these words she greeted Prince Vasili Kuragin, who was the first to arrive at her reception. "
        "The prince answered in French."
    )
    scored = await score_passages(question, [book], embedder)
    answer = extract_answer(scored, question=question, min_focus=0.3)
    assert answer.text.startswith("It was in July, 1805, and the speaker was the well-known Anna Pavlovna Scherer")
    assert "she greeted Prince Vasili Kuragin" in answer.text
