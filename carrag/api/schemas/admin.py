"""Wire types of the admin routes beyond the reset (which lives with the documents' schemas)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from carrag.api.schemas.base import IsoTimestamp, Schema


class ReindexStatusOut(Schema):
    state: Literal["idle", "running", "done", "failed"]
    store: str = Field(description="sqlite or elasticsearch")
    model: str | None = Field(None, description="The model the store is being (or was last) re-embedded with.")
    unit: Literal["chunks", "documents"] = Field(description="What done and total count.")
    done: int
    total: int
    passes: int = Field(0, description="SQLite: sweeps over the chunks (writes during the run add one).")
    started_at: IsoTimestamp | None = None
    finished_at: IsoTimestamp | None = None
    seconds: float
    error: str | None = None
    detail: str | None = None
