from __future__ import annotations

from typing import Literal

from carrag.api.schemas.base import Schema


class ComponentOut(Schema):
    status: Literal["ok", "degraded", "unavailable"]
    backend: str
    model: str | None = None
    detail: str | None = None


class HealthOut(Schema):
    status: Literal["ok", "degraded", "unavailable"]
    version: str
    components: dict[str, ComponentOut]
