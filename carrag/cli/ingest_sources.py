"""What ``carrag ingest`` was asked to ingest: files, globs and URLs, resolved against the working
directory; and which stored documents ``--prune`` removes.

A file's source id is its path relative to the working directory, normalised (``./docs/a.md`` and
``docs/a.md`` are both ``docs/a.md``; a file outside the working directory keeps its absolute
path), so re-running the same command finds the same documents.
"""

from __future__ import annotations

import glob
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
    unmatched_patterns: list[str] = field(default_factory=list)  # globs that matched nothing
    skipped: list[str] = field(default_factory=list)  # glob matches of a type Carrag cannot parse

    @property
    def file_source_ids(self) -> set[str]:
        return {source.source_id for source in self.files}


def is_url(value: str) -> bool:
    return value.lower().startswith(("http://", "https://"))


def is_glob(value: str) -> bool:
    return any(character in value for character in "*?[")


def source_id_for(path: Path, cwd: Path) -> str:
    absolute = Path(os.path.abspath(cwd / path))
    try:
        return absolute.relative_to(Path(os.path.abspath(cwd))).as_posix()
    except ValueError:
        return absolute.as_posix()


def resolve_sources(arguments: Iterable[str], cwd: Path, supported_extensions: Iterable[str]) -> ResolvedSources:
    """Expand globs (``**`` recurses) and directories, keep URLs as given, each source once, in order."""
    supported = {extension.lower() for extension in supported_extensions}
    resolved = ResolvedSources()
    seen: set[str] = set()

    def add_file(path: Path) -> None:
        source = FileSource(Path(os.path.abspath(cwd / path)), source_id_for(path, cwd))
        if source.source_id not in seen:
            seen.add(source.source_id)
            resolved.files.append(source)

    def add_matches(matches: list[str], pattern: str) -> None:
        files = sorted(match for match in matches if (cwd / match).is_file())
        usable = [match for match in files if Path(match).suffix.lower() in supported]
        resolved.skipped.extend(source_id_for(Path(match), cwd) for match in files if match not in usable)
        if not usable:
            resolved.unmatched_patterns.append(pattern)
        for match in usable:
            add_file(Path(match))

    for argument in arguments:
        if is_url(argument):
            if argument not in seen:
                seen.add(argument)
                resolved.urls.append(argument)
        elif is_glob(argument):
            add_matches(glob.glob(argument, root_dir=cwd, recursive=True), argument)
        elif (cwd / argument).is_dir():
            add_matches(glob.glob(os.path.join(argument, "**", "*"), root_dir=cwd, recursive=True), argument)
        elif (cwd / argument).is_file():
            add_file(Path(argument))  # an explicit file is tried whatever its type: the error says why
        else:
            resolved.missing.append(argument)
    return resolved


def is_file_document(document: DocumentOut) -> bool:
    """URL sources are never pruned: they are not files that can stop matching."""
    return document.source_type != "web" and not is_url(document.source_id)


def documents_to_prune(documents: Iterable[DocumentOut], kept_source_ids: set[str]) -> list[DocumentOut]:
    """Stored file documents whose source is not among the files this run matched."""
    return [doc for doc in documents if is_file_document(doc) and doc.source_id not in kept_source_ids]
