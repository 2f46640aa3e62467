"""A PDF page as a picture, with a chunk and an answer's sentences marked (`carrag/services/page_images.py`)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query
from fastapi.responses import Response

from carrag.api.deps import PageImagesDep, PrincipalDep
from carrag.api.json_body import JsonBodyRoute
from carrag.services.errors import InvalidInput
from carrag.services.page_images import MAX_HIGHLIGHTS, PageMarks

router = APIRouter(prefix="/documents", tags=["documents"], route_class=JsonBodyRoute)


def _pair(value: str, name: str) -> tuple[int, int]:
    first, dash, last = value.partition("-")
    if not (dash and first.isdigit() and last.isdigit() and len(first) <= 9 and len(last) <= 9):
        raise InvalidInput(f"{name} must be two whole numbers joined by '-', like 12-40 (got {value[:40]!r}).")
    return int(first), int(last)


@router.get(
    "/{document_id}/pages/{page}/image",
    response_class=Response,
    summary="A PDF page as a PNG picture, with a chunk and the sentences an answer relies on marked",
    responses={
        200: {
            "content": {"image/png": {}},
            "description": "The page; `X-Page-Count` says how many pages the document has, `X-Page-Size` its size "
            "in points as shown (`width x height`).",
        },
        404: {"description": "No such document (or not for this key), page or chunk."},
        409: {"description": "Not a PDF, or its original was not kept (KEEP_ORIGINALS): nothing to draw from."},
    },
)
async def get_page_image(
    pages: PageImagesDep,
    principal: PrincipalDep,
    document_id: str,
    page: Annotated[int, Path(ge=1, le=1_000_000, description="1-based, as in a chunk's `pages`.")],
    chunk: Annotated[
        int | None, Query(ge=0, le=100_000_000, description="Tint this chunk's text (its `chunk_index`).")
    ] = None,
    window: Annotated[
        str | None,
        Query(
            max_length=40,
            description="`first-last` chunk indexes whose stitched text `highlight` offsets are in: a search hit's "
            "`window` (its `text` is those chunks). Default: `chunk` alone.",
        ),
    ] = None,
    highlight: Annotated[
        list[str] | None,
        Query(
            max_length=MAX_HIGHLIGHTS,
            description="`start-end` character offsets to mark (repeat for several): a source's `highlights`.",
        ),
    ] = None,
) -> Response:
    marks = PageMarks(
        chunk=chunk,
        window=_pair(window, "window") if window else None,
        highlights=tuple(_pair(item, "highlight") for item in highlight or []),
    )
    image = await pages.image(document_id, page, marks, principal)
    return Response(
        image.png,
        media_type="image/png",
        headers={
            # a document id names one version: its pages never change
            "Cache-Control": "private, max-age=86400",
            "X-Page-Count": str(image.page_count),
            "X-Page-Size": f"{image.page_width:g}x{image.page_height:g}",
        },
    )
