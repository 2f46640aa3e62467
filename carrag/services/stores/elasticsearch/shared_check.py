"""One live check for both legs of a hybrid search.

Each leg's hits must be checked against their source records after its search (`live_filter.py`),
and the check reads the chunks around the hits too (`windows.py`). Checked leg by leg, a hybrid
search sends two multi-gets, and the kNN leg's comes last, after the query's embedding and its own
search. Run under `SharedCheck`, the first check of each leg waits until every leg of the search has
either asked for its check or ended without one, and one multi-get then reads the epoch, the
records of all of them, and the windows of the likely winners across the legs (`windows.py`,
``covered_across``) rather than of each leg's best; each leg gets all of it.

Why this is as safe as two checks: the one multi-get starts after the last leg's search ended, so it
is "after the search" for each leg, which is all `live_filter.py` asks of a check; it only comes
later for the leg that finished first. Both legs then see the same record of a source, so a source
replaced during the search cannot come back as one version from each leg (`one_version.py` still
covers the repeated searches of a leg whose hits were not confirmed, which are checked on their own,
and a leg confirmed by the epoch read beside the search, which asks for no check: `live_filter.py`).

The round also holds that epoch read (`epoch_beside`): sent when the first leg starts its search,
shared by the other.

Nothing waits on a leg that will never ask: a leg leaves the round when it ends, whether it
searched, returned early or raised (`SharedCheck.leg` gives the context the search service holds
around each leg; `carrag/services/retrieval/search.py`).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Sequence
from contextvars import ContextVar, Token
from dataclasses import dataclass, field
from typing import Any

from carrag.services.stores.elasticsearch.live_filter import EpochRead, EpochValue, LiveCheck
from carrag.services.stores.elasticsearch.live_state import CheckRead
from carrag.services.stores.elasticsearch.windows import PrefetchedWindows

Hit = dict[str, Any]

# (sources, chunk ids) → (epoch, tokens, chunks), as `LiveState.live_check_read`
Read = Callable[[Sequence[str], Sequence[str]], Awaitable[CheckRead]]


@dataclass(slots=True, eq=False)
class _Leg:
    round: SharedCheck
    asked: bool = False
    ended: bool = False
    sources: list[str] = field(default_factory=list)
    hits: list[Hit] = field(default_factory=list)
    answer: asyncio.Future[LiveCheck] | None = None
    _token: Token[_Leg | None] | None = None

    def __enter__(self) -> None:
        self._token = _current_leg.set(self)

    def __exit__(self, *exc_info: object) -> None:
        if self._token is not None:
            _current_leg.reset(self._token)
        self.ended = True
        self.round._maybe_fire()


_current_leg: ContextVar[_Leg | None] = ContextVar("carrag_es_shared_check_leg", default=None)


class SharedCheck:
    """The round of one search. ``leg()`` once per leg before the legs start, then each leg runs
    inside ``with`` its own: ``a, b = shared.leg(), shared.leg()``, ``with a: ...`` in one task."""

    def __init__(self, read: Read, windows: PrefetchedWindows) -> None:
        self._read = read
        self._windows = windows
        self._beside: EpochRead | None = None
        self._legs: list[_Leg] = []
        self._fired = False
        self._task: asyncio.Future[None] | None = None  # the one read, held so it is not collected

    def leg(self) -> contextlib.AbstractContextManager[None]:
        member = _Leg(self)
        self._legs.append(member)
        return member

    @staticmethod
    def current() -> SharedCheck | None:
        """The round the calling leg runs in, if any."""
        member = _current_leg.get()
        return None if member is None else member.round

    def epoch_beside(self, read_epoch: Callable[[], Awaitable[EpochValue]]) -> EpochRead:
        """One epoch read beside the round's searches (`live_filter.py`, ``EpochRead``), sent when
        the first leg starts its search and shared by the others."""
        if self._beside is None:
            self._beside = EpochRead.start(read_epoch)
        return self._beside

    @staticmethod
    def joined() -> _Leg | None:
        """The calling leg, if it runs in a round whose check is still to come and has not asked yet."""
        member = _current_leg.get()
        if member is None or member.asked or member.round._fired:
            return None
        return member

    @staticmethod
    async def check(member: _Leg, sources: Sequence[str], hits: list[Hit]) -> LiveCheck:
        """The leg's check (the records of ``sources``, the windows of its best ``hits``), read
        together with the other legs' ones."""
        member.asked = True
        member.sources, member.hits = list(sources), hits
        answer: asyncio.Future[LiveCheck] = asyncio.get_running_loop().create_future()
        member.answer = answer
        member.round._maybe_fire()
        return await asyncio.shield(answer)  # a cancelled leg must not cancel the others' read

    def _maybe_fire(self) -> None:
        if self._fired or not all(member.asked or member.ended for member in self._legs):
            return
        self._fired = True
        waiting = [member for member in self._legs if member.answer is not None]
        if waiting:
            self._task = asyncio.ensure_future(self._fire(waiting))

    async def _fire(self, waiting: list[_Leg]) -> None:
        sources = list(dict.fromkeys(source for member in waiting for source in member.sources))
        held = {hit["_id"]: hit["_source"] for member in waiting for hit in member.hits}
        covered = self._windows.covered_across([member.hits for member in waiting])
        chunk_ids = list(dict.fromkeys(self._windows.around(covered, set(held))))
        read_for = frozenset(hit["_id"] for hit in covered)
        answers = [member.answer for member in waiting if member.answer is not None]
        try:
            epoch, tokens, chunks = await self._read(sources, chunk_ids)
        except Exception as exc:  # noqa: BLE001 - every waiting leg gets the error it would have got alone
            for answer in answers:
                if not answer.done():
                    answer.set_exception(exc)
            return
        except asyncio.CancelledError:
            for answer in answers:
                answer.cancel()
            raise
        chunks = {**held, **chunks}  # a window may hold the other leg's hits
        for answer in answers:
            if not answer.done():
                answer.set_result(LiveCheck(tokens, chunks, read_for, epoch))
