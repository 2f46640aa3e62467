"""What ``carrag ingest`` was asked to ingest (files, globs, URLs) and which documents ``--prune`` removes.
A file's source id is its path relative to its argument's base (a directory, a glob's part before the
first wildcard, or a single file's folder), so it is the same from any working directory and a single
file's id is its name, as the UI sends. Two files of one run with the same id are refused.
"""

from __future__ import annotations

import glob
import itertools
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from carrag.api.schemas.documents import DocumentOut


@dataclass(frozen=True, slots=True)
class FileSource:
    path: Path
    source_id: str


@dataclass(slots=True)
class ResolvedSources:
    files: list[FileSource] = field(default_factory=list)
    urls: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)  # literal paths that do not exist: failures
    conflicts: list[tuple[str, str]] = field(default_factory=list)  # (path, why): another file has its source id
    unmatched_patterns: list[str] = field(default_factory=list)  # globs that matched nothing
    skipped: list[str] = field(default_factory=list)  # glob matches of a type Carrag cannot parse

    @property
    def file_source_ids(self) -> set[str]:
        return {source.source_id for source in self.files}


def is_url(value: str) -> bool:
    return value.lower().startswith(("http://", "https://"))


def is_glob(value: str) -> bool:
    return any(character in value for character in "*?[")


def glob_base(pattern: str) -> str:
    """The folder a glob starts from: its leading path components without a wildcard (``.`` for none)."""
    parts = Path(pattern).parts
    fixed = list(itertools.takewhile(lambda part: not is_glob(part), parts[:-1]))
    return os.path.join(*fixed) if fixed else "."


def source_id_for(path: Path, base: Path) -> str:
    """``path`` relative to ``base`` (both relative to the working directory, or absolute)."""
    return Path(os.path.relpath(os.path.abspath(path), os.path.abspath(base))).as_posix()


def resolve_sources(arguments: Iterable[str], cwd: Path, supported_extensions: Iterable[str]) -> ResolvedSources:
    """Expand globs (``**`` recurses) and directories, keep URLs as given, each source once, in order."""
    supported = {extension.lower() for extension in supported_extensions}
    resolved = ResolvedSources()
    seen: dict[str, Path] = {}  # source id → the file that has it
    urls: set[str] = set()

    def add_file(match: str, base: str) -> None:
        path = Path(os.path.abspath(cwd / match))
        source_id = source_id_for(path, cwd / base)
        holder = seen.get(source_id)
        if holder is None:
            seen[source_id] = path
            resolved.files.append(FileSource(path, source_id))
        if holder is None or holder == path:
            return
        folder = os.path.relpath(os.path.commonpath([holder.parent, path.parent]), cwd)
        other = os.path.relpath(holder, cwd)
        resolved.conflicts.append(
            (
                match,
                f"same source id {source_id!r} as {other} (the path below the folder named); ingest {folder} instead",
            )
        )

    def add_matches(matches: list[str], pattern: str, base: str) -> None:
        files = sorted(match for match in matches if (cwd / match).is_file())
        usable = [match for match in files if Path(match).suffix.lower() in supported]
        resolved.skipped.extend(source_id_for(cwd / match, cwd / base) for match in files if match not in usable)
        if not usable:
            resolved.unmatched_patterns.append(pattern)
        for match in usable:
            add_file(match, base)

    for argument in arguments:
        if is_url(argument):
            if argument not in urls:
                urls.add(argument)
                resolved.urls.append(argument)
        elif is_glob(argument):
            add_matches(glob.glob(argument, root_dir=cwd, recursive=True), argument, glob_base(argument))
        elif (cwd / argument).is_dir():
            add_matches(glob.glob(os.path.join(argument, "**", "*"), root_dir=cwd, recursive=True), argument, argument)
        elif (cwd / argument).is_file():
            # an explicit file is tried whatever its type (the error says why); its source id is its name
            add_file(argument, os.path.dirname(argument) or ".")
        else:
            resolved.missing.append(argument)
    return resolved


def is_file_document(document: DocumentOut) -> bool:
    """URL sources are never pruned: they are not files that can stop matching."""
    return document.source_type != "web" and not is_url(document.source_id)


def documents_to_prune(documents: Iterable[DocumentOut], kept_source_ids: set[str]) -> list[DocumentOut]:
    """Stored file documents whose source is not among the files this run matched."""
    return [doc for doc in documents if is_file_document(doc) and doc.source_id not in kept_source_ids]
