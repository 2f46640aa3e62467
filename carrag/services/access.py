"""Who may do what: API_KEYS, optionally limited by API_KEY_SCOPES to named collections and/or to
reading, and the `Principal` a request acts as.

Outside the key's scope a named collection is a 403 and a document or job a 404 (as if it did not
exist); listings show only what the key may read. Scopes name collections, not ids, so a renamed
collection leaves the scopes that named it (failing closed).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

from pydantic import BaseModel, ConfigDict, SecretStr, field_validator

from carrag.services.errors import Forbidden

COLLECTION_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
SCOPE_SHAPE = '{"<key>": {"collections": ["<name>", ...] or null, "read_only": true or false}}'


class ScopedKey(BaseModel):
    """One entry of API_KEY_SCOPES: a key of API_KEYS and what it may reach."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    key: SecretStr
    collections: list[str] | None = None  # None: every collection
    read_only: bool = False

    @field_validator("collections")
    @classmethod
    def _names(cls, names: list[str] | None) -> list[str] | None:
        if names is None:
            return None
        if not names:
            raise ValueError("an empty list would reach no collection; use null for all collections")
        for name in names:
            if not COLLECTION_NAME.match(name):
                raise ValueError(f"{name!r} is not a collection name (1-64 characters of a-z, 0-9, '_', '-')")
        return names


def parse_key_scopes(value: object) -> object:
    """API_KEY_SCOPES as the environment gives it (a JSON object keyed by API key) → entries for
    `ScopedKey`. Errors never quote a key."""
    if isinstance(value, str):
        if not value.strip():
            return []
        try:
            value = json.loads(value)
        except json.JSONDecodeError as exc:
            raise ValueError(
                f"API_KEY_SCOPES is not valid JSON ({exc.msg}, character {exc.pos}); expected {SCOPE_SHAPE}"
            ) from None
    if isinstance(value, dict):
        entries = []
        for position, (key, scope) in enumerate(value.items(), start=1):
            if not isinstance(scope, dict) or "key" in scope:
                raise ValueError(f"API_KEY_SCOPES entry {position} must be an object shaped as {SCOPE_SHAPE}")
            entries.append({**scope, "key": key})
        return entries
    if value is None:
        return []
    if isinstance(value, list):
        return value
    raise ValueError(f"API_KEY_SCOPES must be a JSON object shaped as {SCOPE_SHAPE}")


def unknown_scoped_keys(scoped: Sequence[ScopedKey], api_keys: Sequence[SecretStr]) -> list[int]:
    """Positions (from 1) of the entries of API_KEY_SCOPES whose key is not one of API_KEYS."""
    known = {key.get_secret_value() for key in api_keys}
    return [position for position, entry in enumerate(scoped, start=1) if entry.key.get_secret_value() not in known]


@dataclass(frozen=True, slots=True)
class Principal:
    """Who a request acts as. ``key_id`` names the key without revealing it (None: no API_KEYS);
    ``collections`` None means every collection."""

    key_id: str | None = None
    collections: frozenset[str] | None = None
    read_only: bool = False

    @property
    def full_access(self) -> bool:
        return self.collections is None and not self.read_only

    def can_read(self, collection: str) -> bool:
        return self.collections is None or collection in self.collections

    def can_write(self, collection: str) -> bool:
        return not self.read_only and self.can_read(collection)

    # --- checks that raise Forbidden (403) ------------------------------------------------------------
    def check_read(self, collections: Iterable[str]) -> None:
        outside = [name for name in collections if not self.can_read(name)]
        if outside:
            raise Forbidden(f"This API key may not read collection {_quoted(outside)}.")

    def check_write(self, collection: str) -> None:
        self.check_change()
        if not self.can_read(collection):
            raise Forbidden(f"This API key may not write to collection {_quoted([collection])}.")

    def check_change(self) -> None:
        """Any change at all (ingest, edit, delete, cancel)."""
        if self.read_only:
            raise Forbidden("This API key is read-only: it may not change anything.")

    def check_full_access(self, action: str) -> None:
        """Administration (collections, /admin/*): only a key limited to nothing."""
        self.check_change()
        if not self.full_access:
            raise Forbidden(f"{action} needs an API key with access to every collection.")


FULL_ACCESS = Principal()


# --- scopes name collections; documents carry the collection's id --------------------------------------
class CollectionNames(Protocol):  # `CollectionService`
    async def names_by_id(self) -> dict[str, str]: ...


async def readable_collection_ids(principal: Principal, collections: CollectionNames) -> tuple[str, ...] | None:
    """The ids of the collections ``principal`` may read; None when it may read every one. Empty when it
    may read none that exists: callers must then find nothing, never pass it on as "no filter"."""
    if principal.collections is None:
        return None
    names = await collections.names_by_id()
    return tuple(collection_id for collection_id, name in names.items() if principal.can_read(name))


async def can_read_collection_id(principal: Principal, collections: CollectionNames, collection_id: str) -> bool:
    if principal.collections is None:
        return True
    name = (await collections.names_by_id()).get(collection_id)
    return name is not None and principal.can_read(name)


def _quoted(names: Sequence[str]) -> str:
    return ", ".join(f"'{name}'" for name in names)


def key_id(key: str) -> str:
    """A short, stable name for a key in logs and errors (not reversible)."""
    return "key-" + hashlib.sha256(key.encode()).hexdigest()[:10]


class KeyRing:
    """API_KEYS and API_KEY_SCOPES, to turn a presented key into a `Principal`.

    Comparisons are constant-time and never stop early: every key is compared in full, so timing
    reveals neither which key matched nor how much of a prefix did.
    """

    def __init__(self, api_keys: Sequence[SecretStr], scoped: Sequence[ScopedKey] = ()) -> None:
        self.api_keys = list(api_keys)
        self.scoped = list(scoped)

    def authenticate(self, presented: str | None) -> Principal | None:
        """The principal for ``presented``; None when keys are required and it is not one of them."""
        if not self.api_keys:  # every request has full access, without a key
            return FULL_ACCESS
        presented_bytes = (presented or "").encode()
        matched = False
        for key in self.api_keys:
            matched |= hmac.compare_digest(presented_bytes, key.get_secret_value().encode())
        scope: ScopedKey | None = None
        for entry in self.scoped:
            if hmac.compare_digest(presented_bytes, entry.key.get_secret_value().encode()):
                scope = entry
        if not matched:
            return None
        identity = key_id(presented or "")
        if scope is None:
            return Principal(identity)
        collections = frozenset(scope.collections) if scope.collections is not None else None
        return Principal(identity, collections, scope.read_only)
