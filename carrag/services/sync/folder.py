"""Keeping a folder in sync: new files ingested, changed ones re-ingested, gone ones deleted. A file whose
size and time match its record costs a ``stat``; one whose hash matches only has them updated. Deletions
come first, so a renamed file is not refused as a copy of its old self, and are skipped when a directory
could not be listed (its files would look gone).
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import logging
from dataclasses import dataclass, field
from pathlib import Path

from carrag.services.errors import CarragError
from carrag.services.models import DocumentRecord, MetadataValue
from carrag.services.parsers import SUPPORTED_EXTENSIONS
from carrag.services.sync import ownership
from carrag.services.sync.folder_scan import FileEntry, scan_folder
from carrag.services.sync.ingesting import SourceSync, admitted, for_each, outcome_of
from carrag.services.sync.ownership import holdings, sync_metadata
from carrag.services.vocabulary import SyncOutcome

logger = logging.getLogger(__name__)

INTERNAL_ERROR = "internal error; the service logged it"
# Files looked at once: a touched file costs a hash and a metadata write (on Elasticsearch a write waits for
# a refresh), so many at a time; the ones that are ingested take MAX_CONCURRENT_INGESTS slots of their own.
FILE_WORKERS = 16


@dataclass
class FolderSync(SourceSync):
    root: Path
    patterns: list[str]
    # sha256 → the file read first with those bytes, in this run
    read_first: dict[str, str] = field(init=False, default_factory=dict)
    total: int = field(init=False, default=0)

    def __post_init__(self) -> None:
        self.ingest_slots = asyncio.Semaphore(self.settings.max_concurrent_ingests)

    async def run(self) -> None:
        scan = await asyncio.to_thread(
            scan_folder, self.root, self.patterns, SUPPORTED_EXTENSIONS, self.settings.sync_max_files
        )
        self.held = await holdings(self.store, self.collection_id, self.report.root)
        present = {entry.source_id for entry in scan.files}
        gone = [document for source, document in self.held.owned.items() if source not in present]
        if gone and scan.unreadable:
            self.report.note = (
                f"{len(gone)} documents whose files were not found were kept: {len(scan.unreadable)} "
                f"directories could not be read ({', '.join(scan.unreadable[:3])})."
            )
            gone = []
        self.total = len(scan.files) + len(gone)
        self.progress(0, self.total)
        for document in gone:
            await self._delete(document)
        await for_each(scan.files, self._sync_file, FILE_WORKERS)

    def _relative(self, source_id: str) -> str:
        return Path(source_id).relative_to(self.root).as_posix()

    def _finished(self, source: str, outcome: SyncOutcome, document_id: str | None, detail: str | None) -> None:
        self.report.add(source, outcome, document_id, detail)
        self.done += 1
        self.progress(self.done, self.total)

    async def _delete(self, document: DocumentRecord, detail: str = "its file is gone") -> None:
        try:
            await self.store.delete_document(document.document_id)
        except CarragError as exc:
            self._finished(self._relative(document.source_id), SyncOutcome.FAILED, document.document_id, exc.message)
        else:
            self._finished(self._relative(document.source_id), SyncOutcome.DELETED, document.document_id, detail)

    async def _sync_file(self, entry: FileEntry) -> None:
        try:
            outcome, document_id, detail = await self._outcome(entry)
        except CarragError as exc:
            outcome, document_id, detail = SyncOutcome.FAILED, None, exc.message
        except OSError as exc:
            outcome, document_id, detail = SyncOutcome.FAILED, None, f"cannot read the file: {exc.strerror or exc}"
        except Exception:
            logger.exception("a file failed to sync", extra={"source_id": entry.source_id})
            outcome, document_id, detail = SyncOutcome.FAILED, None, INTERNAL_ERROR
        self._finished(entry.relative, outcome, document_id, detail)

    async def _outcome(self, entry: FileEntry) -> tuple[SyncOutcome, str | None, str | None]:
        if entry.source_id in self.held.others:
            return SyncOutcome.SKIPPED, None, "a document this sync did not create holds this source id"
        existing = self.held.owned.get(entry.source_id)
        recorded = existing.user_metadata if existing is not None else {}
        if recorded.get(ownership.SIZE) == entry.size and recorded.get(ownership.MTIME) == entry.mtime_ns:
            return SyncOutcome.UNCHANGED, existing.document_id if existing else None, None
        limit = self.settings.max_upload_bytes
        if entry.size > limit:
            return SyncOutcome.FAILED, None, f"larger than {limit} bytes (MAX_UPLOAD_BYTES)"
        bookkeeping: dict[str, MetadataValue | None] = {
            ownership.ROOT: self.report.root,
            ownership.SIZE: entry.size,
            ownership.MTIME: entry.mtime_ns,
        }
        if existing is not None and recorded.get(ownership.SHA256) == await asyncio.to_thread(_digest, entry.path):
            await self.store.update_metadata(  # touched, not changed: its new time recorded, nothing parsed
                existing.document_id, user_metadata=sync_metadata(existing, {}, bookkeeping)
            )
            return SyncOutcome.UNCHANGED, existing.document_id, None
        async with self.ingest_slots:  # only the files being ingested are held in memory
            data = await asyncio.to_thread(_read, entry.path, limit + 1)
            if len(data) > limit:
                return SyncOutcome.FAILED, None, f"larger than {limit} bytes (MAX_UPLOAD_BYTES)"
            digest = hashlib.sha256(data).hexdigest()
            # Two copies ingested at once would both pass the store's duplicate check: the first one read wins.
            first = self.read_first.setdefault(digest, entry.relative)
            document_id: str | None = None
            detail: str | None = f"the same bytes as {first}"
            if first != entry.relative:
                outcome = SyncOutcome.SKIPPED
            else:
                metadata = sync_metadata(existing, self.command.metadata, {**bookkeeping, ownership.SHA256: digest})
                command = dataclasses.replace(self.command, source_id=entry.source_id, metadata=metadata)
                result = await admitted(lambda: self.ingestion.ingest_file(data, entry.path.name, command))
                outcome, detail = outcome_of(result, existing)
                document_id = result.document_id
        if outcome == SyncOutcome.SKIPPED and existing is not None:  # now a copy of another file: its old text goes
            await self.store.delete_document(existing.document_id)
            return SyncOutcome.DELETED, existing.document_id, f"now {detail}"
        return outcome, document_id, detail


def _digest(path: Path) -> str:
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def _read(path: Path, limit: int) -> bytes:
    with path.open("rb") as handle:
        return handle.read(limit)
