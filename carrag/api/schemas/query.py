from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, field_validator


class HistoryMessage(BaseModel):
    role: Literal["user", "assistant"]
    content: str = Field(..., max_length=20000)


class _QuestionBase(BaseModel):
    question: str = Field(..., min_length=1, max_length=20000)
    top_k: int = Field(5, ge=1, le=100)
    tags: list[str] | None = Field(None, max_length=50, description="Only documents with any of these tags.")
    source: str | None = Field(None, max_length=2048, description="Exact source id or glob (`*.md`).")
    rerank: bool | None = Field(None, description="Override RERANK_ENABLED for this request.")

    @field_validator("question")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("question must not be blank")
        return value


class QueryRequest(_QuestionBase):
    history: list[HistoryMessage] = Field(default_factory=list, max_length=100)


class SearchRequest(_QuestionBase):
    explain: bool = Field(False, description="Add each result's BM25 rank, kNN rank, RRF and rerank scores.")
    mode: Literal["hybrid", "bm25", "knn"] = "hybrid"


class Explain(BaseModel):
    bm25_rank: int | None
    knn_rank: int | None
    bm25_score: float | None
    knn_score: float | None
    rrf_score: float | None
    rerank_score: float | None
    chunk_text: str


class Source(BaseModel):
    document_id: str
    filename: str
    source_id: str
    chunk_index: int
    text: str = Field(description="The winning chunk expanded with its neighbours.")
    score: float
    rerank_score: float | None = None
    page: int | None = None
    pages: list[int] = Field(default_factory=list)
    tags: list[str] = Field(default_factory=list)
    title: str | None = None
    external_id: str | None = None
    section: str | None = None
    window: list[int] | None = None
    merged_chunk_indexes: list[int] = Field(default_factory=list)
    explain: Explain | None = None


class QueryResponse(BaseModel):
    answer: str
    sources: list[Source]
    model: str
    duration_ms: float
    timings_ms: dict[str, float] = Field(default_factory=dict)
    reranked: bool = False
    rerank_note: str | None = None


class SearchResponse(BaseModel):
    results: list[Source]
    timings_ms: dict[str, float]
    reranked: bool
    rerank_note: str | None = None
    message: str | None = None
