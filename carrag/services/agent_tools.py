"""Tools for agents (seed 000's ``search_documents``): the `/search` code path, answered as text.

``search_documents`` returns one block per passage, best first, separated by ``\\n\\n---\\n\\n``::

    [Source: manuals/f150.pdf | Score: 0.872 | Page: 3]
    <the passage: the winning chunk widened with its neighbours>

The score shown is the most meaningful one the search produced for that passage: the cross-encoder
score when the results were reranked, otherwise the chunk's kNN cosine similarity (seed 000's
"1 - distance") when the semantic leg found it, otherwise its fused RRF score (a BM25-only hit).
"""

from __future__ import annotations

from carrag.services.documents import DocumentService
from carrag.services.requests import MetadataFilters, RequestFactory
from carrag.services.retrieval.search import EMPTY_INDEX_MESSAGE, SearchHit, SearchService

PASSAGE_SEPARATOR = "\n\n---\n\n"


def shown_score(hit: SearchHit) -> float:
    if hit.rerank_score is not None:
        return hit.rerank_score
    if hit.knn_score is not None:
        return hit.knn_score
    return hit.rrf_score if hit.rrf_score is not None else hit.score


def format_hit(hit: SearchHit) -> str:
    header = f"[Source: {hit.chunk.source_id} | Score: {shown_score(hit):.3f}"
    if hit.page is not None:
        header += f" | Page: {hit.page}"
    return f"{header}]\n{hit.text.strip()}"


async def search_documents(
    search: SearchService,
    requests: RequestFactory,
    query: str,
    top_k: int | None = None,
    source: str | None = None,
    *,
    tags: list[str] | None = None,
    filters: MetadataFilters | None = None,
) -> str:
    """Hybrid search (BM25 + kNN, fused, reranked, expanded) formatted for an agent to read;
    ``top_k`` None: DEFAULT_TOP_K."""
    request = requests.search(query, top_k=top_k, source=source, tags=tags, filters=filters)
    source = request.filters.source
    outcome = await search.search(request)
    if not outcome.hits:
        message = outcome.message or EMPTY_INDEX_MESSAGE
        if source and not outcome.empty_index:
            message += f" (source filter: {source!r}; list_sources shows the ingested sources)"
        return message
    return PASSAGE_SEPARATOR.join(format_hit(hit) for hit in outcome.hits)


async def list_sources(documents: DocumentService) -> str:
    """Every ingested source id (the values ``search_documents`` can filter on), one per line."""
    sources = await documents.sources()
    if not sources:
        return EMPTY_INDEX_MESSAGE
    lines = [f"{len(sources)} ingested source{'s' if len(sources) != 1 else ''} (source id, type):"]
    lines += [f"- {source_id} ({source_type})" for source_id, source_type in sources]
    return "\n".join(lines)
