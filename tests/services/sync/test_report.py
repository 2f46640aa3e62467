"""The sync report (carrag/services/sync/report.py): exact counts, a bounded list, a record that round-trips."""

from __future__ import annotations

from carrag.services.sync.report import MAX_LISTED, SyncReport
from carrag.services.vocabulary import SyncOutcome


def test_counts_stay_exact_beyond_the_listed_sources() -> None:
    report = SyncReport("/srv/handbook")
    for number in range(MAX_LISTED + 50):
        report.add(f"added-{number}.md", SyncOutcome.ADDED, f"doc-{number}")
    for number in range(10):
        report.add(f"same-{number}.md", SyncOutcome.UNCHANGED, f"same-{number}")
    report.add("broken.json", SyncOutcome.FAILED, detail="not readable as JSON")
    assert report.counts[SyncOutcome.ADDED] == MAX_LISTED + 50 and report.counts[SyncOutcome.UNCHANGED] == 10
    assert len(report.sources) == MAX_LISTED and report.unlisted == 51, "unchanged sources are never listed"
    assert report.failed == 1

    again = SyncReport.from_record(report.to_record())
    assert again == report and again.sources[0].outcome is SyncOutcome.ADDED
