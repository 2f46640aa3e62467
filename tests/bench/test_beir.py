from pathlib import Path

import pytest

from carrag.bench.beir import load_beir, load_qrels
from carrag.services.errors import InvalidInput
from tests.conftest import FIXTURES

TINY = FIXTURES / "beir_tiny"


def test_loads_corpus_queries_and_qrels() -> None:
    dataset = load_beir(TINY, "test")
    assert dataset.name == "beir_tiny" and dataset.split == "test"
    assert len(dataset.corpus) == 12
    assert dataset.corpus[0].doc_id == "d1" and dataset.corpus[0].title == "Changing engine oil"
    assert list(dataset.queries) == ["q1", "q2", "q3", "q4"], "the unjudged q5 cannot be scored and is left out"
    assert dataset.qrels["q3"] == {"d9": 1}
    assert list(dataset.limit_queries(2).queries) == ["q1", "q2"]


def test_qrels_without_header(tmp_path: Path) -> None:
    path = tmp_path / "qrels.tsv"
    path.write_text("q1\td1\t2\nq1\td2\t0\n")
    assert load_qrels(path) == {"q1": {"d1": 2, "d2": 0}}


@pytest.mark.parametrize(
    ("missing", "message"),
    [("corpus.jsonl", "corpus.jsonl is missing"), ("qrels/test.tsv", "no qrels for split 'test'")],
)
def test_incomplete_dataset_is_refused_clearly(tmp_path: Path, missing: str, message: str) -> None:
    for name in ("corpus.jsonl", "queries.jsonl", "qrels/test.tsv"):
        target = tmp_path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes((TINY / name).read_bytes())
    (tmp_path / missing).unlink()
    with pytest.raises(InvalidInput, match=message):
        load_beir(tmp_path, "test")


def test_unknown_split_lists_the_available_ones() -> None:
    with pytest.raises(InvalidInput, match="available: test"):
        load_beir(TINY, "train")


def test_bad_json_line_names_the_line(tmp_path: Path) -> None:
    (tmp_path / "qrels").mkdir()
    (tmp_path / "corpus.jsonl").write_text('{"_id": "d1", "text": "x"}\n{broken\n')
    (tmp_path / "queries.jsonl").write_text('{"_id": "q1", "text": "x"}\n')
    (tmp_path / "qrels" / "test.tsv").write_text("q1\td1\t1\n")
    with pytest.raises(InvalidInput, match=r"corpus.jsonl:2 is not valid JSON"):
        load_beir(tmp_path, "test")
