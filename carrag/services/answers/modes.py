"""Answer modes: who writes the answer.

- ``generate``: the LLM writes it from the fitted context; the grounding check is reported.
- ``extract``: no LLM; the best sentences of the retrieved passages, each cited.
- ``auto``: generate, check, and answer with ``extract`` instead when the generated answer is not
  grounded (or was cut by a loop or produced nothing), saying why in ``fallback_reason``.

``ANSWER_MODE`` chooses; unset, the default depends on the LLM (measured, see
docs/configuration.md "Answer modes"): ``extract`` for the embedded SmolLM2-135M (it rarely writes
a grounded, cited answer, and generating costs seconds), ``auto`` for Ollama and OpenAI-compatible
servers. Without a running LLM every mode answers extractively.
"""

from __future__ import annotations

from typing import Literal

AnswerMode = Literal["generate", "extract", "auto"]
ProducedBy = Literal["generate", "extract", "none"]

DEFAULT_MODE_BY_LLM: dict[str, AnswerMode] = {"local": "extract", "ollama": "auto", "openai": "auto", "none": "extract"}


def default_answer_mode(llm_provider: str) -> AnswerMode:
    return DEFAULT_MODE_BY_LLM.get(llm_provider, "auto")


def effective_mode(requested: AnswerMode, llm_provider: str) -> tuple[AnswerMode, str | None]:
    """The mode that can run, and the reason when it differs from the requested one."""
    if requested != "extract" and llm_provider == "none":
        return "extract", "no language model is running"
    return requested, None
