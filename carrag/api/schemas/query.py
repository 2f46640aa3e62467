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


AnswerModeName = Literal["generate", "extract", "auto"]


class AnswerOptions(BaseModel):
    """How the answer is made (carrag/services/answers/): shared by /query* and /v1/chat/completions."""

    answer_mode: AnswerModeName | None = Field(
        None, description="`generate`, `extract` or `auto` for this request (default: ANSWER_MODE)."
    )
    min_relevance: float | None = Field(
        None,
        ge=0,
        le=1,
        description='Override the "documents don\'t say" threshold for this request (0 never refuses); '
        "see ANSWER_MIN_RELEVANCE.",
    )


class QueryRequest(_QuestionBase, AnswerOptions):
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


class Highlight(BaseModel):
    start: int
    end: int


class GroundedSentence(BaseModel):
    text: str
    start: int = Field(description="Character offset of the sentence in `answer`.")
    end: int
    support: float = Field(ge=0, le=1)
    source: int | None = Field(None, description="1-based [Source n] that supports it best (null: none does).")
    supported: bool


class Grounding(BaseModel):
    grounded: bool = Field(description="Every sentence is supported by a source.")
    support: float = Field(ge=0, le=1, description="The weakest sentence's support.")
    sentences: list[GroundedSentence]
    citations_removed: list[int] = Field(default_factory=list, description="[Source n] that pointed at no source.")
    citations_added: list[int] = Field(default_factory=list, description="Citations added to uncited sentences.")
    unsupported: list[int] = Field(default_factory=list, description="Indexes into `sentences`.")


FinishReason = Literal["stop", "length", "loop", "no_answer"]


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
    highlights: list[Highlight] = Field(
        default_factory=list, description="Character offsets in `text` of the sentences the answer relies on."
    )


class AnswerCheck(BaseModel):
    """What made the answer and how it was checked: in /query, the SSE `done` event and /v1 (`carrag`)."""

    answer_mode: Literal["generate", "extract", "none"] = Field(
        "generate", description="What produced the answer; `none`: the documents don't say."
    )
    requested_mode: AnswerModeName = "generate"
    fallback_reason: str | None = Field(None, description="Why `auto` did not keep the generated answer.")
    answerable: bool = Field(True, description="false: no passage was relevant enough; `sources` are the closest.")
    finish_reason: FinishReason = "stop"
    grounding: Grounding | None = Field(None, description="The grounding check of a generated answer.")
    relevance: float | None = Field(
        None, description="The best passage sentence's relevance to the question (compared with min_relevance)."
    )


class QueryResponse(AnswerCheck):
    answer: str
    sources: list[Source]
    model: str | None = Field(description="The LLM that wrote the answer; null when none ran.")
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
