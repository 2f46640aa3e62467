"""The embedding model of the index searches are served from, without a mapping read per search.

Every search asks for the store's model before embedding its query (`model_change.py`); reading it
from Elasticsearch is a mapping request. But a concrete index's model never changes once recorded
(`IndexLayout.claim_identity` refuses another; a model change is a new index generation, `reindex.py`,
and ``wipe`` starts a new generation too), so it is kept per concrete index. What can change is which
index the alias names, and the searches see that themselves: every hit says which concrete index it
came from (``_index``), so the kNN leg returns the model of its hits' index (`VectorHits.model`; one
mapping read the first time an index is met), and the query path runs the leg again when that model
does not accept the query's. The index answered is the newest generation seen (`generation_of`), so a
slow search from before a swap cannot move it back. An index whose model is not recorded yet (no
vectors written) is not remembered: it is read again at the next check.
"""

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
