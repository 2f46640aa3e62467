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

<!-- Generated from carrag/services/settings.py by `make docs` (python -m carrag.services.settings --markdown).
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
[architecture.md](architecture.md)). `ANSWER_MODE` chooses who writes it: `extract` (the best
sentences of the retrieved passages, each cited; no LLM), `generate` (the LLM, with a grounding
check reported in `grounding`) or `auto` (generate, then fall back to `extract` when the check
finds an unsupported sentence, a loop or nothing, saying why in `fallback_reason`). Unset, the
default follows the LLM:

- **embedded SmolLM2-135M (`LLM=local`): `extract`.** On the 73-question development set
  (`carrag/bench/questions/corpus_dev.jsonl`, `carrag eval-answers --mode extract`), extract
  answered 45 of 60 answerable questions correctly with 98 % valid citations (92/94), no invented
  number, in a median 0.64 s (load 21–24 on 2 cores). Generation with SmolLM2 scored 0.33
  accuracy and 0.11 citation validity at a median 7.9 s in the issue's held-out run; with `auto` on
  the README's two example questions, one generated answer failed the check (2 of 2 sentences
  unsupported) and fell back, and the answers took 92 s and 10 s (load 29). A 135M model rarely
  writes a grounded answer and costs seconds for it, so the default does not ask it.
- **Ollama and OpenAI-compatible servers: `auto`.** A capable model writes better prose than a
  quote, and the check catches what it invents (tested on recorded Ollama answers); the fallback
  keeps a wrong generation from reaching the user.
- **`LLM=none`**: `extract` (every mode answers extractively).

`ANSWER_MIN_RELEVANCE` decides "the documents don't say": the best sentence of the retrieved
passages is scored against the question (0.55 × the embedder's cosine + 0.45 × the share of the
question's terms it contains, rarer terms weighing more); below the threshold, or when the question
names a number, year, code or capitalised name that no passage mentions, the answer says the
documents do not contain it, lists the closest passages, and no LLM runs. The default,
0.42, was measured on two sets with the embedded MiniLM embedder: the development set
(answerable vs. unanswerable questions over the same documents; answerable relevance q1 0.58,
unanswerable median 0.46, "capital of Mongolia" 0.40) and SciFact (40 claims whose abstract is
ingested among 240 vs. 20 off-topic questions; claims median 0.48, off-topic maximum 0.39). 0.42 is
above the off-topic maximum of both; a higher value (0.48–0.50 refuses one more trap of the
development set) would refuse over half of SciFact's answerable claims. The key-term rule took
refusals of unanswerable development questions from 6/13 to 9/13 at equal accuracy. Command: `python -m carrag.bench.answer_calibration --questions
carrag/bench/questions/corpus_dev.jsonl --scifact ../shared/data/scifact-dev`. Another embedder
(`EMBEDDER=ollama`) has another cosine scale: recalibrate with the same command. A request can
override it with `min_relevance` (0 never refuses).

A relevant passage is not yet an answer (`carrag/services/answers/focus.py`): one of the five
strongest sentences must also hold the kind of answer asked for (a number the question does not
already contain for "how many", "what year", "what score/profit/version ..."; a name for "who"),
every number, year or code the question names (in the sentence, its table's title and column names,
or the document title; a table row must also hold the names), no empty cell under the column asked
about, and at least `ANSWER_MIN_FOCUS` of the question's own terms (weighted by rarity). The sentence's
own passage must name at least one of the names the question asks about, and the rest must be in
what was retrieved of the same document (a name only another document mentions — "February" in a
book retrieved next to a memo about January 23 — does not make the memo's sentence an answer); a
"what/which" answer must say something the question does not ("- Germany" does not answer "which
regions are listed under Germany?"); a row of an index table (one with a Page column) answers only
questions about that table's own columns; for a follow-up, a sentence counts as a paraphrase of the
question only by its closeness to the follow-up as asked, so the previous question's answer is not
given again. Otherwise the documents don't say. Measured on the development set and, unseen while tuning, the held-out set
(`carrag/bench/questions/corpus_heldout.jsonl`, other documents): 0.3 took refusals of unanswerable
questions from 9/13 to 11/13 (dev) and 5/12 to 8/12 (held-out) while accuracy rose (docs/benchmarks.md);
0.4 refused one more trap per set but cost 5 dev answers.
"""


def configuration_markdown() -> str:
    """The whole of docs/configuration.md."""
    return CONFIGURATION_INTRO + "\n## Settings\n\n" + settings_markdown()
