from pathlib import Path

from carrag.bench.answer_questions import Question
from carrag.bench.answer_runner import answer_eval_settings, evaluate_answers
from tests.conftest import close_container, make_settings, open_container


async def test_every_answer_is_checkpointed_with_a_partial_summary(tmp_path: Path, embedding_backend) -> None:
    root = tmp_path / "corpus"
    root.mkdir()
    (root / "backup.md").write_text("# Backups\n\nThe snapshot retention period is thirty days.\n")
    questions = [
        Question(
            "retention",
            ("backup.md",),
            "How long are snapshots kept?",
            True,
            "factoid",
            ("thirty days",),
            ("thirty days",),
        ),
        Question("mongolia", ("backup.md",), "What is the capital of Mongolia?", False, "unanswerable"),
    ]
    settings = answer_eval_settings(make_settings(tmp_path), tmp_path / "answers.db")
    container = await open_container(settings, embedding_backend)
    snapshots: list[list[tuple[str, bool, int]]] = []
    try:
        report = await evaluate_answers(
            container,
            questions,
            root,
            ["extract", "generate"],
            checkpoint=lambda report: snapshots.append(
                [(summary.mode, summary.complete, summary.answers) for summary in report.summaries]
            ),
        )
    finally:
        await close_container(container)
    assert snapshots == [
        [("extract", False, 1)],
        [("extract", True, 2)],
        [("extract", True, 2), ("generate", False, 1)],
        [("extract", True, 2), ("generate", True, 2)],
    ]
    assert [summary.mode for summary in report.summaries] == ["extract", "generate"]
    assert report.as_dict()["modes"][1]["complete"] is True
    assert [item.score.question_id for item in report.answers["generate"]] == ["retention", "mongolia"]
