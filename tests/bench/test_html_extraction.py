from __future__ import annotations

from pathlib import Path

from carrag.bench.html_extraction import content_lines, is_link_dominated, run, summary, token_f1
from carrag.services.settings import Settings
from tests.services.parsers.formats import REAL


def test_link_dominated_lines_are_not_content() -> None:
    assert is_link_dominated("- [Afrikaans](https://af.wikipedia.org/wiki/Eend)")
    assert is_link_dominated("| National | - [United States](https://id.loc.gov/x) - [France](https://bnf.fr/y) |")
    assert not is_link_dominated("Ducks are [waterfowl](/wiki/Waterfowl) found in fresh water and sea water.")
    assert content_lines("# Duck\n\n- [Deutsch](/de)\nDucks swim.\n") == ["# Duck", "Ducks swim."]


def test_token_f1() -> None:
    assert token_f1(["a", "b"], ["a", "b"]) == 1.0
    assert token_f1(["a", "x"], ["a", "b"]) == 0.5
    assert token_f1([], ["a"]) == 0.0


def test_scores_a_folder_with_references(tmp_path: Path) -> None:
    (tmp_path / "groundtruth").mkdir()
    (tmp_path / "example_03.html").write_bytes((REAL / "example_03.html").read_bytes())
    (tmp_path / "groundtruth" / "example_03.html.md").write_text((REAL / "example_03.groundtruth.md").read_text())
    scores = run(tmp_path, Settings())
    assert [score.path for score in scores] == ["upload", "url"]
    upload = summary(scores, "upload")
    assert upload["pages"] == 1 and upload["f1_content"] == 1.0 and upload["boilerplate_chunks"] == 0
