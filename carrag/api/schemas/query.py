from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import AliasChoices, AliasPath, Field, StringConstraints, TypeAdapter, field_validator, model_validator

from carrag.api.schemas.base import Schema, UserMetadata, read_from
from carrag.services.access import FULL_ACCESS, Principal
from carrag.services.errors import CarragError
from carrag.services.models import ChatMessage
from carrag.services.requests import AnswerQuery, MetadataFilters, RequestFactory, SearchQuery
from carrag.services.vocabulary import SearchMode

ShortText = Annotated[str, StringConstraints(min_length=1, max_length=200)]
OneOrMore = ShortText | Annotated[list[ShortText], Field(max_length=50)]


class HistoryMessage(Schema):
    role: Literal["user", "assistant"]
    content: str = Field(..., max_length=20000)


class _QuestionBase(Schema):
    question: str = Field(..., min_length=1, max_length=20000)
    top_k: int | None = Field(
        None, ge=1, le=1000, description="Passages to return (default: DEFAULT_TOP_K; at most MAX_TOP_K)."
    )
    tags: list[str] | None = Field(None, max_length=50, description="Only documents with any of these tags.")
    source: str | None = Field(None, max_length=2048, description="Exact source id or glob (`*.md`).")
    rerank: bool | None = Field(None, description="Override RERANK_ENABLED for this request.")
    tag_prefix: OneOrMore | None = Field(
        None, description="Only documents with a tag starting with this (or any of these): `team-` matches `team-a`."
    )
    metadata: UserMetadata | None = Field(
        None, description="Only documents whose user metadata has every one of these key/value pairs."
    )
    source_type: OneOrMore | None = Field(None, description="Only documents of this type (or any of these): `pdf`.")
    created_after: datetime | None = Field(None, description="Only documents created at or after (ISO 8601).")
    created_before: datetime | None = Field(None, description="Only documents created before (ISO 8601).")
    filename: str | None = Field(None, max_length=1024, description="Only file names matching this glob (`*.pdf`).")
    collection: str | None = Field(
        None, max_length=64, description="Search this collection (knowledge base); absent: `default`."
    )
    collections: list[str] | None = Field(
        None, min_length=1, max_length=100, description="Search several collections (not with `collection`)."
    )

    @model_validator(mode="after")
    def _one_way_to_name_collections(self) -> _QuestionBase:
        if self.collection is not None and self.collections is not None:
            raise ValueError("give either collection or collections, not both")
        return self

    @field_validator("question")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("question must not be blank")
        return value

    def metadata_filters(self) -> MetadataFilters:
        return MetadataFilters(
            tag_prefixes=[self.tag_prefix] if isinstance(self.tag_prefix, str) else self.tag_prefix,
            metadata=self.metadata,
            source_types=[self.source_type] if isinstance(self.source_type, str) else self.source_type,
            created_after=self.created_after,
            created_before=self.created_before,
            filename=self.filename,
        )

    def search_query(
        self,
        requests: RequestFactory,
        principal: Principal,
        mode: SearchMode = SearchMode.HYBRID,
        explain: bool = False,
    ) -> SearchQuery:
        return requests.search(
            self.question,
            top_k=self.top_k,
            tags=self.tags,
            source=self.source,
            rerank=self.rerank,
            mode=mode,
            explain=explain,
            filters=self.metadata_filters(),
            principal=principal,
            collection=self.collection,
            collections=self.collections,
        )


AnswerModeName = Literal["generate", "extract", "auto"]


class AnswerOptions(Schema):
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

    def to_query(self, requests: RequestFactory, principal: Principal = FULL_ACCESS) -> AnswerQuery:
        search = self.search_query(requests, principal)
        history = [ChatMessage(m.role, m.content) for m in self.history]
        return AnswerQuery(search, history, answer_mode=self.answer_mode, min_relevance=self.min_relevance)


class SearchRequest(_QuestionBase):
    explain: bool = Field(False, description="Add each result's BM25 rank, kNN rank, RRF and rerank scores.")
    mode: SearchMode = SearchMode.HYBRID

    def to_query(self, requests: RequestFactory, principal: Principal = FULL_ACCESS) -> SearchQuery:
        return self.search_query(requests, principal, self.mode, self.explain)


class Explain(Schema):
    bm25_rank: int | None
    knn_rank: int | None
    bm25_score: float | None
    knn_score: float | None
    rrf_score: float | None
    rerank_score: float | None
    chunk_text: str = Field(validation_alias=AliasChoices(AliasPath("chunk", "text"), "chunk_text"))  # see read_from


class Highlight(Schema):
    start: int
    end: int


class GroundedSentence(Schema):
    text: str
    start: int = Field(description="Character offset of the sentence in `answer`.")
    end: int
    support: float = Field(ge=0, le=1)
    source: int | None = Field(None, description="1-based [Source n] that supports it best (null: none does).")
    supported: bool


class Grounding(Schema):
    grounded: bool = Field(description="Every sentence is supported by a source.")
    support: float = Field(ge=0, le=1, description="The weakest sentence's support.")
    sentences: list[GroundedSentence]
    citations_removed: list[int] = Field(default_factory=list, description="[Source n] that pointed at no source.")
    citations_added: list[int] = Field(default_factory=list, description="Citations added to uncited sentences.")
    unsupported: list[int] = Field(default_factory=list, description="Indexes into `sentences`.")


FinishReason = Literal["stop", "length", "loop", "no_answer"]


class AnswerCheck(Schema):
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
        None,
        description="The answer model's confidence: the mean of P(the quoted unit answers) and P(the question "
        "is answerable); answered from 0.5 (or min_relevance).",
    )


class Source(Schema):
    """A search hit (`carrag.services.retrieval.search.SearchHit`): its chunk's fields, the expanded passage."""

    document_id: str = Field(validation_alias=read_from("chunk", "document_id"))
    filename: str = Field(validation_alias=read_from("chunk", "filename"))
    source_id: str = Field(validation_alias=read_from("chunk", "source_id"))
    chunk_index: int = Field(validation_alias=read_from("chunk", "chunk_index"))
    text: str = Field(description="The winning chunk expanded with its neighbours.")
    score: float
    rerank_score: float | None = None
    page: int | None = None
    pages: list[int] = Field(default_factory=list, validation_alias=read_from("chunk", "pages"))
    tags: list[str] = Field(default_factory=list, validation_alias=read_from("chunk", "tags"))
    title: str | None = Field(None, validation_alias=read_from("chunk", "title"))
    external_id: str | None = Field(None, validation_alias=read_from("chunk", "external_id"))
    section: str | None = Field(None, validation_alias=read_from("chunk", "section"))
    collection: str = Field("default", description="The name of the document's collection.")
    window: list[int] | None = None
    chunk_span: Highlight | None = Field(
        None,
        description="Character offsets in `text` of the chunk that matched (`chunk_index`); around it, its neighbours.",
    )
    merged_chunk_indexes: list[int] = Field(default_factory=list)
    explain: Explain | None = None
    highlights: list[Highlight] = Field(
        default_factory=list, description="Character offsets in `text` of the sentences the answer relies on."
    )


class AnswerRun(AnswerCheck):
    """How the answer was made, in /query's answer and the SSE ``done`` event."""

    model: str | None = Field(description="The LLM that wrote the answer; null when none ran.")
    duration_ms: float
    timings_ms: dict[str, float] = Field(default_factory=dict, description="Milliseconds spent in each stage.")
    reranked: bool = False
    rerank_note: str | None = Field(None, description="Why the passages were not reranked, when they were not.")
    degraded: str | None = Field(None, description="Set when the passages come from BM25 alone (see /search): why.")


class QueryResponse(AnswerRun):
    answer: str
    sources: list[Source] = Field(description="The passages the answer was generated from; [Source n] is the n-th.")


class SearchResponse(Schema):
    results: list[Source] = Field(validation_alias=AliasChoices("hits", "results"))  # a SearchOutcome's first
    timings_ms: dict[str, float]
    reranked: bool
    rerank_note: str | None = None
    message: str | None = None
    degraded: str | None = Field(
        None,
        description="Set when the results are lexical (BM25) only: during a change of embedding model whose "
        "old model cannot be loaded, until the reindex swaps the new vectors in. Says why.",
    )


# --- /query/stream events (Server-Sent Events; the CLI reads them back) ------------------------------
class StreamToken(Schema):
    text: str = Field(description="One text delta; never cumulative.")
    draft: bool = Field(
        False,
        description="True: the model's raw output as it is written (`generate` mode), not checked yet; "
        "`done.answer` replaces it and `done.grounding` marks what no source supports. False: checked text.",
    )


class Usage(Schema):
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int


class StreamDone(AnswerRun):
    empty_index: bool = False
    answer: str = Field("", description="The final answer: replaces the streamed tokens.")
    highlights: list[list[Highlight]] = Field(default_factory=list, description="Per source, in `sources` order.")
    usage: Usage | None = None


class StreamError(Schema):
    detail: str


StreamPayload = list[Source] | StreamToken | StreamDone | StreamError
SOURCE_LIST = TypeAdapter(list[Source])


def stream_payload(kind: str, data: Any) -> StreamPayload:
    """One answer-stream event's data as its wire type: from the answer service's event (search hits,
    a text delta, the summary, an error message) or from the event's JSON."""
    if kind == "sources":
        return SOURCE_LIST.validate_python(data, from_attributes=True)
    if kind == "token":
        return StreamToken(text=data) if isinstance(data, str) else StreamToken.model_validate(data)
    if kind == "done":
        return StreamDone.model_validate(data)
    if isinstance(data, CarragError):
        return StreamError(detail=data.message)
    return StreamError(detail=data) if isinstance(data, str) else StreamError.model_validate(data)


def jsonable(payload: StreamPayload) -> Any:
    if isinstance(payload, list):
        return SOURCE_LIST.dump_python(payload, mode="json")
    return payload.model_dump(mode="json")
