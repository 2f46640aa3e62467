"""Tools for agents: ``search_documents`` runs the `/search` path and answers one block per passage,
``[Source: … | Score: … | Page: …]`` then the passage. The score is the rerank score, else the kNN
cosine, else the fused RRF score.
"""

from __future__ import annotations

from carrag.services.access import FULL_ACCESS, Principal
from carrag.services.collections import CollectionService
from carrag.services.documents import DocumentService
from carrag.services.models import DEFAULT_COLLECTION
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
    if hit.collection != DEFAULT_COLLECTION:
        header += f" | Collection: {hit.collection}"
    return f"{header}]\n{hit.text.strip()}"


async def search_documents(
    search: SearchService,
    requests: RequestFactory,
    query: str,
    top_k: int | None = None,
    source: str | None = None,
    collections: list[str] | None = None,
    *,
    tags: list[str] | None = None,
    filters: MetadataFilters | None = None,
    principal: Principal = FULL_ACCESS,
) -> str:
    """Hybrid search (BM25 + kNN, fused, reranked, expanded) formatted for an agent to read;
    ``top_k`` None: DEFAULT_TOP_K; ``collections``: the collections searched (none: ``default``; each
    must be in ``principal``'s scope)."""
    request = requests.search(
        query, top_k=top_k, source=source, collections=collections, tags=tags, filters=filters, principal=principal
    )
    source = request.filters.source
    outcome = await search.search(request)
    if not outcome.hits:
        message = outcome.message or EMPTY_INDEX_MESSAGE
        if source and not outcome.empty_index:
            message += f" (source filter: {source!r}; list_sources shows the ingested sources)"
        return message
    passages = PASSAGE_SEPARATOR.join(format_hit(hit) for hit in outcome.hits)
    return f"Note: {outcome.degraded}\n\n{passages}" if outcome.degraded else passages


async def list_sources(
    documents: DocumentService, collection: str | None = None, principal: Principal = FULL_ACCESS
) -> str:
    """Every source id of ``collection`` (default: ``default``, the collection ``search_documents``
    searches by default), the values it can filter on, one per line (Forbidden outside ``principal``'s scope)."""
    sources = await documents.sources([collection or DEFAULT_COLLECTION], principal=principal)
    if not sources:
        return EMPTY_INDEX_MESSAGE
    lines = [f"{len(sources)} ingested source{'s' if len(sources) != 1 else ''} (source id, type):"]
    lines += [f"- {source_id} ({source_type})" for source_id, source_type in sources]
    return "\n".join(lines)


async def list_collections(collections: CollectionService, principal: Principal = FULL_ACCESS) -> str:
    """Every collection (knowledge base) ``principal`` may read with its document count, one per line."""
    found = await collections.list(principal)
    lines = [f"{len(found)} collection{'s' if len(found) != 1 else ''} (name, documents):"]
    lines += [f"- {collection.name} ({collection.document_count})" for collection in found]
    return "\n".join(lines)
