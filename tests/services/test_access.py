"""Scoped API keys: API_KEY_SCOPES parsing and validation, and what a `Principal` may do."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import SecretStr, ValidationError

from carrag.services.access import FULL_ACCESS, KeyRing, Principal, ScopedKey, readable_collection_ids
from carrag.services.container import Container
from carrag.services.documents import DocumentService
from carrag.services.errors import Forbidden, NotFound
from carrag.services.models import Collection
from carrag.services.requests import IngestCommand
from tests.conftest import make_settings

SCOPES = '{"team-a-key": {"collections": ["team-a"], "read_only": true}, "writer-key": {"collections": ["b", "c"]}}'


def test_scopes_come_from_json_and_stay_secret(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, api_keys="team-a-key,writer-key,admin-key", api_key_scopes=SCOPES)
    first, second = settings.api_key_scopes
    assert first.key.get_secret_value() == "team-a-key"
    assert (first.collections, first.read_only) == (["team-a"], True)
    assert (second.collections, second.read_only) == (["b", "c"], False)
    for shown in (repr(settings), str(settings), settings.model_dump_json()):
        assert "team-a-key" not in shown and "writer-key" not in shown


def test_no_scopes_is_the_default(tmp_path: Path) -> None:
    assert make_settings(tmp_path, api_keys="k").api_key_scopes == []
    assert make_settings(tmp_path, api_keys="k", api_key_scopes="").api_key_scopes == []


@pytest.mark.parametrize(
    ("scopes", "message"),
    [
        ('{"not-listed-secret": {"read_only": true}}', "entry 1 (counting from 1) names a key that is not in API_KEYS"),
        ('{"k": {"read_only": true, "colections": ["a"]}}', "Extra inputs are not permitted"),
        ('{"k": {"collections": "team-a"}}', "valid list"),
        ('{"k": {"collections": []}}', "use null for all collections"),
        ('{"k": {"collections": ["Team A"]}}', "is not a collection name"),
        ('{"k": true}', "entry 1 must be an object"),
        ('{"k": {"key": "other"}}', "entry 1 must be an object"),
        ('{"k": ', "API_KEY_SCOPES is not valid JSON"),
        ('["k"]', "api_key_scopes"),
    ],
)
def test_bad_scopes_stop_the_start_with_a_clear_error_that_never_shows_a_key(
    tmp_path: Path, scopes: str, message: str
) -> None:
    with pytest.raises(ValidationError) as caught:
        make_settings(tmp_path, api_keys="k,other-secret-key", api_key_scopes=scopes)
    shown = str(caught.value)
    assert message in shown
    assert "other-secret-key" not in shown and "not-listed-secret" not in shown


def test_scopes_from_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("API_KEYS", "team-a-key,admin-key")
    monkeypatch.setenv("API_KEY_SCOPES", '{"team-a-key": {"collections": ["team-a"], "read_only": true}}')
    from carrag.services.settings import Settings

    settings = Settings(_env_file=None, data_dir=tmp_path)  # type: ignore[call-arg]
    assert [entry.collections for entry in settings.api_key_scopes] == [["team-a"]]


def test_key_ring_turns_a_key_into_its_principal() -> None:
    ring = KeyRing(
        [SecretStr("full"), SecretStr("reader"), SecretStr("team")],
        [
            ScopedKey(key=SecretStr("reader"), read_only=True),
            ScopedKey(key=SecretStr("team"), collections=["team-a", "team-b"]),
        ],
    )
    full, reader, team = (ring.authenticate(key) for key in ("full", "reader", "team"))
    assert full is not None and full.full_access and full.key_id is not None
    assert reader == Principal(reader.key_id if reader else None, None, True)
    assert team is not None and team.collections == frozenset({"team-a", "team-b"}) and not team.read_only
    assert len({full.key_id, reader.key_id, team.key_id}) == 3  # type: ignore[union-attr]
    assert "full" not in (full.key_id or "")
    for wrong in ("", "ful", "full ", "FULL", "team-a"):
        assert ring.authenticate(wrong) is None


def test_a_scoped_key_missing_from_api_keys_is_refused_by_the_ring() -> None:
    ring = KeyRing([SecretStr("full")], [ScopedKey(key=SecretStr("ghost"), read_only=True)])
    assert ring.authenticate("ghost") is None


def test_without_api_keys_everyone_has_full_access() -> None:
    assert KeyRing([]).authenticate(None) is FULL_ACCESS
    assert KeyRing([]).authenticate("anything") is FULL_ACCESS


def test_principal_checks() -> None:
    reader = Principal("r", frozenset({"team-a"}), read_only=True)
    writer = Principal("w", frozenset({"team-a", "team-b"}))
    assert reader.can_read("team-a") and not reader.can_read("team-b") and not reader.can_write("team-a")
    assert writer.can_write("team-b") and not writer.can_write("default")
    assert FULL_ACCESS.can_write("anything") and FULL_ACCESS.full_access
    writer.check_read(["team-a", "team-b"])
    with pytest.raises(Forbidden, match="may not read collection 'default', 'x'"):
        writer.check_read(["team-a", "default", "x"])
    with pytest.raises(Forbidden, match="read-only"):
        reader.check_write("team-a")
    with pytest.raises(Forbidden, match="may not write to collection 'default'"):
        writer.check_write("default")
    with pytest.raises(Forbidden, match="Resetting needs an API key with access to every collection"):
        writer.check_full_access("Resetting")
    with pytest.raises(Forbidden, match="read-only"):
        Principal("r", None, read_only=True).check_full_access("Resetting")
    FULL_ACCESS.check_full_access("Resetting")


async def test_a_scope_whose_collections_hold_nothing_sees_nothing(container: Container) -> None:
    """An empty set of readable collection ids must never reach the store as "no filter" (= everything)."""
    stored = await container.ingestion.ingest_file(b"Brake fluid every two years.", "brakes.txt", IngestCommand())
    await container.store.create_collection(Collection("c-team-a", "team-a", "2026-11-23T00:00:00+00:00"))
    documents = DocumentService(container.store)
    for scope in (frozenset({"team-a"}), frozenset({"no-such-collection"})):
        principal = Principal("k", scope)
        assert await readable_collection_ids(principal, documents.collections) in ((), ("c-team-a",))
        page = await documents.page(principal=principal)
        assert (page.items, page.total) == ([], 0)
        assert await documents.sources(principal=principal) == []
        with pytest.raises(NotFound):
            await documents.get(stored.document_id, principal)
        with pytest.raises(NotFound):
            await documents.delete(stored.document_id, principal)
    default_reader = Principal("k", frozenset({"default"}), read_only=True)
    assert (await documents.page(principal=default_reader)).total == 1
    assert await documents.sources(principal=default_reader) == [("brakes.txt", "text")]
    with pytest.raises(Forbidden, match="read-only"):
        await documents.update_metadata(stored.document_id, tags=["x"], principal=default_reader)
    assert (await documents.get(stored.document_id, default_reader)).document_id == stored.document_id
