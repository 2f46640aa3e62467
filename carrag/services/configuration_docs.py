"""docs/configuration.md, generated from the `Settings` fields (`make docs`; tests/test_docs_configuration.py
checks the file is fresh)."""

from __future__ import annotations

from carrag.services.settings import Settings


def settings_markdown() -> str:
    """The configuration table of docs/configuration.md, generated from the fields of `Settings`."""
    lines = [
        "| Variable | Default | Description |",
        "|---|---|---|",
    ]
    for name, field in Settings.model_fields.items():
        default = field.get_default(call_default_factory=True)
        extra = field.json_schema_extra if isinstance(field.json_schema_extra, dict) else {}
        if "shown_default" in extra:
            shown = str(extra["shown_default"])
        elif isinstance(default, bool):
            shown = str(default).lower()
        elif isinstance(default, list):
            shown = ",".join(default) or "(empty)"
        elif default is None:
            shown = "(unset)"
        elif isinstance(default, str) and len(default) > 60:
            shown = "(see `carrag/services/settings.py`)"
        else:
            shown = str(default)
        description = (field.description or "").replace("|", "\\|")
        lines.append(f"| `{name.upper()}` | `{shown}` | {description} |")
    return "\n".join(lines) + "\n"


CONFIGURATION_INTRO = """\
# Configuration

<!-- Generated from carrag/services/settings.py by `make docs` (python -m carrag.services.configuration_docs).
     Edit the field descriptions there, not this file; tests/test_docs_configuration.py checks it. -->

Every setting is read, case-insensitively, from the environment (`CHUNK_SIZE=800`) or from a `.env`
file in the working directory (the environment wins). Lists are comma-separated
(`API_KEYS=key-one,key-two`), booleans are `true`/`false`. A bad value stops the service at start-up
with a message naming the setting. Both `carrag serve` (`make run`) and the local mode of the other
`carrag` commands use these settings.

The defaults are the embedded setup: SQLite, the packaged MiniLM embedder and SmolLM2 chat model,
nothing downloaded. The full stack of [deploy.md](deploy.md) switches three of them:

```bash
STORE=elasticsearch ELASTICSEARCH_URL=http://localhost:9200
EMBEDDER=ollama OLLAMA_BASE_URL=http://localhost:11434
LLM=ollama
```

Hosted embeddings (any OpenAI-compatible `/embeddings`: OpenAI, vLLM, llama.cpp's server, LM Studio)
have their own URL, key and model, apart from the LLM's `OPENAI_*`:

```bash
EMBEDDER=openai EMBEDDINGS_MODEL=text-embedding-3-small
EMBEDDINGS_BASE_URL=https://api.openai.com/v1 EMBEDDINGS_API_KEY=sk-...
EMBEDDINGS_DIMENSIONS=512  # optional: shorter vectors, for models that support it
```

The store records the model as `openai:<model>` (plus a hash of the URL for any other server than
OpenAI's) with the vectors' dimension. Rate limits (429) and server errors are retried with backoff,
honouring `Retry-After`; a refused key (401/403) or an unknown model (404) fails at once, naming the
setting to check.

Changing the embedding model (`EMBEDDER`, `OLLAMA_EMBED_MODEL`, `EMBEDDINGS_MODEL`) makes the existing vectors
incomparable with the new model's. Re-embed the stored documents with `carrag reindex` (or
`POST /admin/reindex`); it does not start by itself. Until its swap, the service keeps working with
the old vectors: the store's old model is loaded beside the new one (the packaged ONNX model, an
Ollama model on `OLLAMA_BASE_URL`, or an OpenAI-compatible one on `EMBEDDINGS_BASE_URL`) to embed
queries and new documents, and `/health` shows the pending change. When the old model cannot be
loaded any more, searches are lexical (BM25) only and ingests are refused (409) until the swap.
`carrag reset` (`POST /admin/reset`) empties the store instead.

## Answer modes and thresholds

How an answer is made and checked lives in `carrag/services/answers/` (see
[architecture.md](architecture.md)). `ANSWER_MODE` chooses who writes it: `extract` (the most
probable answer units of the retrieved passages, each cited; no LLM), `generate` (the LLM, with a
grounding check reported in `grounding`) or `auto` (generate, then fall back to `extract` when the
check finds an unsupported sentence, a loop or nothing, saying why in `fallback_reason`). Unset, the
default follows the LLM:

- **embedded SmolLM2-135M (`LLM=local`): `extract`.** A 135M model rarely writes a grounded, cited
  answer and costs seconds for it (every mode's accuracy and latency:
  [benchmarks.md](benchmarks.md#answer-quality-development-and-validation)), so the default does not ask it.
- **Ollama and OpenAI-compatible servers: `auto`.** A capable model writes better prose than a
  quote, and the check catches what it invents (tested on recorded Ollama answers); the fallback
  keeps a wrong generation from reaching the user.
- **`LLM=none`**: `extract` (every mode answers extractively).

"The documents don't say" is decided by the answer model (`carrag/services/answers/model.py`, weights
in `answer_model.json`), not by hand-set thresholds: every answer unit of the retrieved passages (a
sentence, a table row with its column names, a list item with its lead-in, a definition, a command) is
scored from features such as the embedder's cosine to the question, rarity-weighted term overlap,
whether it holds the kind of answer asked for (a number, a date, a name, code) and its passage's
retrieval rank; two more models give, from those scores and whether the question names something no
passage mentions, the probability that the best unit answers and that the documents answer at all.
Their mean is the confidence: below `ANSWER_MIN_RELEVANCE` — by default 0.5, where answering is as
likely to be right as refusing (a refusal costs as much as a wrong answer) — the answer says the
documents do not contain it, lists the closest passages, and no LLM runs. A request can override it
with `min_relevance` (0 never refuses); the response's `relevance` is the confidence it was compared
with. The model is fitted on the development
questions and cross-validated by document with one command, which prints the cross-validated scores
and writes the weights:

```bash
python -m carrag.bench.answer_fitting --cache /tmp/answer-fit   # --cache: a second fit skips ingestion
```

Another embedder (`EMBEDDER=ollama`, `openai`) has another cosine scale: refit with the same command
(set the embedder in the environment) before relying on its refusals.
"""


def configuration_markdown() -> str:
    """The whole of docs/configuration.md."""
    return CONFIGURATION_INTRO + "\n## Settings\n\n" + settings_markdown()


if __name__ == "__main__":  # pragma: no cover - `make docs`
    print(configuration_markdown(), end="")
