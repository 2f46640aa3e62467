"""CollectionService: names, the protected default collection, and resolving names."""

from __future__ import annotations

import pytest

from carrag.services.collections import CollectionService
from carrag.services.errors import Conflict, InvalidInput, NotFound
from carrag.services.stores.sqlite import SqliteStore


@pytest.fixture
async def service(tmp_path):
    store = SqliteStore(tmp_path / "store.db")
    await store.open()
    yield CollectionService(store)
    await store.close()


@pytest.mark.parametrize("name", ["", "Team", "-lead", "has space", "a" * 65, "ünï", "a/b"])
async def test_invalid_names_are_refused(service: CollectionService, name: str) -> None:
    with pytest.raises(InvalidInput, match="invalid collection name"):
        await service.create(name)


async def test_default_cannot_be_created_renamed_or_deleted(service: CollectionService) -> None:
    with pytest.raises(Conflict):
        await service.create("default")
    with pytest.raises(Conflict, match="cannot be renamed"):
        await service.rename("default", "other")
    with pytest.raises(Conflict, match="cannot be deleted"):
        await service.delete("default")
    await service.create("team-a")
    with pytest.raises(Conflict):
        await service.rename("team-a", "default")


async def test_resolve_keeps_order_defaults_to_default_and_names_the_unknown(service: CollectionService) -> None:
    a = await service.create("team-a")
    b = await service.create("team_b-2")
    assert [c.name for c in await service.resolve(None)] == ["default"]
    assert [c.collection_id for c in await service.resolve(["team_b-2", "team-a", "team-a"])] == [
        b.collection_id,
        a.collection_id,
    ]
    with pytest.raises(NotFound, match="collection 'nope' does not exist"):
        await service.resolve(["team-a", "nope"])
    renamed = await service.rename("team-a", "team-c")
    assert renamed.collection_id == a.collection_id
    with pytest.raises(NotFound):
        await service.rename("team-a", "x")
    assert (await service.names_by_id())[a.collection_id] == "team-c"
    deleted = await service.delete("team-c")
    assert deleted.collection_id == a.collection_id
    with pytest.raises(NotFound):
        await service.delete("team-c")
