"""Where the data lives: an alias (``ELASTICSEARCH_INDEX``) in front of one concrete index
``<alias>-<generation>``, replaced by the next generation on `carrag reindex` or ``wipe``. Creating
generation 1 is race-free: the loser of a simultaneous create adopts the winner's index. The embedding
model is kept in the concrete index's ``_meta`` (``embedding`` gets its ``dims`` at the first write)."""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable

from elasticsearch import ApiError

from carrag.services.errors import DependencyUnavailable, EmbeddingModelMismatch, UpstreamError
from carrag.services.models import EmbeddingIdentity
from carrag.services.stores.elasticsearch.connection import Connection, IndexMissing, api_reason, api_status
from carrag.services.stores.elasticsearch.mapping import (
    BASE_PROPERTIES,
    SCHEMA_VERSION,
    embedding_property,
    index_mappings,
)

logger = logging.getLogger(__name__)

# The client's major version must match the server's (docs/deploy.md); the server is checked at open.
SUPPORTED_MAJOR = 8

ReadIdentity = Callable[[str], Awaitable[tuple[str, EmbeddingIdentity | None]]]  # name → (concrete index, model)


def generation_name(alias: str, generation: int) -> str:
    return f"{alias}-{generation:06d}"


def generation_of(alias: str, index: str) -> int:
    match = re.fullmatch(re.escape(alias) + r"-(\d+)", index)
    return int(match.group(1)) if match else 0


class IndexLayout:
    def __init__(
        self,
        connection: Connection,
        alias: str,
        *,
        shards: int = 1,
        replicas: int = 0,
        refresh_interval: str = "1s",
    ) -> None:
        self.connection = connection
        self.alias = alias
        self.settings = {
            "number_of_shards": shards,
            "number_of_replicas": replicas,
            "refresh_interval": refresh_interval,
        }
        self.refresh_interval = refresh_interval
        self.ready = False
        self.server_version: str | None = None
        self.warnings: list[str] = []

    async def ensure(self) -> None:
        if self.ready:
            return
        action = f"setting up the index {self.alias}"
        try:
            with self.connection.errors(action, self.alias):
                await self._set_up()
        except IndexMissing:  # deleted between our look and our use: try once more
            with self.connection.errors(action, self.alias):
                await self._set_up()
        except UpstreamError as exc:  # e.g. an invalid index name: the store cannot work (503), say why
            raise DependencyUnavailable("store", exc.message) from exc
        self.ready = True

    async def _set_up(self) -> None:
        client = self.connection.client
        if self.server_version is None:
            self.server_version = str((await client.info())["version"]["number"])
            if self.server_version.split(".")[0] != str(SUPPORTED_MAJOR):
                self.warnings = [
                    f"Elasticsearch server version {self.server_version} does not match the client's major "
                    f"version {SUPPORTED_MAJOR}"
                ]
                logger.warning("Elasticsearch major version mismatch", extra={"server": self.server_version})
        concrete = await self.concrete_indices()
        if concrete:
            await self._adopt(concrete[0])
            return
        if await client.indices.exists(index=self.alias):
            raise DependencyUnavailable(
                "store",
                f"the Elasticsearch index {self.alias} is a plain index, not an alias (made by an older Carrag "
                "or by hand); run `carrag reindex` to move its documents behind an alias, or set "
                "ELASTICSEARCH_INDEX to another name",
            )
        await self.create_generation(1)

    async def create_generation(self, generation: int, *, with_alias: bool = True) -> str:
        """Create ``<alias>-<generation>`` (with the alias pointing at it, unless told otherwise)."""
        name = generation_name(self.alias, generation)
        try:
            await self.connection.client.indices.create(
                index=name,
                settings=self.settings,
                mappings=index_mappings(),
                aliases={self.alias: {"is_write_index": True}} if with_alias else None,
            )
            logger.info(
                "created Elasticsearch index", extra={"index": name, "alias": self.alias if with_alias else None}
            )
        except ApiError as exc:
            if "resource_already_exists" not in api_reason(exc) or not with_alias:
                raise
            await self._adopt(name)  # another process created it first
        return name

    async def concrete_indices(self) -> list[str]:
        """The indices behind the alias (one, except in the middle of someone's manual change)."""
        try:
            response = await self.connection.client.indices.get_alias(name=self.alias)
        except ApiError as exc:
            if api_status(exc) == 404:
                return []
            raise
        return sorted(response.keys(), key=lambda index: generation_of(self.alias, index), reverse=True)

    async def _adopt(self, index: str) -> None:
        indices = self.connection.client.indices
        try:
            # adds fields introduced since the index was created; a conflicting field is an error
            await indices.put_mapping(index=index, properties=BASE_PROPERTIES)
        except ApiError as exc:
            if api_status(exc) == 400:
                raise DependencyUnavailable(
                    "store",
                    f"the Elasticsearch index {index} exists with a mapping Carrag cannot use "
                    f"({api_reason(exc)}); set ELASTICSEARCH_INDEX to another name or delete that index",
                ) from exc
            raise
        settings = await indices.get_settings(index=index)
        current = next(iter(settings.values()))["settings"]["index"]
        if str(current.get("refresh_interval")) == "-1":
            # writes wait for a refresh (refresh=wait_for); with refreshes switched off they never would
            await indices.put_settings(index=index, settings={"index": {"refresh_interval": self.refresh_interval}})

    async def identity_with_index(self, name: str) -> tuple[str, EmbeddingIdentity | None]:
        """The model recorded in the index ``name`` (the alias or a concrete index), and the concrete
        index that answered."""
        response = await self.connection.client.indices.get_mapping(index=name)
        index, body = next(iter(response.items()))
        mappings = body["mappings"]
        embedding = mappings.get("properties", {}).get("embedding")
        if not embedding or not embedding.get("dims"):
            return index, None
        meta = mappings.get("_meta") or {}
        return index, EmbeddingIdentity(str(meta.get("embedding_model", "")), int(embedding["dims"]))

    async def claim_identity(self, identity: EmbeddingIdentity, index: str | None = None) -> None:
        """Record ``identity`` as the index's model, or fail if the index holds another model's vectors.
        Read each time (one mapping request per write batch): another process may have moved the alias
        to an index of another model."""
        target = index or self.alias
        _, stored = await self.identity_with_index(target)
        if stored is not None:
            stored.check_accepts(identity)
        if stored is None or not stored.model:
            meta = {
                "carrag_schema": SCHEMA_VERSION,
                "embedding_model": identity.model,
                "embedding_dimension": identity.dimension,
            }
            try:
                with self.connection.errors("recording the embedding model", target):
                    await self.connection.client.indices.put_mapping(
                        index=target, meta=meta, properties={"embedding": embedding_property(identity.dimension)}
                    )
            except UpstreamError:
                # another process added the field first, with another dimension
                _, stored = await self.identity_with_index(target)
                if stored is not None and stored.dimension != identity.dimension:
                    raise EmbeddingModelMismatch(stored.describe(), identity.describe()) from None
                raise

    async def recreate(self) -> None:
        """Delete the indices behind the alias and start the next generation (``wipe``)."""
        with self.connection.errors(f"deleting the index {self.alias}", self.alias):
            concrete = await self.concrete_indices()
            newest = max((generation_of(self.alias, index) for index in concrete), default=0)
            if concrete:
                await self.connection.client.indices.delete(index=",".join(concrete), ignore_unavailable=True)
            self.ready = False
            await self.create_generation(newest + 1)
        self.ready = True


class ServedIdentity:
    """The model of the index searches are served from, without a mapping read per search. A concrete
    index's model never changes once recorded (a model change or a wipe is a new generation), so it is
    kept per concrete index; searches see which index the alias names from their hits' ``_index``
    (`VectorHits.model`). The newest generation seen is answered: a slow search cannot move it back."""

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
