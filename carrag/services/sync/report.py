"""What a sync or crawl job reports: how many sources had each outcome (exact), and which sources changed,
failed or were skipped (unchanged ones are only counted). It lives in the job's record, which is rewritten
with every progress write, so the list is bounded."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from carrag.services.vocabulary import SyncOutcome

MAX_LISTED = 250


@dataclass(slots=True)
class SourceReport:
    source: str  # the file's path under the folder, or the page's URL
    outcome: SyncOutcome
    document_id: str | None = None
    detail: str | None = None  # why it failed or was skipped or deleted


def _no_outcomes() -> dict[str, int]:
    return {str(outcome): 0 for outcome in SyncOutcome}


@dataclass(slots=True)
class SyncReport:
    root: str  # the folder (symlinks resolved) or the crawl's scope (URL prefix)
    counts: dict[str, int] = field(default_factory=_no_outcomes)
    sources: list[SourceReport] = field(default_factory=list)
    unlisted: int = 0  # changed, failed or skipped sources beyond MAX_LISTED: counted, not listed
    note: str | None = None  # e.g. why documents of unreached sources were kept

    def add(self, source: str, outcome: SyncOutcome, document_id: str | None = None, detail: str | None = None) -> None:
        self.counts[outcome] += 1
        if outcome == SyncOutcome.UNCHANGED:
            return
        if len(self.sources) < MAX_LISTED:
            self.sources.append(SourceReport(source, outcome, document_id, detail))
        else:
            self.unlisted += 1

    @property
    def failed(self) -> int:
        return self.counts[SyncOutcome.FAILED]

    def to_record(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> SyncReport:
        sources = [SourceReport(**{**item, "outcome": SyncOutcome(item["outcome"])}) for item in record["sources"]]
        return cls(record["root"], {**_no_outcomes(), **record["counts"]}, sources, record["unlisted"], record["note"])
