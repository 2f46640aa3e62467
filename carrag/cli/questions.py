"""`carrag query` (the answer as it streams, then how it was made and its sources) and `carrag search`
(the best passages). A `generate` answer streams the model's draft, then the checked answer with
unsupported sentences marked.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.cells import cell_len
from rich.markup import escape
from rich.padding import Padding
from rich.text import Text

from carrag.api.schemas.query import Explain, QueryRequest, QueryResponse, SearchRequest, Source, StreamToken
from carrag.cli.answer_stream import FinishedAnswer, follow_answer
from carrag.cli.client import ClientError
from carrag.cli.clients import CarragClient
from carrag.cli.filters import CreatedAfter, CreatedBefore, FileName, MetaFilter, SourceType, TagPrefix, filter_fields
from carrag.cli.options import ApiKey, AsJson, CollectionsOption, Rerank, SourceFilter, Tags, TopK, Url
from carrag.cli.output import (
    Column,
    WordWrap,
    keep_end,
    one_line,
    pages_label,
    print_json,
    print_note,
    print_rows,
    readable_paragraphs,
    short_id,
)
from carrag.cli.running import console, run_with_client
from carrag.services.answers.marking import mark_unsupported
from carrag.services.requests import split_tags
from carrag.services.vocabulary import SearchMode


def question_fields(
    question: str,
    top_k: int | None,
    tags: str | None,
    source: str | None,
    rerank: bool | None,
    collections: list[str] | None = None,
) -> dict[str, Any]:
    """The fields a query or search request sets (the rest keep the API's defaults)."""
    given = {"top_k": top_k, "collections": collections, "tags": split_tags(tags), "source": source, "rerank": rerank}
    return {"question": question} | {name: value for name, value in given.items() if value not in (None, "", [])}


def query(
    question: Annotated[str, typer.Argument(help="The question.")],
    top_k: TopK = None,
    tags: Tags = None,
    source: SourceFilter = None,
    rerank: Rerank = None,
    answer_mode: Annotated[
        str | None,
        typer.Option(
            "--answer-mode",
            help="generate, extract or auto (default: extract with the local LLM or none, auto with Ollama or an "
            "OpenAI-compatible server; ANSWER_MODE).",
            show_default=False,
        ),
    ] = None,
    as_json: AsJson = False,
    meta: MetaFilter = None,
    tag_prefix: TagPrefix = None,
    source_type: SourceType = None,
    created_after: CreatedAfter = None,
    created_before: CreatedBefore = None,
    filename: FileName = None,
    collection: CollectionsOption = None,
    url: Url = None,
    api_key: ApiKey = None,
) -> None:
    """Ask a question: the answer streams in, then its sources are listed."""
    filters = filter_fields(meta, tag_prefix, source_type, created_after, created_before, filename)
    request = QueryRequest.model_validate(
        {**question_fields(question, top_k, tags, source, rerank, collection), **filters, "answer_mode": answer_mode}
    )
    if as_json:
        print_json(run_with_client(url, api_key, lambda client: collect_answer(client, request)))
        return

    async def work(client: CarragClient) -> None:
        printed = False
        wrap = answer_wrap()

        def show(token: StreamToken) -> None:
            nonlocal printed
            if token.draft and not printed:
                console.print(DRAFT_LABEL, markup=False, style="dim")
            printed = True
            wrap.feed(token.text)

        try:
            finished = await follow_answer(client.stream_query(request), on_token=show)
        except ClientError:
            if printed:
                wrap.close()
                typer.echo("")  # the error starts on a line of its own
            raise
        wrap.close()
        typer.echo("")
        print_answer_check(finished)
        print_sources(finished.sources)

    run_with_client(url, api_key, work)


async def collect_answer(client: CarragClient, request: QueryRequest) -> QueryResponse:
    """The streamed answer gathered into POST /query's JSON shape."""
    return (await follow_answer(client.stream_query(request))).response()


DRAFT_LABEL = "Draft (the model's text as it is written, not checked yet):"


def answer_wrap() -> WordWrap:
    """Answer text to stdout, word-wrapped on a terminal (as it is off one: scripts get the text)."""
    return WordWrap(lambda text: typer.echo(text, nl=False), console.width if console.is_terminal else None)


def print_answer_check(finished: FinishedAnswer) -> None:
    """The final answer when the streamed text was a draft, the check changed it or found unsupported
    sentences (marked), and why it was made the way it was."""
    done = finished.done
    grounding = done.grounding.model_dump() if done.grounding is not None else None
    marked = mark_unsupported(done.answer, grounding) if done.answer else ""
    if marked and (finished.drafted or marked.strip() != finished.streamed.strip()):
        console.print("\n[bold]Checked answer[/bold]")
        wrap = answer_wrap()
        wrap.feed(marked)
        wrap.close()
        typer.echo("")
    notes = [f"answer: {done.answer_mode}"]
    if done.fallback_reason:
        notes.append(done.fallback_reason)
    if done.finish_reason not in ("stop", "no_answer"):
        notes.append(f"finish: {done.finish_reason}")
    if done.grounding is not None and done.grounding.unsupported:
        notes.append(f"{len(done.grounding.unsupported)} unsupported sentence(s)")
    console.print(f"({'; '.join(notes)})", markup=False, style="dim")
    if done.degraded:
        print_note(done.degraded)


def print_sources(sources: list[Source]) -> None:
    if not sources:
        return
    console.print("\n[bold]Sources[/bold]")
    for number, source in enumerate(sources, start=1):
        where = ", ".join(filter(None, [pages_label(source.pages, source.page), f"chunk {source.chunk_index}"]))
        console.print(f"  [{number}] {escape(source.source_id)} ({where}) score {source.score:.3f}", markup=False)


def search(
    question: Annotated[str, typer.Argument(help="What to look for.")],
    top_k: TopK = None,
    tags: Tags = None,
    source: SourceFilter = None,
    rerank: Rerank = None,
    mode: Annotated[SearchMode, typer.Option("--mode", help="Retrieval legs to use.")] = SearchMode.HYBRID,
    explain: Annotated[bool, typer.Option("--explain", help="Show BM25 and kNN ranks and the RRF score.")] = False,
    meta: MetaFilter = None,
    tag_prefix: TagPrefix = None,
    source_type: SourceType = None,
    created_after: CreatedAfter = None,
    created_before: CreatedBefore = None,
    filename: FileName = None,
    as_json: AsJson = False,
    collection: CollectionsOption = None,
    url: Url = None,
    api_key: ApiKey = None,
) -> None:
    """Search without generating an answer; a table of the best passages."""
    filters = filter_fields(meta, tag_prefix, source_type, created_after, created_before, filename)
    request = SearchRequest.model_validate(
        {
            **question_fields(question, top_k, tags, source, rerank, collection),
            **filters,
            "mode": mode,
            "explain": explain,
        }
    )
    outcome = run_with_client(url, api_key, lambda client: client.search(request))
    if as_json:
        print_json(outcome)
        return
    if not outcome.results:
        print_note(outcome.message or "No results.")
        if outcome.degraded:
            print_note(outcome.degraded)
        return
    title = f"{len(outcome.results)} results" + (" (reranked)" if outcome.reranked else "")
    if console.is_terminal:
        print_passages(outcome.results, title)
    else:
        print_hit_rows(outcome.results, explain, title)
    for note in (outcome.rerank_note, outcome.degraded):
        if note:
            print_note(note)


PASSAGE_LINES = 4  # lines of each search result's text on a terminal
INDENT = 4


def print_passages(hits: list[Source], title: str) -> None:
    """Each hit as a block: number, score, source (its end, when long), page, chunk and short id;
    its title; then the first lines of the chunk that matched, word-wrapped."""
    console.print(title, style="italic", markup=False)
    width = max(console.width - INDENT, 20)
    for number, hit in enumerate(hits, start=1):
        details = hit.explain
        where = [pages_label(hit.pages, hit.page), f"chunk {hit.chunk_index}", short_id(hit.document_id)]
        if details is not None:
            bm25, knn, rrf = explain_cells(details)
            where.append(f"bm25 {bm25} knn {knn} rrf {rrf}")
        head = f"{number:<3} {hit.score:.3f}  "
        tail = "  " + " · ".join(filter(None, where))
        source = keep_end(hit.source_id, max(console.width - len(head) - len(tail), 12))
        console.print()
        console.print(
            Text(head) + Text(source, style="bold") + Text(tail, style="dim"), no_wrap=True, overflow="ellipsis"
        )
        if hit.title and hit.title != hit.filename:
            console.print(Padding(Text(one_line(hit.title)), (0, 0, 0, INDENT)), no_wrap=True, overflow="ellipsis")
        start = hit.chunk_span.start if hit.chunk_span is not None else 0
        paragraphs = readable_paragraphs(hit.text[start:])
        if paragraphs and hit.title and paragraphs[0] == hit.title.strip():
            paragraphs.pop(0)  # the heading the title was taken from
        lines = [line for paragraph in paragraphs for line in Text(paragraph).wrap(console, width)]
        shown = [line.plain.rstrip() for line in lines[:PASSAGE_LINES]]
        if len(lines) > PASSAGE_LINES:
            words = shown[-1].split(" ")
            while len(words) > 1 and cell_len(" ".join(words) + " …") > width:
                words.pop()
            shown[-1] = " ".join(words) + " …"
        for line in shown:
            console.print(Padding(Text(line), (0, 0, 0, INDENT)), no_wrap=True, overflow="ellipsis")


def print_hit_rows(hits: list[Source], explain: bool, title: str) -> None:
    columns = [
        Column("#", justify="right"),
        Column("score", justify="right"),
        Column("document_id", on_terminal=short_id, terminal_header="id"),
        Column("source", width=24),
        Column("page", width=10),
    ]
    if explain:
        columns += [Column(name, justify="right") for name in ("bm25", "knn", "rrf")]
    columns.append(Column("text", flexible=True))
    rows = []
    for number, hit in enumerate(hits, start=1):
        row = [str(number), f"{hit.score:.3f}", hit.document_id, hit.source_id, pages_label(hit.pages, hit.page)]
        if explain:
            row += explain_cells(hit.explain)
        row.append(one_line(hit.text))
        rows.append(row)
    print_rows(columns, rows, title=title)


def explain_cells(details: Explain | None) -> list[str]:
    """BM25 rank, kNN rank and RRF score, "-" for what is missing."""
    bm25, knn, rrf = (details.bm25_rank, details.knn_rank, details.rrf_score) if details else (None, None, None)
    return ["-" if bm25 is None else str(bm25), "-" if knn is None else str(knn), "-" if rrf is None else f"{rrf:.4f}"]
