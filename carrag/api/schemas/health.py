from __future__ import annotations

from carrag.api.schemas.base import Schema
from carrag.services.vocabulary import HealthStatus


class ComponentOut(Schema):
    status: HealthStatus
    backend: str
    model: str | None = None
    detail: str | None = None


class HealthOut(Schema):
    status: HealthStatus
    version: str
    components: dict[str, ComponentOut]
