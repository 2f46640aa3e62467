"""Folder sync (`carrag/services/sync/folder.py`) against a folder the test changes between runs: files
added, changed, touched, renamed and removed; what the sync may and may not delete; one sync of a folder
at a time. The main cases run on both stores (SQLite and the Elasticsearch harness), with exact counts."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from carrag.services.container import Container
from carrag.services.errors import Conflict, Forbidden, InvalidInput
from carrag.services.requests import IngestCommand
from carrag.services.sync import ownership
from tests.conftest import close_container, open_container
from tests.job_helpers import wait_for
from tests.services.sync.helpers import TOPICS, counts, finished, note, outcomes, write


async def sync(container: Container, folder: Path, *patterns: str, collection: str = "default", **kwargs):
    command = container.requests.ingest(collection=collection, metadata=kwargs.pop("metadata", None))
    job = await container.sync.sync_folder(str(folder), command, patterns, **kwargs)
    return await finished(container.jobs, job)


class CountingIngests:
    """Counts the files the ingestion service is given (each one is parsed)."""

    def __init__(self, container: Container) -> None:
        self.names: list[str] = []
        original = container.ingestion.ingest_file

        async def counted(data, filename, options, observer=None):
            self.names.append(filename)
            return await original(data, filename, options, observer)

        container.ingestion.ingest_file = counted  # type: ignore[method-assign]


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "notes"
    write(root, "brakes.md", note(TOPICS[0]))
    write(root, "tyres.txt", note(TOPICS[1]))
    write(root, "engine/coolant.md", note(TOPICS[2]))
    write(root, ".obsidian/hidden.md", note(TOPICS[3]))  # hidden: left out
    write(root, "photo.bin", "not a document")  # a type Carrag cannot parse: left out
    return root


async def test_a_folder_followed_through_its_changes(store_container: Container, folder: Path) -> None:
    container = store_container
    ingests = CountingIngests(container)
    first = await sync(container, folder)
    assert first.state == "done" and counts(first.report) == {"added": 3}
    assert first.progress.done == first.progress.total == 3
    assert sorted(outcomes(first.report)) == ["brakes.md", "engine/coolant.md", "tyres.txt"]
    stored = {d.source_id: d for d in (await container.store.list_documents(offset=0, limit=10)).items}
    assert sorted(stored) == sorted(
        (folder / name).as_posix() for name in ["brakes.md", "engine/coolant.md", "tyres.txt"]
    )
    assert all(d.user_metadata[ownership.ROOT] == folder.as_posix() for d in stored.values())
    assert len(ingests.names) == 3

    again = await sync(container, folder)
    assert counts(again.report) == {"unchanged": 3} and again.report.sources == []
    assert len(ingests.names) == 3, "unchanged files are not read, parsed or embedded"

    write(folder, "tyres.txt", note(TOPICS[1], version=2))  # changed
    write(folder, "battery.md", note(TOPICS[6]))  # new
    (folder / "engine/coolant.md").unlink()  # gone
    brakes = folder / "brakes.md"
    os.utime(brakes, ns=(brakes.stat().st_atime_ns, brakes.stat().st_mtime_ns + 10**9))  # touched only
    third = await sync(container, folder)
    assert counts(third.report) == {"added": 1, "updated": 1, "deleted": 1, "unchanged": 1}
    assert outcomes(third.report) == {"battery.md": "added", "tyres.txt": "updated", "engine/coolant.md": "deleted"}
    assert sorted(ingests.names[3:]) == ["battery.md", "tyres.txt"], "the touched file was hashed, not parsed"
    listing = await container.store.list_documents(offset=0, limit=10)
    assert listing.total == 3
    tyres = await container.store.find_by_source((folder / "tyres.txt").as_posix())
    assert tyres is not None and "Service note 2" in (await container.store.get_chunks(tyres.document_id))[0].chunk.text

    fourth = await sync(container, folder)
    assert counts(fourth.report) == {"unchanged": 3}, "the touched file's new time was recorded"
    assert len(ingests.names) == 5


async def test_a_renamed_file_is_ingested_under_its_new_name(container: Container, folder: Path) -> None:
    await sync(container, folder)
    (folder / "brakes.md").rename(folder / "engine/brakes.md")
    moved = await sync(container, folder)
    assert counts(moved.report) == {"deleted": 1, "added": 1, "unchanged": 2}
    assert outcomes(moved.report) == {"brakes.md": "deleted", "engine/brakes.md": "added"}


async def test_only_documents_the_sync_made_are_touched(store_container: Container, folder: Path) -> None:
    container = store_container
    by_hand = write(folder, "manual.md", note(TOPICS[4]))
    elsewhere = await container.ingestion.ingest_text(
        note(TOPICS[5]), "cabin.md", IngestCommand(source_id=(folder / "cabin.md").as_posix())
    )
    await container.ingestion.ingest_file(
        by_hand.read_bytes(), "manual.md", IngestCommand(source_id=by_hand.as_posix())
    )
    report = (await sync(container, folder)).report
    assert counts(report) == {"added": 3, "skipped": 1}
    assert outcomes(report)["manual.md"] == "skipped", "a document ingested by hand keeps its source id"

    by_hand.unlink()
    for name in ("brakes.md", "tyres.txt"):
        (folder / name).unlink()
    report = (await sync(container, folder)).report
    assert counts(report) == {"deleted": 2, "unchanged": 1}
    remaining = {d.source_id for d in (await container.store.list_documents(offset=0, limit=10)).items}
    assert by_hand.as_posix() in remaining and elsewhere.source_id in remaining, "never made by the sync: kept"


async def test_globs_choose_the_files_and_a_file_no_longer_matched_counts_as_gone(
    container: Container, folder: Path
) -> None:
    report = (await sync(container, folder, "*.md")).report
    assert sorted(outcomes(report)) == ["brakes.md", "engine/coolant.md"]
    report = (await sync(container, folder, "engine/**/*.md")).report
    assert outcomes(report) == {"brakes.md": "deleted"} and counts(report) == {"deleted": 1, "unchanged": 1}


async def test_a_copy_of_another_file_is_skipped(container: Container, folder: Path) -> None:
    write(folder, "copy-of-brakes.md", note(TOPICS[0]))
    report = (await sync(container, folder)).report
    assert counts(report) == {"added": 3, "skipped": 1}
    skipped = [item for item in report.sources if item.outcome == "skipped"]
    assert [item.source for item in skipped] in (["brakes.md"], ["copy-of-brakes.md"]), "one of them, once"
    assert skipped[0].detail in ("the same bytes as brakes.md", "the same bytes as copy-of-brakes.md")
    again = (await sync(container, folder)).report
    assert counts(again) == {"unchanged": 3, "skipped": 1}
    assert again.sources[0].detail.startswith("the same text as"), "the stored copy is found in the store"


async def test_the_api_may_only_sync_under_sync_roots(container: Container, folder: Path, tmp_path: Path) -> None:
    command = container.requests.ingest()
    with pytest.raises(Forbidden, match="SYNC_ROOTS names no directory"):
        await container.sync.sync_folder(str(folder), command, allowed_roots=[])
    with pytest.raises(Forbidden, match="not under a directory named in SYNC_ROOTS"):
        await container.sync.sync_folder(str(folder), command, allowed_roots=[tmp_path / "elsewhere"])
    (tmp_path / "allowed").mkdir()
    (tmp_path / "allowed/link").symlink_to(folder)  # a link out of the allowed directory: resolved first
    with pytest.raises(Forbidden):
        await container.sync.sync_folder(str(tmp_path / "allowed/link"), command, allowed_roots=[tmp_path / "allowed"])
    with pytest.raises(InvalidInput, match="not a directory"):
        await container.sync.sync_folder(str(folder / "brakes.md"), command, allowed_roots=[folder])
    with pytest.raises(InvalidInput, match="absolute path"):
        await container.sync.sync_folder("notes", command, allowed_roots=[folder])
    job = await container.sync.sync_folder(str(folder), command, allowed_roots=[tmp_path])
    assert counts((await finished(container.jobs, job)).report) == {"added": 3}


async def test_a_symlinked_file_leading_out_of_the_folder_is_not_read(
    container: Container, folder: Path, tmp_path: Path
) -> None:
    secret = write(tmp_path, "secret.md", note(TOPICS[5]))
    (folder / "secret.md").symlink_to(secret)
    write(folder, "inside-target.md", note(TOPICS[6]))
    (folder / "inside-link.md").symlink_to(folder / "inside-target.md")
    report = (await sync(container, folder)).report
    assert "secret.md" not in outcomes(report)
    assert counts(report) == {"added": 4, "skipped": 1}, "the link inside the folder is read (a copy of its target)"


async def test_a_second_sync_of_the_same_folder_is_refused_while_one_runs(container: Container, folder: Path) -> None:
    release = asyncio.Event()
    original = container.ingestion.ingest_file

    async def held(*args, **kwargs):
        await release.wait()
        return await original(*args, **kwargs)

    container.ingestion.ingest_file = held  # type: ignore[method-assign]
    command = container.requests.ingest()
    first = await container.sync.sync_folder(str(folder), command)
    with pytest.raises(Conflict, match=f"already running \\(job {first.job_id}\\)"):
        await container.sync.sync_folder(str(folder) + "/", command)
    other = await container.collections.create("other")
    elsewhere = await container.sync.sync_folder(str(folder), container.requests.ingest(collection=other.name))
    assert elsewhere.job_id != first.job_id, "the same folder into another collection is another sync"
    release.set()
    await finished(container.jobs, first)
    await finished(container.jobs, elsewhere)
    again = await sync(container, folder)
    assert again.job_id == first.job_id and counts(again.report) == {"unchanged": 3}


async def test_a_cancelled_sync_keeps_what_it_synced(container: Container, folder: Path) -> None:
    gate = asyncio.Event()
    original = container.ingestion.ingest_file
    calls = 0

    async def second_one_waits(*args, **kwargs):
        nonlocal calls
        calls += 1
        if calls > 1:
            await gate.wait()
        return await original(*args, **kwargs)

    container.ingestion.ingest_file = second_one_waits  # type: ignore[method-assign]
    container.settings.max_concurrent_ingests = 1
    job = await container.sync.sync_folder(str(folder), container.requests.ingest())
    await wait_for(lambda: job.progress.done == 1, what="the first file synced")
    cancelled = await container.jobs.cancel(job.job_id)
    assert cancelled.state == "cancelled"
    assert (await container.store.list_documents(offset=0, limit=10)).total == 1


@pytest.mark.parametrize(
    "store_container", [pytest.param("elasticsearch", marks=pytest.mark.elasticsearch)], indirect=True
)
async def test_a_second_sync_is_refused_on_another_replica(
    store_container: Container, folder: Path, tmp_path: Path, embedding_backend
) -> None:
    """Two API processes on one index (here: two containers), each with its own job manager."""
    replica = await open_container(
        store_container.settings.model_copy(update={"data_dir": tmp_path / "b"}), embedding_backend
    )
    try:
        release = asyncio.Event()
        original = store_container.ingestion.ingest_file

        async def held(*args, **kwargs):
            await release.wait()
            return await original(*args, **kwargs)

        store_container.ingestion.ingest_file = held  # type: ignore[method-assign]
        running = await store_container.sync.sync_folder(str(folder), store_container.requests.ingest())
        with pytest.raises(Conflict, match="already running"):
            await replica.sync.sync_folder(str(folder), replica.requests.ingest())
        seen = await replica.jobs.get(running.job_id)
        assert seen.kind == "sync" and seen.state == "running" and seen.owner == running.owner
        release.set()
        await finished(store_container.jobs, running)
        after = await finished(replica.jobs, await replica.sync.sync_folder(str(folder), replica.requests.ingest()))
        assert after.job_id == running.job_id and counts(after.report) == {"unchanged": 3}
    finally:
        await close_container(replica)


async def test_a_folder_over_sync_max_files_fails_before_any_change(container: Container, folder: Path) -> None:
    await sync(container, folder)
    (folder / "brakes.md").unlink()
    write(folder, "more/a.md", note(TOPICS[4]))
    write(folder, "more/b.md", note(TOPICS[5]))
    container.settings.sync_max_files = 3
    job = await sync(container, folder)
    assert job.state == "failed" and "more than 3 files to sync; the limit is SYNC_MAX_FILES" in (job.error or "")
    assert (await container.store.list_documents(offset=0, limit=10)).total == 3, "nothing deleted or added"
