import json
from pathlib import Path

import pytest

from carrag.bench.answer_questions import PARTS, documents_of, load_questions
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


def test_the_development_and_validation_sets_are_complete_and_split_by_document() -> None:
    development, validation = (load_questions(PARTS[name]) for name in ("dev", "validation"))
    for questions in (development, validation):
        kinds = {question.kind for question in questions}
        assert len(questions) >= 150
        assert sum(not question.answerable for question in questions) >= 30
        assert {"factoid", "number", "list", "table", "yesno", "followup", "topic_change"} <= kinds
        assert all(question.history for question in questions if question.kind in ("followup", "topic_change"))
        formats = {Path(document).suffix for document in documents_of(questions)}
        assert {".pdf", ".html", ".md", ".docx", ".txt"} <= formats
    # A validation question may name a development document beside its own (a distractor); a development
    # question never names a validation document.
    validation_documents = {d for q in validation for d in q.documents} - {d for q in development for d in q.documents}
    assert len(validation_documents) >= len({d for q in development for d in q.documents}) / 2
    assert all(any(d in validation_documents for d in q.documents) for q in validation)


SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "data"


@pytest.mark.slow
@pytest.mark.skipif(not SHARED.is_dir(), reason="the shared data is not next to this checkout")
@pytest.mark.parametrize("part", list(PARTS))
def test_gold_answers_and_evidence_occur_in_the_parsed_documents(part: str) -> None:
    """Every evidence string and at least one accepted answer (yes/no aside) is in the text Carrag's parsers produce."""
    texts: dict[str, str] = {}
    missing = []
    for question in load_questions(PARTS[part]):
        for document in question.documents:
            if document not in texts:
                texts[document] = parse_file((SHARED / document).read_bytes(), Path(document).name).text
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
