"""Documents named the way people name them: an id, an id prefix, a source id or a file name, resolved by
the server (``GET /documents?ref=``); several matches are an `AmbiguousReference` (exit status 2).
"""

from __future__ import annotations

from rich.markup import escape

from carrag.api.schemas.documents import DocumentOut
from carrag.cli.client import ClientError
from carrag.cli.clients import CarragClient
from carrag.cli.output import Column, print_rows, short_id, stderr

CANDIDATES_SHOWN = 10
AMBIGUOUS_EXIT_CODE = 2


class AmbiguousReference(ClientError):
    def __init__(self, reference: str, candidates: list[DocumentOut], total: int) -> None:
        super().__init__(
            f"{reference!r} matches {total} documents; give a longer id prefix, the full id, the source id "
            "or --collection"
        )
        self.reference = reference
        self.candidates = candidates
        self.total = total


async def resolve_document(client: CarragClient, reference: str, collection: str | None = None) -> DocumentOut:
    """``collection``: look only there (a name); None: in every collection."""
    page = await client.find_documents(reference, limit=CANDIDATES_SHOWN, collection=collection)
    if len(page.items) == 1:
        return page.items[0]
    if not page.items:
        raise ClientError(
            f"No document matches {reference!r} (by id, id prefix, source id or file name); "
            "`carrag documents list` shows them.",
            404,
        )
    raise AmbiguousReference(reference, page.items, page.total)


def print_candidates(error: AmbiguousReference) -> None:
    """The candidates, on stderr: the id prefix to type again, the file name and the source id."""
    console = stderr()
    console.print(f"[red]error:[/red] {escape(error.detail)}")
    columns = [
        Column("document_id", on_terminal=short_id, terminal_header="id"),
        Column("collection", width=16),
        Column("filename", width=30),
        Column("source", flexible=True),
        Column("created", width=19),
    ]
    rows = [
        [doc.document_id, doc.collection or "", doc.filename, doc.source_id, doc.created_at[:19].replace("T", " ")]
        for doc in error.candidates
    ]
    print_rows(columns, rows, console=console)
    if error.total > len(error.candidates):
        console.print(f"… and {error.total - len(error.candidates)} more")
