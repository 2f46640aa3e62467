"""Phase 4 of `carrag bench`: the states a running server's store is in, not only a store just grown
and reopened (issue 29: a store queried while documents arrive was 80x slower than one compacted).

After phase 3 has grown and reopened the store (state ``reopened``):

- ``ingesting``: 10 % more documents (copies under new ids, vectors already computed) are written
  in transactions of `BATCH_DOCUMENTS` while queries run (``during``), then the same queries again
  as soon as the last write is committed (``after``);
- ``updating``: 10 % of the documents are re-ingested with changed text (each chunk's text changed
  and its vector moved a little, as an edit would move it) and 2 % are deleted, likewise.

Each query is ``POST /search`` (hybrid, top_k 5, the legs' medians from its ``timings_ms``), the
query embedding alone (E) right after it, and the kNN leg alone at store level on the same query
vector. With peers (`peers.py`), every peer is given the same chunks and the same changes in turn,
its queries timed the same way, and nDCG@10 is scored for every store on the same queries.
"""

from __future__ import annotations

import asyncio
import random
import sqlite3
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import psutil

from carrag.bench.beir import BeirDataset
from carrag.bench.ingest_speed import PreparedDocument
from carrag.bench.measuring import Latency, PeakRss
from carrag.bench.peers import Batch, PeerProcess, Rows
from carrag.bench.query_speed import copy_record
from carrag.bench.runner import score_run
from carrag.services.container import Container
from carrag.services.ids import content_hash, new_document_id
from carrag.services.models import Chunk, DocumentRecord, EmbeddingIdentity, SearchFilters

BATCH_DOCUMENTS = 50  # documents per transaction while a state runs
INGEST_SHARE, UPDATE_SHARE, DELETE_SHARE = 0.10, 0.10, 0.02
NO_FILTER = SearchFilters()
Write = tuple[DocumentRecord, list[Chunk], np.ndarray]


@dataclass(slots=True)
class StateFigures:
    state: str  # e.g. "ingesting, during"
    chunks: int
    search: Latency
    embed: Latency
    bm25_leg: Latency
    knn_leg: Latency
    knn_store: Latency  # the kNN leg alone, store level (the figure set beside the peers')
    waiting_rows: int  # rows still on their way into the HNSW graph when the queries ended
    peak_rss_mb: float
    bench_data_mb: float = 0.0  # of the peak, the bench's own changes held for the state (not the store's)
    written_per_second: float = 0.0  # chunks the bench wrote per second while the queries ran (during)
    load: list[float] = field(default_factory=lambda: [round(x, 2) for x in psutil.getloadavg()])

    def as_dict(self) -> dict[str, Any]:
        return {
            "state": self.state,
            "chunks": self.chunks,
            **{name: getattr(self, name).as_dict() for name in ("search", "embed", "bm25_leg", "knn_leg", "knn_store")},
            "search_p50_minus_embed_p50_ms": round(self.search.p50 - self.embed.p50, 2),
            "waiting_rows": self.waiting_rows,
            "peak_rss_mb": round(self.peak_rss_mb, 1),
            "bench_data_mb": round(self.bench_data_mb, 1),
            "written_chunks_per_second": round(self.written_per_second, 1),
            "load_average": self.load,
        }


@dataclass(slots=True)
class PeerFigures:
    chunks: int
    state: str
    store: str  # "carrag" or a peer's name
    knn: Latency
    ndcg_at_10: float | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "chunks": self.chunks,
            "state": self.state,
            "store": self.store,
            "knn": self.knn.as_dict(),
            "ndcg@10": self.ndcg_at_10,
        }


@dataclass(slots=True)
class _Document:
    source_id: str
    external_id: str
    chunk_count: int
    filename: str


@dataclass(slots=True)
class _Step:
    write: list[Write]
    delete: list[str]  # document ids


class StateBench:
    """The states of one store size, in order, on the container's store (and the peers)."""

    def __init__(
        self,
        container: Container,
        client: httpx.AsyncClient,
        dataset: BeirDataset,
        prepared: list[PreparedDocument],
        questions: list[tuple[str, str]],
        query_vectors: np.ndarray,
        sqlite_path: Path,
        copy_counter: list[int],
        peers: Sequence[PeerProcess] = (),
        leg_k: int = 15,
    ) -> None:
        self.container, self.client, self.dataset = container, client, dataset
        self.prepared = {document.record_id: document for document in prepared}
        self.questions, self.query_vectors = questions, query_vectors
        self.sqlite_path, self.copy_counter, self.peers, self.leg_k = sqlite_path, copy_counter, peers, leg_k
        self.documents = self._inventory()
        self.random = random.Random(29)
        self.states: list[StateFigures] = []
        self.comparison: list[PeerFigures] = []

    # --- what the store holds ------------------------------------------------------------------
    def _read(self, sql: str) -> list[tuple]:
        connection = sqlite3.connect(f"file:{self.sqlite_path}?mode=ro", uri=True)
        try:
            return connection.execute(sql).fetchall()
        finally:
            connection.close()

    def _inventory(self) -> dict[str, _Document]:
        rows = self._read("SELECT document_id, source_id, external_id, chunk_count, filename FROM documents")
        return {row[0]: _Document(row[1], row[2] or "", row[3], row[4]) for row in rows}

    def _rows(self) -> Rows:
        rows = self._read("SELECT document_id, chunk_index, text, embedding FROM chunks ORDER BY id")
        vectors = np.frombuffer(b"".join(r[3] for r in rows), np.float32).reshape(len(rows), -1)
        return Rows([f"{r[0]}#{r[1]}" for r in rows], vectors, [r[2] for r in rows])

    @property
    def chunk_count(self) -> int:
        return sum(document.chunk_count for document in self.documents.values())

    # --- the changes of a state ----------------------------------------------------------------
    def _copy(self, document: PreparedDocument, copy: int) -> Write:
        assert document.vectors is not None
        return copy_record(self.dataset.name, document, copy), list(document.chunks), document.vectors

    def _edited(self, document_id: str) -> Write:
        """The document re-ingested with changed text: same source, new id, every chunk edited."""
        stored = self.documents[document_id]
        original = self.prepared[stored.external_id]
        assert original.vectors is not None
        chunks = [replace(chunk, text=f"{chunk.text} (revised)") for chunk in original.chunks]
        moved = original.vectors + 0.02 * self.random.random() * np.sign(original.vectors)
        moved = (moved / np.linalg.norm(moved, axis=1, keepdims=True)).astype(np.float32)
        record = DocumentRecord(
            document_id=new_document_id(),
            filename=stored.filename,
            source_id=stored.source_id,
            source_type="text",
            content_hash=content_hash(" ".join(chunk.text for chunk in chunks)),
            chunk_count=len(chunks),
            tags=[],
            metadata={"bench_edit": True},
            created_at=datetime.now(UTC).isoformat(),
            external_id=stored.external_id,
        )
        return record, chunks, moved

    def ingest_steps(self) -> list[_Step]:
        target, added, writes = self.chunk_count * INGEST_SHARE, 0, []
        originals = [d for d in self.prepared.values() if d.vectors is not None and d.chunks]
        while added < target:
            self.copy_counter[0] += 1
            for document in originals:
                if added >= target:
                    break
                writes.append(self._copy(document, self.copy_counter[0]))
                added += len(document.chunks)
        return [_Step(writes[i : i + BATCH_DOCUMENTS], []) for i in range(0, len(writes), BATCH_DOCUMENTS)]

    def update_steps(self) -> list[_Step]:
        editable = sorted(d for d, doc in self.documents.items() if doc.external_id in self.prepared)
        chosen = self.random.sample(editable, int(len(editable) * (UPDATE_SHARE + DELETE_SHARE)))
        edited, deleted = chosen[: int(len(editable) * UPDATE_SHARE)], chosen[int(len(editable) * UPDATE_SHARE) :]
        per_step = max(1, len(deleted) * BATCH_DOCUMENTS // max(len(edited), 1))
        steps = []
        for n, start in enumerate(range(0, max(len(edited), 1), BATCH_DOCUMENTS)):
            steps.append(
                _Step(
                    [self._edited(d) for d in edited[start : start + BATCH_DOCUMENTS]],
                    deleted[n * per_step : (n + 1) * per_step],
                )
            )
        return steps

    def _peer_batch(self, step: _Step) -> Batch:
        """The step at chunk level, and the inventory moved past it (only the inventory without
        peers: the chunks' ids and stacked vectors would sit in the serving process for nothing)."""
        gone: list[str] = []
        by_source = {doc.source_id: document_id for document_id, doc in self.documents.items()}
        for document_id in step.delete:
            gone.extend(f"{document_id}#{i}" for i in range(self.documents.pop(document_id).chunk_count))
        ids: list[str] = []
        vectors: list[np.ndarray] = []
        texts: list[str] = []
        for record, chunks, matrix in step.write:
            if (old := by_source.get(record.source_id)) is not None and old in self.documents:
                gone.extend(f"{old}#{i}" for i in range(self.documents.pop(old).chunk_count))
            self.documents[record.document_id] = _Document(
                record.source_id, record.external_id or "", len(chunks), record.filename
            )
            if not self.peers:
                continue
            ids.extend(f"{record.document_id}#{chunk.chunk_index}" for chunk in chunks)
            vectors.append(matrix)
            texts.extend(chunk.text for chunk in chunks)
        stacked = np.vstack(vectors) if vectors else np.empty((0, self.query_vectors.shape[1]), np.float32)
        return Batch(gone, Rows(ids, stacked, texts))

    # --- measuring -----------------------------------------------------------------------------
    async def _apply(self, steps: list[_Step], identity: EmbeddingIdentity) -> None:
        store = self.container.store
        for step in steps:
            for document_id in step.delete:
                await store.delete_document(document_id)
            if step.write:
                await store.write_documents(step.write, identity)  # type: ignore[attr-defined]

    async def _queries(self, until: asyncio.Task[None] | None) -> tuple[dict[str, list[float]], list[list[str]]]:
        """/search, E and the store's kNN leg per question: one pass, or until ``until`` is done."""
        backend, store = self.container.embedder.backend, self.container.store
        samples: dict[str, list[float]] = {n: [] for n in ("search", "embed", "bm25_leg", "knn_leg", "knn_store")}
        found: list[list[str]] = []
        n = 0
        while (until is None and n < len(self.questions)) or (until is not None and not until.done()):
            text, vector = self.questions[n % len(self.questions)][1], self.query_vectors[n % len(self.questions)]
            started = time.perf_counter()
            response = await self.client.post("/search", json={"question": text, "top_k": 5, "rerank": False})
            samples["search"].append((time.perf_counter() - started) * 1000)
            response.raise_for_status()
            timings = response.json().get("timings_ms", {})
            for leg in ("bm25_leg", "knn_leg"):
                samples[leg].append(timings.get(leg, 0.0))
            started = time.perf_counter()
            await backend.embed([text], "query")
            samples["embed"].append((time.perf_counter() - started) * 1000)
            started = time.perf_counter()
            hits = await store.vector_search(vector, self.leg_k, NO_FILTER)
            samples["knn_store"].append((time.perf_counter() - started) * 1000)
            found.append([f"{hit.chunk.document_id}#{hit.chunk.chunk_index}" for hit in hits])
            n += 1
        return samples, found

    def _figures(
        self, state: str, samples: dict[str, list[float]], rss: PeakRss, bench_data_mb: float = 0.0
    ) -> StateFigures:
        vectors = getattr(getattr(self.container.store, "indexes", None), "vectors", None)
        return StateFigures(
            state,
            self.chunk_count,
            Latency(samples["search"]),
            Latency(samples["embed"]),
            Latency(samples["bm25_leg"]),
            Latency(samples["knn_leg"]),
            Latency(samples["knn_store"]),
            waiting_rows=vectors.waiting if vectors is not None else 0,
            peak_rss_mb=rss.peak_mb,
            bench_data_mb=bench_data_mb,
        )

    def _ndcg(self, ranked_chunks: list[list[str]]) -> float:
        run: dict[str, list[str]] = {}
        for (qid, _), chunk_ids in zip(self.questions, ranked_chunks, strict=True):
            documents = (self.documents.get(chunk_id.split("#")[0]) for chunk_id in chunk_ids)
            run[qid] = list(dict.fromkeys(d.external_id for d in documents if d is not None))
        qrels = {qid: self.dataset.qrels[qid] for qid, _ in self.questions}
        return round(score_run(qrels, run)[0]["nDCG@10"], 4)

    async def _quality_of_carrag(self, depth: int) -> float:
        found = []
        for vector in self.query_vectors:
            hits = await self.container.store.vector_search(vector, depth, NO_FILTER)
            found.append([f"{hit.chunk.document_id}#{hit.chunk.chunk_index}" for hit in hits])
        return self._ndcg(found)

    def _quality_depth(self) -> int:
        """Deep enough for 10 distinct documents however many copies of each the store holds."""
        distinct = len({doc.external_id for doc in self.documents.values()}) or 1
        return min(2_000, 10 * max(1, round(len(self.documents) / distinct)) * 2)

    async def compare(self, state: str, carrag_knn: list[float]) -> None:
        """The peers after a state, queries alternating with Carrag's (store level) in slices."""
        if not self.peers:
            return
        carrag = list(carrag_knn)
        per_peer: dict[str, list[float]] = {peer.name: [] for peer in self.peers}
        for offset in range(0, len(self.query_vectors), max(1, len(self.query_vectors) // 4)):
            part = self.query_vectors[offset : offset + max(1, len(self.query_vectors) // 4)]
            for peer in self.peers:
                per_peer[peer.name].extend(peer.knn(part, self.leg_k)[0])
            for vector in part:
                started = time.perf_counter()
                await self.container.store.vector_search(vector, self.leg_k, NO_FILTER)
                carrag.append((time.perf_counter() - started) * 1000)
        depth = self._quality_depth()
        self.comparison.append(
            PeerFigures(self.chunk_count, state, "carrag", Latency(carrag), await self._quality_of_carrag(depth))
        )
        for peer in self.peers:
            quality = self._ndcg(peer.knn(self.query_vectors, depth)[1])
            self.comparison.append(
                PeerFigures(self.chunk_count, state, peer.name, Latency(per_peer[peer.name]), quality)
            )

    async def reopened(self) -> None:
        """The store as phase 3 left it; the peers load the same chunks and reopen from disk."""
        if self.peers:
            rows = self._rows()
            for peer in self.peers:
                peer.load(rows)
                peer.reopen()
            del rows
        with PeakRss() as rss:
            samples, _ = await self._queries(None)
        figures = self._figures("reopened", samples, rss)
        self.states.append(figures)
        await self.compare("reopened", samples["knn_store"])

    def _held_mb(self, steps: list[_Step], batches: list[Batch]) -> float:
        """What the bench itself holds for a state's changes: the vectors and texts made for it (a
        copy's are its prepared document's, held before the state: not counted)."""
        before = {id(document.vectors) for document in self.prepared.values()}
        before |= {id(chunk.text) for document in self.prepared.values() for chunk in document.chunks}
        arrays = {id(matrix): matrix.nbytes for step in steps for _, _, matrix in step.write}
        arrays |= {id(batch.add.vectors): batch.add.vectors.nbytes for batch in batches}
        texts = {id(chunk.text): len(chunk.text) for step in steps for _, chunks, _ in step.write for chunk in chunks}
        held = [size for key, size in (arrays | texts).items() if key not in before]
        return sum(held) / 2**20

    async def changing(self, state: str, steps: list[_Step]) -> None:
        identity = await self.container.embedder.embedding_identity()
        batches = [self._peer_batch(step) for step in steps]  # moves the inventory to after the state
        held = self._held_mb(steps, batches)
        with PeakRss() as rss:
            started = time.perf_counter()
            writing = asyncio.create_task(self._apply(steps, identity))
            during, _ = await self._queries(writing)
            await writing
            seconds = time.perf_counter() - started
        self.states.append(self._figures(f"{state}, during", during, rss, held))
        written = sum(len(chunks) for step in steps for _, chunks, _ in step.write)
        self.states[-1].written_per_second = written / seconds
        with PeakRss() as rss:
            after, _ = await self._queries(None)
        self.states.append(self._figures(f"{state}, after", after, rss, held))
        for peer in self.peers:  # each peer takes the same changes while it is queried
            latencies = peer.during(batches, self.query_vectors, self.leg_k)
            self.comparison.append(PeerFigures(self.chunk_count, f"{state}, during", peer.name, Latency(latencies)))
        if self.peers:
            self.comparison.append(
                PeerFigures(self.chunk_count, f"{state}, during", "carrag", Latency(during["knn_store"]))
            )
        await self.compare(f"{state}, after", after["knn_store"])

    async def run(self) -> None:
        await self.reopened()
        await self.changing("ingesting", self.ingest_steps())
        await self.changing("updating", self.update_steps())


def describe_state(figures: StateFigures) -> str:
    return (
        f"  {figures.state} ({figures.chunks} chunks, {len(figures.search.samples_ms)} queries): /search p50 "
        f"{figures.search.p50:.1f} ms (E {figures.embed.p50:.1f} ms, p50 - E {figures.search.p50 - figures.embed.p50:.1f}); "
        f"legs p50 BM25 {figures.bm25_leg.p50:.1f} / kNN {figures.knn_leg.p50:.1f} ms; kNN alone {figures.knn_store.p50:.2f} ms; "
        f"rows waiting for the graph {figures.waiting_rows}; peak RSS {figures.peak_rss_mb:.0f} MB (bench's own changes "
        f"{figures.bench_data_mb:.0f} MB); load {figures.load}"
        + (f"; the bench wrote {figures.written_per_second:.0f} chunks/s" if figures.written_per_second else "")
    )


def describe_comparison(rows: list[PeerFigures]) -> list[str]:
    lines = []
    for state in dict.fromkeys(row.state for row in rows):
        mine = next(row for row in rows if row.state == state and row.store == "carrag")  # one size
        parts = []
        for row in (r for r in rows if r.state == state):
            ratio = row.knn.p50 / mine.knn.p50 if mine.knn.p50 else float("nan")
            quality = f", nDCG@10 {row.ndcg_at_10:.4f}" if row.ndcg_at_10 is not None else ""
            parts.append(f"{row.store} {row.knn.p50:.2f} ms (x{ratio:.2f}{quality})")
        lines.append(f"  kNN p50 {state}: " + "; ".join(parts))
    return lines
