import json
from pathlib import Path

import pytest

from carrag.bench.answer_questions import DEFAULT_QUESTIONS, documents_of, load_questions
from carrag.bench.answer_runner import parse_answer_modes
from carrag.bench.answer_scoring import contains_phrase, normalise
from carrag.services.errors import InvalidInput
from carrag.services.parsers import parse_file


def write(tmp_path: Path, *records: dict) -> Path:
    path = tmp_path / "questions.jsonl"
    path.write_text("".join(json.dumps(record) + "\n" for record in records))
    return path


ANSWERABLE = {
    "id": "a",
    "documents": ["x.md"],
    "question": "Q?",
    "answerable": True,
    "accepted": ["yes", ["one", "two"]],
    "evidence": ["e"],
    "kind": "yesno",
    "history": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}],
}


def test_questions_load_with_history_and_list_answers(tmp_path: Path) -> None:
    unanswerable = {"id": "u", "documents": ["y.md", "x.md"], "question": "Q2?", "answerable": False}
    questions = load_questions(write(tmp_path, ANSWERABLE, unanswerable))
    assert questions[0].accepted == ("yes", ("one", "two"))
    assert questions[0].history[1] == {"role": "assistant", "content": "hello"}
    assert questions[1].kind == "factoid" and questions[1].evidence == ()
    assert documents_of(questions) == ["x.md", "y.md"]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"evidence": []}, "needs accepted answers and evidence"),
        ({"answerable": False}, "has no accepted answers"),
        ({"documents": []}, "at least one document"),
        ({"question": None}, "malformed"),
    ],
)
def test_malformed_questions_are_refused_with_their_line(tmp_path: Path, change: dict, message: str) -> None:
    with pytest.raises(InvalidInput, match=message) as error:
        load_questions(write(tmp_path, ANSWERABLE | change))
    assert "questions.jsonl:1" in error.value.message


def test_duplicate_ids_are_refused(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="duplicate question ids a"):
        load_questions(write(tmp_path, ANSWERABLE, ANSWERABLE))


def test_answer_modes() -> None:
    assert parse_answer_modes("all") == parse_answer_modes(None) == ["generate", "extract", "auto"]
    assert parse_answer_modes("extract, generate") == ["extract", "generate"]
    with pytest.raises(InvalidInput, match="Unknown answer mode"):
        parse_answer_modes("extract,magic")


def test_the_development_set_is_complete() -> None:
    questions = load_questions(DEFAULT_QUESTIONS)
    kinds = {question.kind for question in questions}
    assert len(questions) >= 50
    assert sum(not question.answerable for question in questions) >= 10
    assert {"factoid", "number", "list", "table", "yesno", "followup"} <= kinds
    assert all(question.history for question in questions if question.kind == "followup")
    formats = {Path(document).suffix for document in documents_of(questions)}
    assert {".pdf", ".html", ".md", ".docx", ".xlsx", ".txt"} <= formats


HELD_OUT = DEFAULT_QUESTIONS.with_name("corpus_heldout.jsonl")
HELD_OUT_2 = DEFAULT_QUESTIONS.with_name("corpus_heldout2.jsonl")
CORPUS = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "corpus"


def test_the_held_out_set_is_complete_and_uses_other_documents() -> None:
    questions = load_questions(HELD_OUT)
    assert len(questions) >= 40
    assert sum(not question.answerable for question in questions) >= 10
    assert {"factoid", "number", "list", "table", "yesno", "followup"} <= {question.kind for question in questions}
    assert not set(documents_of(questions)) & set(documents_of(load_questions(DEFAULT_QUESTIONS)))
    formats = {Path(document).suffix for document in documents_of(questions)}
    assert {".pdf", ".html", ".md", ".docx", ".xlsx", ".txt"} <= formats


def test_the_second_held_out_set_is_complete_and_uses_documents_the_other_sets_do_not() -> None:
    questions = load_questions(HELD_OUT_2)
    assert len(questions) >= 35
    assert sum(not question.answerable for question in questions) >= 10
    assert {"factoid", "number", "list", "table", "yesno", "followup"} <= {question.kind for question in questions}
    assert all(question.history for question in questions if question.kind == "followup")
    others = documents_of(load_questions(DEFAULT_QUESTIONS)) + documents_of(load_questions(HELD_OUT))
    # ideas-page.html has one held-out question; the questions here ask other facts of it.
    assert set(documents_of(questions)) & set(others) == {"html/unstructured/ideas-page.html"}


@pytest.mark.skipif(not CORPUS.is_dir(), reason="the shared corpus is not next to this checkout")
@pytest.mark.parametrize(
    "questions_file", [DEFAULT_QUESTIONS, HELD_OUT, HELD_OUT_2], ids=["dev", "held-out", "held-out-2"]
)
def test_gold_answers_and_evidence_occur_in_the_parsed_documents(questions_file: Path) -> None:
    """Every evidence string and at least one accepted answer (yes/no aside) is in the text Carrag's parsers produce."""
    texts: dict[str, str] = {}
    missing = []
    for question in load_questions(questions_file):
        for document in question.documents:
            if document not in texts:
                texts[document] = parse_file((CORPUS / document).read_bytes(), Path(document).name).text
        text = "\n".join(texts[document] for document in question.documents)
        missing += [
            (question.id, evidence) for evidence in question.evidence if normalise(evidence) not in normalise(text)
        ]
        spelled_out = [entry for entry in question.accepted if entry not in ("yes", "no")]
        if spelled_out and not any(
            all(contains_phrase(text, part) for part in ([entry] if isinstance(entry, str) else entry))
            for entry in spelled_out
        ):
            missing.append((question.id, spelled_out))
    assert missing == []
