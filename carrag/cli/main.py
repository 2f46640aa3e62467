"""The ``carrag`` command line: the typer app, its small commands, and the larger ones registered from
their modules in the order ``carrag --help`` lists them. Every command but ``serve`` works on the local
store or, with ``--url``, against a running server, through one `CarragClient`.
"""

from __future__ import annotations

import asyncio
import math
from pathlib import Path
from typing import Annotated

import typer
from pydantic import ValidationError

from carrag import extras
from carrag.cli.collections import collections_app
from carrag.cli.documents import documents_app
from carrag.cli.ingest_command import ingest
from carrag.cli.options import ApiKey, AsJson, Url
from carrag.cli.output import Column, plural, print_json, print_note, print_rows, short_id
from carrag.cli.questions import query, search
from carrag.cli.running import console, run_with_client
from carrag.cli.sync_command import sync
from carrag.extras import MissingExtra
from carrag.services.settings import Settings, get_settings

app = typer.Typer(help="Carrag: self-hosted retrieval-augmented generation.", no_args_is_help=True)
app.add_typer(documents_app, name="documents")
app.add_typer(collections_app, name="collections")


@app.command()
def serve(
    host: str = typer.Option(None, help="Bind address (default: HOST setting, 127.0.0.1)."),
    port: int = typer.Option(None, help="Port (default: PORT setting, 8000)."),
) -> None:
    """Run the HTTP service."""
    import uvicorn

    from carrag.api.lifecycle import exit_cleanly_after_sigterm

    settings = get_settings()
    exit_cleanly_after_sigterm()  # a graceful SIGTERM shutdown exits 0
    uvicorn.run(
        "carrag.api.main:app_factory",
        factory=True,
        host=host or settings.host,
        port=port or settings.port,
        log_config=None,
        timeout_graceful_shutdown=math.ceil(settings.shutdown_grace_seconds),
    )


# The order commands are registered in is the order `carrag --help` lists them.
app.command()(ingest)
app.command()(sync)
app.command()(query)
app.command()(search)


@app.command()
def health(as_json: AsJson = False, url: Url = None, api_key: ApiKey = None) -> None:
    """Each component's state (store, embedder, LLM, reranker); exit 1 when the store or embedder is unavailable."""
    report = run_with_client(url, api_key, lambda client: client.health())
    if as_json:
        print_json(report)
    else:
        rows = [
            [name, component.status, component.backend, component.model or "-", component.detail or ""]
            for name, component in report.components.items()
        ]
        columns = [Column("component"), Column("status"), Column("backend"), Column("model", width=24)]
        print_rows([*columns, Column("detail", flexible=True)], rows, title=f"Carrag {report.version}: {report.status}")
    if report.status == "unavailable":
        raise typer.Exit(1)


@app.command()
def jobs(
    limit: Annotated[int, typer.Option("--limit", min=1, max=1000, help="Most recent jobs to list.")] = 50,
    as_json: AsJson = False,
    url: Url = None,
    api_key: ApiKey = None,
) -> None:
    """Recent ingest jobs, newest first: a server's async ingests, as recorded in its store."""
    listed = run_with_client(url, api_key, lambda client: client.list_jobs(limit=limit))
    if as_json:
        print_json(listed)
        return
    if not listed.items:
        print_note("No jobs.")
        return
    columns = [
        Column("job_id", on_terminal=short_id, terminal_header="job"),
        Column("state", width=9),
        Column("progress", justify="right"),
        Column("source", flexible=True),
        Column("document_id", on_terminal=short_id, terminal_header="id"),
        Column("created", on_terminal=lambda stamp: stamp[11:19]),
    ]
    rows = [
        [
            job.job_id,
            job.state,
            f"{job.progress.done}/{job.progress.total}" if job.progress.total else "",
            job.source,
            job.result.document_id if job.result else "",
            job.created_at,
        ]
        for job in listed.items
    ]
    print_rows(columns, rows, title=f"Jobs: {len(listed.items)} of {listed.total}")


@app.command()
def reset(
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
    url: Url = None,
    api_key: ApiKey = None,
) -> None:
    """Delete every document and chunk, and the recorded embedding model (after changing the model)."""
    if not yes and not typer.confirm("Delete every document and chunk in the store?"):
        raise typer.Exit(1)
    done = run_with_client(url, api_key, lambda client: client.reset())
    console.print(f"Store reset: {plural(done.documents_deleted, 'document')} deleted. Ingest again to refill it.")


SHARED_DATA = Path("../shared/data")  # beside the checkout (docs/benchmarks.md)


@app.command("eval")
def evaluate_retrieval(
    dataset: Annotated[Path, typer.Option("--dataset", help="BEIR directory: corpus.jsonl, queries.jsonl, qrels/.")],
    split: Annotated[str, typer.Option("--split", help="Which qrels/<split>.tsv to score.")] = "train",
    json_out: Annotated[Path | None, typer.Option("--json", help="Also write the table as JSON to this file.")] = None,
    modes: Annotated[
        str | None, typer.Option("--modes", help="Comma-separated subset of bm25,knn,hybrid,hybrid+rerank.")
    ] = None,
    limit_queries: Annotated[
        int | None, typer.Option("--limit-queries", min=1, help="Score only the first N queries.")
    ] = None,
    db: Annotated[
        Path | None,
        typer.Option(
            "--db",
            help="Keep the evaluation store in this SQLite file; an existing one is reused without re-ingesting.",
        ),
    ] = None,
) -> None:
    """Ingest a BEIR dataset into a fresh store and print nDCG@10, Recall@10/100 and MRR@10 per search mode."""
    extras.require("eval", "`carrag eval`")
    from carrag.cli.evaluation import run_eval_command

    run_eval_command(dataset, split, json_out, modes, limit_queries, db)


@app.command("eval-answers")
def evaluate_answers(
    part: Annotated[
        str,
        typer.Option(
            "--part",
            help="Question set: dev (carrag/bench/questions/answers_dev.jsonl), validation (answers_validation.jsonl, "
            "other documents) or all (each in its own store, reported apart).",
        ),
    ] = "all",
    questions: Annotated[
        Path | None, typer.Option("--questions", help="Another question file (JSON Lines) instead of --part.")
    ] = None,
    mode: Annotated[
        str, typer.Option("--mode", help="Answer mode: generate, extract, auto, a comma-separated list, or all.")
    ] = "all",
    documents: Annotated[
        Path, typer.Option("--documents", help="Directory the question files' document paths are relative to.")
    ] = SHARED_DATA,
    top_k: Annotated[int | None, typer.Option("--top-k", min=1, max=100, help="Passages per question.")] = None,
    json_out: Annotated[
        Path | None, typer.Option("--json", help="Also write the scores and every answer as JSON to this file.")
    ] = None,
) -> None:
    """Ingest the documents a question set lists into a fresh store, ask every question in each answer
    mode, and print answerable accuracy (per kind), citation validity, refusals, invented numbers and latency."""
    from carrag.cli.answer_evaluation import run_eval_answers_command

    run_eval_answers_command(part, questions, mode, documents, top_k, json_out)


@app.command("bench")
def benchmark(
    pdf: Annotated[Path, typer.Option("--pdf", help="PDF whose extraction speed is measured.")] = SHARED_DATA
    / "corpus/pdf/unstructured/DA-619p.pdf",
    dataset: Annotated[
        Path, typer.Option("--dataset", help="BEIR directory ingested for the ingestion and query figures.")
    ] = SHARED_DATA / "scifact-dev",
    split: Annotated[str, typer.Option("--split", help="qrels split whose queries are timed.")] = "train",
    sizes: Annotated[
        str, typer.Option("--sizes", help="Comma-separated store sizes (chunks) for the query figures.")
    ] = "20000,100000",
    queries: Annotated[int, typer.Option("--queries", min=1, help="Timed queries per store size.")] = 200,
    limit_documents: Annotated[
        int | None, typer.Option("--limit-documents", min=1, help="Ingest only the first N documents.")
    ] = None,
    quick: Annotated[
        bool, typer.Option("--quick", help="Tiny sizes (a few seconds): checks the bench still works.")
    ] = False,
    ocr_pages: Annotated[
        int, typer.Option("--ocr-pages", min=0, help="Scanned copies of the PDF's first N pages read by OCR (0: none).")
    ] = 3,
    json_out: Annotated[
        Path | None, typer.Option("--json", help="Also write the figures as JSON to this file.")
    ] = None,
    store: Annotated[
        str | None,
        typer.Option(
            "--store",
            help="`elasticsearch`: instead, the store at ELASTICSEARCH_URL against raw bulk and raw hybrid search.",
        ),
    ] = None,
    documents: Annotated[
        int, typer.Option("--documents", min=1, help="With --store elasticsearch: synthetic documents written.")
    ] = 1000,
    states: Annotated[
        bool,
        typer.Option(
            "--states/--no-states",
            help="At each size, also query the store while 10% more documents arrive and 10% change, 2% go.",
        ),
    ] = True,
    peers: Annotated[
        bool,
        typer.Option(
            "--peers",
            help="Run Chroma, LanceDB and numpy brute force beside the kNN leg in each state (pip install 'carrag[peers]').",
        ),
    ] = False,
) -> None:
    """Measure PDF pages/s, OCR pages/s, ingestion chunks/s against the raw embedder, /search p50/p95 and peak RSS,
    and the store's search legs while documents arrive and change."""
    if store == "elasticsearch":
        from carrag.cli.evaluation import run_es_bench_command

        run_es_bench_command(documents, queries, quick, json_out)
        return
    if store not in (None, "sqlite"):
        raise typer.BadParameter("--store is sqlite (the default bench) or elasticsearch")
    extras.require("eval", "`carrag bench`")
    from carrag.bench.bench import BenchConfig
    from carrag.bench.peers import INSTALL, PEER_MODULES, missing_peers
    from carrag.cli.evaluation import run_bench_command

    peer_names = tuple(PEER_MODULES) if peers else ()
    if missing := missing_peers(peer_names):
        raise typer.BadParameter(f"--peers needs {', '.join(missing)}: {INSTALL}", param_hint="--peers")
    if quick:
        config = BenchConfig.quick(pdf, dataset, split)
        config.states, config.peers = states, peer_names
    else:
        config = BenchConfig(
            pdf,
            dataset,
            split,
            tuple(int(size) for size in sizes.split(",") if size.strip()),
            queries,
            limit_documents,
            ocr_pages=ocr_pages,
            states=states,
            peers=peer_names,
        )
    run_bench_command(config, json_out)


@app.command()
def reindex(
    keep_old: Annotated[
        bool, typer.Option("--keep-old", help="Keep the previous index after the alias has moved.")
    ] = False,
) -> None:
    """Re-embed every document with the configured model. SQLite: new vectors beside the old ones,
    swapped in by one transaction at the end (interrupt and re-run: it continues). Elasticsearch: a
    new index, then the alias moves (writes pause for the final catch-up)."""
    from carrag.cli.reindex import run_reindex

    run_reindex(Settings(), keep_old)


@app.command()
def mcp() -> None:
    """Serve the MCP tools (search_documents, list_sources) over stdio, on the local store."""
    extras.require("mcp", "`carrag mcp`")
    from carrag.api.log_config import configure_logging
    from carrag.api.mcp_server import run_stdio

    settings = Settings()
    configure_logging(settings.log_level, settings.log_json)  # to stderr: stdout carries the protocol
    asyncio.run(run_stdio(settings))


def store_epilog() -> str:
    """The store local commands use, for the end of `carrag --help` (DATA_DIR has a per-user default)."""
    try:
        settings = Settings()
    except (ValidationError, ValueError) as exc:  # a bad setting is reported by the command that needs it
        return f"Store: the settings are invalid ({str(exc).splitlines()[0]})."
    hint = settings.legacy_store_hint()
    return (
        f"Store in use without --url: {settings.store} at {settings.store_location} "
        "(set DATA_DIR or STORE to use another; --url / CARRAG_URL talks to a server instead)."
        + (f"\n\nNote: {hint}" if hint else "")
    )


def main() -> None:
    app.info.epilog = store_epilog()
    try:
        app()
    except MissingExtra as exc:
        raise SystemExit(f"error: {exc}") from None


if __name__ == "__main__":
    main()
