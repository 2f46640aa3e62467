"""`carrag eval-answers` end to end: a question file over a few small documents, the extractive LLM
(LLM=none, fast and deterministic), the JSON report."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from carrag.cli.main import app
from carrag.services.settings import Settings

DOCUMENTS = {
    "notes/retention.md": "# Backups\n\nThe snapshot retention period is thirty days. Snapshots are taken nightly.\n",
    "notes/reset.md": "# FAQ\n\nTo reset a password, open Settings and choose Reset.\n",
    "tables/cups.csv": "Team,Location,Stanley Cups\nBlues,STL,1\nMaple Leafs,TOR,13\n",
}
QUESTIONS = [
    {
        "id": "retention",
        "documents": ["notes/retention.md", "notes/reset.md"],
        "question": "How long is the snapshot retention period?",
        "answerable": True,
        "accepted": ["thirty days", "30 days"],
        "evidence": ["retention period is thirty days"],
        "kind": "factoid",
    },
    {
        "id": "leafs",
        "documents": ["tables/cups.csv"],
        "question": "How many Stanley Cups have the Maple Leafs won?",
        "history": [{"role": "user", "content": "Which teams are listed?"}, {"role": "assistant", "content": "Two."}],
        "answerable": True,
        "accepted": ["13"],
        "evidence": ["Maple Leafs"],
        "kind": "followup",
    },
    {
        "id": "mongolia",
        "documents": ["notes/reset.md"],
        "question": "What is the capital of Mongolia?",
        "answerable": False,
    },
]


def test_eval_answers_scores_every_question_and_writes_json(tmp_path: Path) -> None:
    root = tmp_path / "corpus"
    for relative, text in DOCUMENTS.items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(text)
    questions = tmp_path / "questions.jsonl"
    questions.write_text("".join(json.dumps(question) + "\n" for question in QUESTIONS))
    report_path = tmp_path / "report.json"
    env: dict[str, str | None] = {name.upper(): None for name in Settings.model_fields}
    env |= {"DATA_DIR": str(tmp_path / "data"), "LLM": "none", "COLUMNS": "250", "API_KEYS": "a-key"}

    result = CliRunner().invoke(
        app,
        ["eval-answers", "--questions", str(questions), "--documents", str(root), "--mode", "generate,extract"]
        + ["--json", str(report_path)],
        env=env,
    )

    assert result.exit_code == 0, result.output
    assert "answerable accuracy" in result.output and "refused unanswerable" in result.output
    report = json.loads(report_path.read_text())
    assert (report["questions"], report["documents"]) == (3, 3) and report["chunks"] >= 3
    assert [mode["mode"] for mode in report["modes"]] == ["generate", "extract"]
    assert all(mode["complete"] for mode in report["modes"])
    assert not report_path.with_name("report.json.partial").exists()
    assert not (tmp_path / "data").exists(), "the evaluation store is a temporary one"
    for mode in report["modes"]:
        assert (mode["answerable"], mode["unanswerable"], mode["answers"], mode["errors"]) == (2, 1, 3, 0)
        assert 0.0 <= mode["answerable_accuracy"] <= 1.0 and mode["median_seconds"] > 0
    answers = {item["id"]: item for item in report["answers"]["generate"]}
    assert set(answers) == {"retention", "leafs", "mongolia"}
    # The extractive answerer quotes the best passage: the retention period is in it.
    assert "thirty days" in answers["retention"]["answer"] and answers["retention"]["correct"] is True
    assert all(item["error"] is None for item in answers.values()), "API_KEYS does not lock the in-process client out"


def test_eval_answers_refuses_a_missing_document(tmp_path: Path) -> None:
    questions = tmp_path / "questions.jsonl"
    questions.write_text(json.dumps(QUESTIONS[2]) + "\n")
    env: dict[str, str | None] = {name.upper(): None for name in Settings.model_fields}
    env |= {"DATA_DIR": str(tmp_path / "data"), "LLM": "none"}
    result = CliRunner().invoke(
        app, ["eval-answers", "--questions", str(questions), "--documents", str(tmp_path)], env=env
    )
    assert result.exit_code == 2
    assert "not under" in result.output and "notes/reset.md" in result.output
