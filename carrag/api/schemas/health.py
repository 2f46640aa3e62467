from __future__ import annotations

from typing import Literal

from pydantic import BaseModel


class ComponentOut(BaseModel):
    status: Literal["ok", "degraded", "unavailable"]
    backend: str
    model: str | None = None
    detail: str | None = None


class HealthOut(BaseModel):
    status: Literal["ok", "degraded", "unavailable"]
    version: str
    components: dict[str, ComponentOut]
