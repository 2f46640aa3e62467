"""`carrag bench --peers`: the vector stores a user would pick instead of Carrag's embedded kNN leg,
each in its own process, given the same chunks, vectors, changes and query vectors.

- ``numpy``: exact brute force over float32 rows (always available; the reference for nDCG@10);
- ``chroma``: Chroma's embedded ``PersistentClient`` (an HNSW index, cosine);
- ``lancedb``: LanceDB on local files, an IVF-HNSW-SQ index built once on the loaded rows; rows
  added later are searched flat beside it until the table is optimised, as in LanceDB itself.

Chroma and LanceDB come with the optional ``peers`` extra (``pip install 'carrag[peers]'``), never a
runtime dependency. A peer runs in a worker process (`PeerProcess`) that times its own queries, so
its libraries' threads and memory never mix with the Carrag process being measured.
"""

from __future__ import annotations

import importlib.util
import multiprocessing
import shutil
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, Protocol

import numpy as np

PEER_MODULES = {"numpy": "numpy", "chroma": "chromadb", "lancedb": "lancedb"}
INSTALL = "pip install 'carrag[peers]'"
ADD_BATCH = 5_000  # rows per call (Chroma refuses batches past its maximum, ~5,461)


def missing_peers(names: Sequence[str]) -> list[str]:
    return [name for name in names if importlib.util.find_spec(PEER_MODULES[name]) is None]


@dataclass(slots=True)
class Rows:
    """Chunks as a peer stores them: an id, the float32 vector and the text."""

    ids: list[str]
    vectors: np.ndarray
    texts: list[str]


@dataclass(slots=True)
class Batch:
    """One step of a state: chunk ids to delete, then rows to add."""

    delete: list[str]
    add: Rows


class VectorPeer(Protocol):
    def add(self, rows: Rows) -> None: ...
    def delete(self, ids: list[str]) -> None: ...
    def reopen(self) -> None: ...
    def knn(self, vector: np.ndarray, k: int) -> list[str]: ...


class NumpyPeer:
    """Exact cosine over every live row: the baseline and the nDCG reference."""

    def __init__(self, directory: Path, dimension: int) -> None:
        self.ids: list[str] = []
        self.matrix = np.empty((0, dimension), np.float32)
        self.live = np.empty(0, bool)
        self.position: dict[str, int] = {}
        self._lock = threading.Lock()  # changes arrive on another thread while it is queried

    def add(self, rows: Rows) -> None:
        norms = np.linalg.norm(rows.vectors, axis=1, keepdims=True)
        added = rows.vectors / np.where(norms == 0, 1, norms)
        with self._lock:
            start = len(self.ids)
            self.ids.extend(rows.ids)
            self.matrix = np.vstack([self.matrix, added])
            self.live = np.concatenate([self.live, np.ones(len(rows.ids), bool)])
            self.position.update((chunk_id, start + i) for i, chunk_id in enumerate(rows.ids))

    def delete(self, ids: list[str]) -> None:
        with self._lock:
            for chunk_id in ids:
                if (position := self.position.pop(chunk_id, None)) is not None:
                    self.live[position] = False

    def reopen(self) -> None:
        pass

    def knn(self, vector: np.ndarray, k: int) -> list[str]:
        with self._lock:
            matrix, live = self.matrix, self.live.copy()
        scores = np.einsum("ij,j->i", matrix, vector / (np.linalg.norm(vector) or 1.0))
        scores[~live] = -np.inf
        k = min(k, int(live.sum()))
        top = np.argpartition(-scores, k - 1)[:k] if k else np.empty(0, int)
        return [self.ids[i] for i in top[np.argsort(-scores[top], kind="stable")]]


class ChromaPeer:
    def __init__(self, directory: Path, dimension: int) -> None:
        self.directory = str(directory)
        self.reopen()

    def reopen(self) -> None:
        import chromadb
        from chromadb.api.client import SharedSystemClient

        SharedSystemClient.clear_system_cache()  # a new client reads the files again
        self.client = chromadb.PersistentClient(path=self.directory)
        self.collection = self.client.get_or_create_collection("chunks", metadata={"hnsw:space": "cosine"})

    def add(self, rows: Rows) -> None:
        for start in range(0, len(rows.ids), ADD_BATCH):
            end = start + ADD_BATCH
            self.collection.add(
                ids=rows.ids[start:end], embeddings=rows.vectors[start:end], documents=rows.texts[start:end]
            )

    def delete(self, ids: list[str]) -> None:
        for start in range(0, len(ids), ADD_BATCH):
            self.collection.delete(ids=ids[start : start + ADD_BATCH])

    def knn(self, vector: np.ndarray, k: int) -> list[str]:
        found = self.collection.query(query_embeddings=[vector], n_results=k)  # ids, documents, distances
        return list(found["ids"][0])


class LancePeer:
    def __init__(self, directory: Path, dimension: int) -> None:
        self.directory = str(directory)
        self.table: Any = None
        self.reopen()

    def reopen(self) -> None:
        import lancedb

        self.db = lancedb.connect(self.directory)
        self.table = self.db.open_table("chunks") if "chunks" in self.db.table_names() else None

    def add(self, rows: Rows) -> None:
        import pyarrow as pa

        vectors = pa.FixedSizeListArray.from_arrays(pa.array(rows.vectors.reshape(-1)), rows.vectors.shape[1])
        data = pa.table({"id": rows.ids, "text": rows.texts, "vector": vectors})
        if self.table is None:
            self.table = self.db.create_table("chunks", data)
            if len(rows.ids) >= 256:
                self.table.create_index(metric="cosine", vector_column_name="vector", index_type="IVF_HNSW_SQ")
        else:
            self.table.add(data)

    def delete(self, ids: list[str]) -> None:
        for start in range(0, len(ids), 1_000):
            quoted = ", ".join("'" + i.replace("'", "''") + "'" for i in ids[start : start + 1_000])
            self.table.delete(f"id IN ({quoted})")

    def knn(self, vector: np.ndarray, k: int) -> list[str]:
        found = self.table.search(vector, vector_column_name="vector").metric("cosine").limit(k).to_list()
        return [row["id"] for row in found]


PEERS: dict[str, type[NumpyPeer] | type[ChromaPeer] | type[LancePeer]] = {
    "numpy": NumpyPeer,
    "chroma": ChromaPeer,
    "lancedb": LancePeer,
}


def timed_queries(peer: VectorPeer, queries: np.ndarray, k: int) -> tuple[list[float], list[list[str]]]:
    latencies, found = [], []
    for vector in queries:
        started = time.perf_counter()
        found.append(peer.knn(vector, k))
        latencies.append((time.perf_counter() - started) * 1000)
    return latencies, found


def _serve(connection: Connection, name: str, directory: str, dimension: int) -> None:
    """The worker process: one peer, commands from the bench over a pipe."""
    peer = PEERS[name](Path(directory), dimension)
    while True:
        command, *arguments = connection.recv()
        try:
            if command == "stop":
                connection.send(("ok", None))
                return
            if command == "load":
                (rows,) = arguments
                started = time.perf_counter()
                peer.add(rows)
                connection.send(("ok", time.perf_counter() - started))
            elif command == "reopen":
                started = time.perf_counter()
                peer.reopen()
                connection.send(("ok", time.perf_counter() - started))
            elif command == "knn":
                queries, k = arguments
                connection.send(("ok", timed_queries(peer, queries, k)))
            elif command == "during":  # apply the batches on a thread while querying in a loop
                batches, queries, k = arguments
                applying = threading.Thread(target=_apply_all, args=(peer, batches))
                applying.start()
                latencies: list[float] = []
                while True:  # at least once: small changes can be applied before a first look at the thread
                    latencies.extend(timed_queries(peer, queries[len(latencies) % len(queries) :][:5], k)[0])
                    if not applying.is_alive():
                        break
                applying.join()
                connection.send(("ok", latencies))
            else:
                connection.send(("error", f"unknown command {command}"))
        except Exception as exc:  # noqa: BLE001 - reported to the bench, which names the peer
            connection.send(("error", f"{type(exc).__name__}: {exc}"))


def _apply_all(peer: VectorPeer, batches: list[Batch]) -> None:
    for batch in batches:
        if batch.delete:
            peer.delete(batch.delete)
        if batch.add.ids:
            peer.add(batch.add)


class PeerProcess:
    """A peer in its own process; each call waits for its answer."""

    def __init__(self, name: str, directory: Path, dimension: int) -> None:
        self.name = name
        self.directory = directory
        shutil.rmtree(directory, ignore_errors=True)
        directory.mkdir(parents=True)
        context = multiprocessing.get_context("spawn")
        self._connection, child = context.Pipe()
        self._process = context.Process(target=_serve, args=(child, name, str(directory), dimension), daemon=True)
        self._process.start()
        child.close()

    def _call(self, *message: Any) -> Any:
        self._connection.send(message)
        status, value = self._connection.recv()
        if status != "ok":
            raise RuntimeError(f"{self.name}: {value}")
        return value

    def load(self, rows: Rows) -> float:
        return float(self._call("load", rows))

    def reopen(self) -> float:
        return float(self._call("reopen"))

    def knn(self, queries: np.ndarray, k: int) -> tuple[list[float], list[list[str]]]:
        latencies, found = self._call("knn", queries, k)
        return latencies, found

    def during(self, batches: list[Batch], queries: np.ndarray, k: int) -> list[float]:
        return list(self._call("during", batches, queries, k))

    def close(self) -> None:
        try:
            self._call("stop")
        except (EOFError, OSError, RuntimeError):
            pass
        self._process.join(timeout=30)
        if self._process.is_alive():
            self._process.kill()
        shutil.rmtree(self.directory, ignore_errors=True)
