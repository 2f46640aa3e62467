"""Which files a folder sync reads. The path is resolved before it is checked against SYNC_ROOTS, so a
symlink cannot lead outside them; symlinked directories are not entered, a symlinked file counts only
when its target is inside. Hidden and unparseable files are left out; at most SYNC_MAX_FILES are taken.
"""

from __future__ import annotations

import fnmatch
import os
import stat
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from carrag.services.errors import Forbidden, InvalidInput, PayloadTooLarge


@dataclass(frozen=True, slots=True)
class FileEntry:
    path: Path  # absolute, inside the folder
    relative: str  # to the folder, with "/"
    size: int
    mtime_ns: int

    @property
    def source_id(self) -> str:
        return self.path.as_posix()


@dataclass(slots=True)
class FolderScan:
    files: list[FileEntry] = field(default_factory=list)
    unreadable: list[str] = field(default_factory=list)  # directories that could not be listed


def folder_root(folder: str, allowed: Sequence[Path] | None) -> Path:
    """The folder a sync reads, symlinks resolved. ``allowed`` (SYNC_ROOTS) None: any folder (the CLI's
    local mode); else it must lie under one of them: 403, before anything reveals whether it exists."""
    path = Path(folder).expanduser()
    if not path.is_absolute():
        raise InvalidInput(f"{folder!r} is not an absolute path; name the folder as the server sees it.")
    root = path.resolve()
    if allowed is not None:
        if not allowed:
            raise Forbidden("Folder sync over the API is off: SYNC_ROOTS names no directory it may read.")
        if not any(root.is_relative_to(Path(base).expanduser().resolve()) for base in allowed):
            raise Forbidden(f"{folder} is not under a directory named in SYNC_ROOTS.")
    if not root.is_dir():
        raise InvalidInput(f"{folder} is not a directory.")
    return root


def glob_matcher(patterns: Sequence[str]) -> Callable[[str], bool]:
    """Whether a path (relative, with "/") matches any of ``patterns``; none given: every path. A pattern
    without "/" matches file names at any depth (``*.md``); with "/" it matches the whole relative path,
    ``**`` standing for any number of directories (``docs/**/*.md``). Case-sensitive."""
    split = [tuple(part for part in pattern.strip().strip("/").split("/") if part) for pattern in patterns]
    split = [parts for parts in split if parts]
    if not split:
        return lambda relative: True

    def matches(relative: str) -> bool:
        parts = tuple(relative.split("/"))
        return any(_match(pattern, parts[-1:] if len(pattern) == 1 else parts) for pattern in split)

    return matches


def _match(pattern: tuple[str, ...], parts: tuple[str, ...]) -> bool:
    if not pattern:
        return not parts
    head, rest = pattern[0], pattern[1:]
    if head == "**":
        return any(_match(rest, parts[skip:]) for skip in range(len(parts) + 1))
    return bool(parts) and fnmatch.fnmatchcase(parts[0], head) and _match(rest, parts[1:])


def scan_folder(root: Path, patterns: Sequence[str], extensions: Iterable[str], max_files: int) -> FolderScan:
    """The files under ``root`` a sync takes, in path order (blocking: run it in a thread)."""
    supported = {extension.lower() for extension in extensions}
    wanted = glob_matcher(patterns)
    scan = FolderScan()

    def unreadable(error: OSError) -> None:
        scan.unreadable.append(str(error.filename))

    for directory, subdirectories, names in os.walk(root, onerror=unreadable):
        subdirectories[:] = sorted(name for name in subdirectories if not name.startswith("."))
        for name in sorted(names):
            path = Path(directory, name)
            relative = path.relative_to(root).as_posix()
            if name.startswith(".") or path.suffix.lower() not in supported or not wanted(relative):
                continue
            entry = _entry(root, path, relative)
            if entry is None:
                continue
            if len(scan.files) >= max_files:
                raise PayloadTooLarge(
                    f"{root} holds more than {max_files:,} files to sync; the limit is SYNC_MAX_FILES. Narrow "
                    "the sync with --glob (globs in POST /sync) or sync its subfolders one by one."
                )
            scan.files.append(entry)
    return scan


def _entry(root: Path, path: Path, relative: str) -> FileEntry | None:
    """The file as a sync reads it; None when it is not a regular file inside ``root`` (a symlink leading
    out, a socket) or vanished meanwhile."""
    try:
        if path.is_symlink() and not path.resolve().is_relative_to(root):
            return None
        status = path.stat()
    except OSError:
        return None
    if not stat.S_ISREG(status.st_mode):
        return None
    return FileEntry(path, relative, status.st_size, status.st_mtime_ns)
