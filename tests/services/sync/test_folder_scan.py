"""Which files a folder sync takes (carrag/services/sync/folder_scan.py): globs, hidden and unsupported
files, symlinks."""

from __future__ import annotations

from pathlib import Path

import pytest

from carrag.services.sync.folder_scan import glob_matcher, scan_folder


@pytest.mark.parametrize(
    ("patterns", "path", "matches"),
    [
        ([], "any/thing.md", True),
        (["*.md"], "deep/in/notes.md", True),
        (["*.md"], "notes.txt", False),
        (["docs/*.md"], "docs/a.md", True),
        (["docs/*.md"], "docs/sub/a.md", False),
        (["docs/**/*.md"], "docs/a.md", True),
        (["docs/**/*.md"], "docs/sub/deeper/a.md", True),
        (["docs/**/*.md"], "other/docs/a.md", False),
        (["**/guides/*.pdf"], "x/y/guides/manual.pdf", True),
        (["*.MD"], "notes.md", False),
        (["*.txt", "report-??.pdf"], "a/report-07.pdf", True),
    ],
)
def test_globs(patterns: list[str], path: str, matches: bool) -> None:
    assert glob_matcher(patterns)(path) is matches


def test_the_scan_leaves_out_hidden_unsupported_and_escaping_files(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "sub").mkdir(parents=True)
    (root / ".git").mkdir()
    for relative in ("a.md", "sub/b.txt", ".hidden.md", ".git/c.md", "picture.png"):
        (root / relative).write_text("text")
    (tmp_path / "outside.md").write_text("secret")
    (root / "escape.md").symlink_to(tmp_path / "outside.md")
    (root / "linked-dir").symlink_to(tmp_path, target_is_directory=True)
    scan = scan_folder(root, [], [".md", ".txt"], max_files=10)
    assert [entry.relative for entry in scan.files] == ["a.md", "sub/b.txt"]
    assert scan.files[0].size == 4 and scan.unreadable == []
