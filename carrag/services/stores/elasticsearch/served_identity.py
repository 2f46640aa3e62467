"""The embedding model of the index searches are served from, without a mapping read per search. A
concrete index's model never changes once recorded (a model change or a wipe is a new generation), so
it is kept per concrete index; which index the alias names the searches see from their hits' ``_index``
(`VectorHits.model`). The newest generation seen is answered: a slow search cannot move it back."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from carrag.services.models import EmbeddingIdentity
from carrag.services.stores.elasticsearch.layout import generation_of

ReadIdentity = Callable[[str], Awaitable[tuple[str, EmbeddingIdentity | None]]]  # name → (concrete index, model)


class ServedIdentity:
    def __init__(self, alias: str, read: ReadIdentity) -> None:
        self.alias = alias
        self._read = read
        self._known: dict[str, EmbeddingIdentity] = {}  # concrete index → its recorded model
        self._current: str | None = None  # the newest concrete index seen behind the alias

    async def current(self) -> EmbeddingIdentity | None:
        """The model of the index the alias names, as last seen (read when not known)."""
        if self._current is not None and self._current in self._known:
            return self._known[self._current]
        index, identity = await self._read(self.alias)
        self.learn(index, identity)
        return identity

    async def of_index(self, index: str) -> EmbeddingIdentity | None:
        """The model of the concrete ``index`` (hits came from it, so the alias names it or did)."""
        if index not in self._known:
            index, identity = await self._read(index)
            self.learn(index, identity)
            return identity
        self._advance(index)
        return self._known[index]

    def learn(self, index: str, identity: EmbeddingIdentity | None) -> None:
        """What a mapping read found: ``index`` is (or was) behind the alias, with ``identity``."""
        if identity is not None and identity.model:
            self._known[index] = identity
        self._advance(index)

    def forget(self) -> None:
        self._known.clear()
        self._current = None

    def _advance(self, index: str) -> None:
        if self._current is None or generation_of(self.alias, index) >= generation_of(self.alias, self._current):
            self._current = index
