from __future__ import annotations

from typing import Literal

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


class QueryDefaults(Schema):
    answer_mode: Literal["generate", "extract", "auto"] = Field(description="ANSWER_MODE, as resolved for this LLM.")
    top_k: int = Field(description="DEFAULT_TOP_K: passages per search and answer.")
    rerank: bool = Field(
        description="Whether passages are reranked (RERANK_ENABLED, `auto`: when the model is installed)."
    )


class HealthOut(Schema):
    status: HealthStatus
    version: str
    components: dict[str, ComponentOut]
    store: StoreInUse | None = Field(
        None, description="The store this server uses: the SQLite file (under DATA_DIR) or Elasticsearch URL and index."
    )
    defaults: QueryDefaults | None = Field(
        None,
        description="What /search and /query use for a field a request leaves out (the web UI's “Server default”).",
    )
