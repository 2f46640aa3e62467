"""The reader's side of the visibility protocol (`versions.py`): which search hits may be returned.

A hit may be returned only if its version was live *before the search began* and still is after
it. Live after: a real-time multi-get of the hits' source records, after the search. Live before:
the chunks of a version being written can become searchable piecemeal (a scheduled refresh may
fall in the middle of its bulk request), so a version that was flipped between the start of the
search and the check may have been seen only in part. A version flipped before the search began
had been searchable whole since before its flip (step 1 waits for that), and one still live after
the search has not started to be deleted: such a hit is safe.

"Before the search began" is known from this process's own earlier checks: each check remembers
every source record it saw with its concurrency token (``_seq_no``, ``_primary_term``; it changes
with every flip and never repeats) and the monotonic time of the check. If a hit's record carries
the same token as a check that completed before this search started, the record did not change in
between. When a hit cannot be confirmed this way (first sight of that source in this process, or a
recent flip), the search is run again: now the check just made precedes it. Versions found not
live are left out of the repeated search. A process pays the extra search once per source change
it meets, not per search.

The check may read more than the records: the store asks it for the chunks around each hit too
(`ElasticsearchStore`, for neighbour expansion), so a search needs no round trip after it. What
the check read comes back with the hits of the attempt it confirmed (`LiveHits.chunks`).

Most searches need no record read at all (the *epoch*, `versions.py`): every completed flip
that retires a version, and every delete, changes one small document (``epoch``) before any
chunk of the retired version is deleted. A check therefore reads the epoch too, and each token
it reads is remembered with the epoch this process had read *before* sending it. A hit whose
source was remembered with its own version, seen before the search began, and whose remembered
epoch is still the one read after the search, needs no record read: no retired version's
chunks were deleted between the earlier read and now, so its version is whole in what the search
saw, and it was live before the search began. Such a check reads only the epoch (and the
chunks around the hits); if the epoch has moved, the records are read as above.

And most searches need no check at all (`EpochRead`): the epoch is read *beside* the search, sent
as it starts. Chunks of a retired version are deleted only a grace period after the epoch write
that announces them (`retirement.py`), so when that read gives the remembered epoch, no such
delete can start before the read was sent plus the grace; a search that has ended within half of
it saw every remembered version whole, exactly as if the epoch had been read after it. Every hit
must be of a remembered source and version, seen before the search began, and of the index the
epoch came from (a reindex swaps the alias); otherwise, or when the search took longer, the check
runs as above.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from carrag.services.stores.elasticsearch import retirement
from carrag.services.stores.elasticsearch.live_state import LiveToken
from carrag.services.stores.elasticsearch.mapping import record_key

logger = logging.getLogger(__name__)

ATTEMPTS = 8
REMEMBERED_SOURCES = 200_000

Hit = dict[str, Any]


@dataclass(slots=True)
class LiveCheck:
    """What one check read: the hits' source records, and any chunks read with them (``_id → _source``)."""

    tokens: dict[str, LiveToken]
    chunks: dict[str, dict[str, Any]] = field(default_factory=dict)
    read_for: frozenset[str] = frozenset()  # ids of the hits the chunks were read for
    epoch: str | None = None  # the epoch document as read (None: absent, never matches)


@dataclass(slots=True)
class LiveHits:
    hits: list[Hit]  # best first, every one of a live version
    chunks: dict[str, dict[str, Any]]  # what the check that confirmed them read beside the records
    read_for: frozenset[str] = frozenset()  # ... and for which hits (`LiveCheck.read_for`)


# (the epoch or None, the concrete index it was read from or None), as `LiveState.read_epoch`
EpochValue = tuple[str | None, str | None]


@dataclass(slots=True)
class EpochRead:
    """An epoch read sent beside a search; ``sent`` is taken before it is sent."""

    sent: float
    answer: asyncio.Future[EpochValue]

    @classmethod
    def start(cls, read: Callable[[], Awaitable[EpochValue]]) -> EpochRead:
        sent = retirement.now()
        answer = asyncio.ensure_future(read())
        answer.add_done_callback(_consume)  # an unused read's error is not an error of the search
        return cls(sent, answer)

    async def within_grace(self) -> EpochValue | None:
        """What was read, if the read succeeded and less than half the grace has passed since it
        was sent (`retirement.py`); else None (at that deadline at the latest), and the search is
        checked after it."""
        deadline = self.sent + retirement.grace() / 2
        try:
            if not self.answer.done():  # shielded: the legs of one search share the read
                async with asyncio.timeout(max(deadline - retirement.now(), 0.0)):
                    await asyncio.shield(self.answer)
            value = self.answer.result()
        except Exception:  # noqa: BLE001 - too late, or failed: the check after the search reports the store's errors
            return None
        if retirement.now() >= deadline:
            return None
        return value


def _consume(answer: asyncio.Future[EpochValue]) -> None:
    if not answer.cancelled():
        answer.exception()


Search = Callable[[int, set[str]], Awaitable[list[Hit]]]
# check(hits, to_read): the epoch, the records of ``to_read``'s sources, the chunks around ``hits``
Check = Callable[[list[Hit], list[Hit]], Awaitable[LiveCheck]]


@dataclass(slots=True)
class _Seen:
    token: LiveToken
    since: float  # monotonic time of the first check that read this token
    epoch: str | None  # the epoch read before the latest check that read it was sent


class LiveFilter:
    def __init__(self, check: Check, beside: Callable[[], EpochRead] | None = None) -> None:
        self._check = check
        self._beside = beside  # starts (or shares) the epoch read sent beside a search
        self._seen: OrderedDict[str, _Seen] = OrderedDict()  # source key → what checks read of its record
        self._epoch: str | None = None  # as last read
        self.records_read = 0  # source records asked for by checks (a steady search asks for none)
        self.unchecked = 0  # searches confirmed by the epoch read beside them, with no check after

    async def hits(self, search: Search, k: int) -> LiveHits:
        """The best ``k`` hits of ``search(size, stale_versions)`` that belong to live versions."""
        stale: set[str] = set()
        confirmed: list[Hit] = []
        checked = LiveCheck({})
        for attempt in range(ATTEMPTS):
            started = time.monotonic()
            beside = self._beside() if attempt == 0 and self._beside is not None and self._epoch is not None else None
            hits = await search(k, stale)
            keys = [record_key(hit["_source"]) for hit in hits]  # each hit's source key, once
            known = self._known_before(hits, keys, started)
            if beside is not None and hits and all(key in known for key in keys):
                read = await beside.within_grace()
                if read is not None and self._unmoved(hits, known, *read):
                    self.unchecked += 1
                    for key in known:
                        self._seen.move_to_end(key)
                    return LiveHits(hits[:k], {})
                if read is not None and read[0] is not None and read[0] != self._epoch:
                    self._epoch = read[0]  # moved: answered before the check below is sent, so it may stand
                    known = self._known_before(hits, keys, started)  # for it (one multi-get reads every record)
            epoch = self._epoch
            unknown = [(hit, key) for hit, key in zip(hits, keys, strict=True) if key not in known]
            checked = await self._read(hits, [hit for hit, _ in unknown], {key for _, key in unknown})
            if known and any(seen.epoch != checked.epoch for seen in known.values()):
                known = {}  # a version was retired since those reads: read every record
                epoch = self._epoch
                checked = await self._read(hits, hits, set(keys))
            self._remember(checked.tokens, epoch)
            tokens = {**{key: seen.token for key, seen in known.items()}, **checked.tokens}
            confirmed, unconfirmed, dropped = [], [], []
            # a dropped hit of a source live under another version: it flipped after the search began
            flipped = False
            for hit, key in zip(hits, keys, strict=True):
                token = tokens.get(key)
                if token is None or token.document_id != hit["_source"]["document_id"]:
                    dropped.append(hit)
                    flipped = flipped or token is not None
                elif self._unchanged_since(key, token, started):
                    confirmed.append(hit)
                else:
                    unconfirmed.append(hit)
            stale.update(hit["_source"]["document_id"] for hit in dropped)
            stale.difference_update(token.document_id for token in tokens.values())  # a pending one went live
            short = bool(dropped) and len(hits) >= k and len(confirmed) + len(unconfirmed) < k
            if not unconfirmed and not short and not flipped:
                return LiveHits(confirmed[:k], checked.chunks, checked.read_for)
        if unconfirmed:
            logger.warning("search hits left out: their sources kept changing", extra={"hits": len(unconfirmed)})
        return LiveHits(confirmed[:k], checked.chunks, checked.read_for)

    @staticmethod
    def _unmoved(hits: list[Hit], known: dict[str, _Seen], epoch: str | None, index: str | None) -> bool:
        """The epoch read beside the search, from the index the hits came from, is the one
        remembered with each hit's source (the module docstring)."""
        return (
            epoch is not None
            and all(hit["_index"] == index for hit in hits)
            and all(seen.epoch == epoch for seen in known.values())
        )

    async def _read(self, hits: list[Hit], to_read: list[Hit], sources: set[str]) -> LiveCheck:
        """The check of ``hits``, reading the records of ``to_read`` (whose source keys are ``sources``)."""
        if not hits:
            return LiveCheck({})
        checked = await self._check(hits, to_read)
        self._epoch = checked.epoch
        self.records_read += len(sources)
        return checked

    def _known_before(self, hits: list[Hit], keys: list[str], started: float) -> dict[str, _Seen]:
        """Sources whose hits are all of the version remembered for them, read before ``started``
        with an epoch known: they may need no record read (the epoch decides). ``keys``: the hits'
        source keys (`record_key`), in order."""
        known: dict[str, _Seen] = {}
        mixed: set[str] = set()
        for hit, key in zip(hits, keys, strict=True):
            seen = self._seen.get(key)
            if (
                seen is not None
                and seen.epoch is not None
                and seen.epoch == self._epoch  # else the epoch is already known to have moved
                and seen.since < started
                and seen.token.document_id == hit["_source"]["document_id"]
            ):
                known[key] = seen
            else:
                mixed.add(key)
        for key in mixed:
            known.pop(key, None)
        return known

    def _unchanged_since(self, source_id: str, token: LiveToken, started: float) -> bool:
        seen = self._seen.get(source_id)
        return seen is not None and seen.token == token and seen.since < started

    def _remember(self, tokens: dict[str, LiveToken], epoch: str | None) -> None:
        now = time.monotonic()
        for source_id, token in tokens.items():
            seen = self._seen.get(source_id)
            if seen is None or seen.token != token:  # keep the earliest time this token was seen
                self._seen[source_id] = _Seen(token, now, epoch)
            else:
                seen.epoch = epoch
            self._seen.move_to_end(source_id)
        while len(self._seen) > REMEMBERED_SOURCES:
            self._seen.popitem(last=False)
