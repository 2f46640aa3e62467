from __future__ import annotations

from pydantic import Field

from carrag.api.schemas.base import Schema
from carrag.services.vocabulary import HealthStatus


class ComponentOut(Schema):
    status: HealthStatus
    backend: str
    model: str | None = None
    detail: str | None = None


class StoreInUse(Schema):
    backend: str
    location: str


class HealthOut(Schema):
    status: HealthStatus
    version: str
    components: dict[str, ComponentOut]
    store: StoreInUse | None = Field(
        None, description="The store this server uses: the SQLite file (under DATA_DIR) or Elasticsearch URL and index."
    )
