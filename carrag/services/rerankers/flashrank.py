"""Cross-encoder reranking with flashrank (ONNX). flashrank would download its model on first use; this
adapter loads it only from ``<RERANKER_CACHE_DIR>/<model>/`` and otherwise reports itself unavailable
with the reason (/health shows ``off`` unless RERANK_ENABLED=true requires it).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from carrag.services.errors import DependencyUnavailable
from carrag.services.models import ComponentHealth
from carrag.services.vocabulary import HealthStatus

logger = logging.getLogger(__name__)

REQUIRED_FILES = ("config.json", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json")
MODEL_ARCHIVE_URL = "https://huggingface.co/prithivida/flashrank/resolve/main/{}.zip"


def model_file_for(model: str) -> str | None:
    try:
        from flashrank.Config import model_file_map
    except ImportError:
        return None
    return model_file_map.get(model)


def missing_model_reason(cache_dir: Path, model: str) -> str | None:
    """Why the model cannot be loaded from ``cache_dir`` without downloading, or None if it can."""
    model_file = model_file_for(model)
    if model_file is None:
        try:
            import flashrank  # noqa: F401
        except ImportError:
            return "flashrank is not installed"
        return f"unknown flashrank model {model!r}"
    model_dir = cache_dir / model
    missing = [name for name in (model_file, *REQUIRED_FILES) if not (model_dir / name).is_file()]
    if missing:
        return (
            f"model files not installed in {model_dir} (missing {', '.join(missing)}); no model hub is "
            f"reachable at run time. Unpack {MODEL_ARCHIVE_URL.format(model)} into {cache_dir} to enable reranking."
        )
    return None


class FlashrankReranker:
    def __init__(self, model: str, cache_dir: Path, *, max_length: int = 512, required: bool = True) -> None:
        self.model = model
        self.required = required
        self.cache_dir = Path(cache_dir)
        self.available = False
        self.unavailable_reason = missing_model_reason(self.cache_dir, model)
        self._ranker = None
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="rerank")
        if self.unavailable_reason is None:
            try:
                from flashrank import Ranker

                self._ranker = Ranker(model_name=model, cache_dir=str(self.cache_dir), max_length=max_length)
                self.available = True
            except Exception as exc:  # noqa: BLE001 - a damaged model file must not stop the service
                self.unavailable_reason = f"loading {model} failed: {exc}"
        if not self.available:
            log = logger.warning if required else logger.info
            log("reranker unavailable; queries run without it", extra={"reason": self.unavailable_reason})

    def _score(self, question: str, passages: Sequence[str]) -> list[float]:
        from flashrank import RerankRequest

        request = RerankRequest(query=question, passages=[{"id": i, "text": t} for i, t in enumerate(passages)])
        ranked = self._ranker.rerank(request)  # type: ignore[union-attr]
        scores = [0.0] * len(passages)
        for item in ranked:
            scores[item["id"]] = float(item["score"])
        return scores

    async def scores(self, question: str, passages: Sequence[str]) -> list[float]:
        if not self.available:
            raise DependencyUnavailable("reranker", self.unavailable_reason or "not loaded")
        if not passages:
            return []
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, self._score, question, list(passages))

    async def health(self) -> ComponentHealth:
        if self.available:
            return ComponentHealth("reranker", "ok", "flashrank", self.model, str(self.cache_dir / self.model))
        status: HealthStatus = "unavailable" if self.required else "off"
        return ComponentHealth("reranker", status, "flashrank", self.model, self.unavailable_reason)
