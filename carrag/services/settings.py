"""Every tunable of Carrag in one place.

Values come from the environment (case-insensitive, e.g. ``CHUNK_SIZE=800``) or a ``.env`` file in
the working directory. Defaults are the seed document's numbers; the settings table of `docs/configuration.md` is
generated from this class by `carrag/services/configuration_docs.py` (``make docs``). The default prompts are in `default_prompts.py`.
"""

from __future__ import annotations

import os
import sys
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Literal
from urllib.parse import urlsplit, urlunsplit

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from carrag.services.access import ScopedKey, parse_key_scopes, unknown_scoped_keys
from carrag.services.default_prompts import DEFAULT_SYSTEM_PROMPT, DEFAULT_TAGGING_PROMPT
from carrag.services.vocabulary import ChunkingStrategy, PdfMode


def default_data_dir() -> Path:
    """One per-user data location, whatever the working directory: ``$XDG_DATA_HOME/carrag`` when
    XDG_DATA_HOME is set (an absolute path), else the platform's per-user data directory
    (``~/.local/share/carrag`` on Linux, ``~/Library/Application Support/carrag`` on macOS,
    ``%LOCALAPPDATA%\\carrag`` on Windows)."""
    xdg = os.environ.get("XDG_DATA_HOME", "")
    if xdg and Path(xdg).is_absolute():
        return Path(xdg) / "carrag"
    home = Path.home()
    if sys.platform == "darwin":
        return home / "Library" / "Application Support" / "carrag"
    if sys.platform == "win32":
        return Path(os.environ.get("LOCALAPPDATA") or home / "AppData" / "Local") / "carrag"
    return home / ".local" / "share" / "carrag"


DATA_DIR_SHOWN_DEFAULT = "$XDG_DATA_HOME/carrag or ~/.local/share/carrag"


def _split_csv(value: object) -> object:
    if isinstance(value, str):
        return [item.strip() for item in value.split(",") if item.strip()]
    return value


class Settings(BaseSettings):
    # hide_input_in_errors: a start-up error names the setting and the problem, never the value (API_KEYS and
    # API_KEY_SCOPES hold secrets, and the error reaches the log).
    model_config = SettingsConfigDict(
        env_file=".env", env_file_encoding="utf-8", extra="ignore", case_sensitive=False, hide_input_in_errors=True
    )

    # --- service ---------------------------------------------------------------------------------
    host: str = Field("127.0.0.1", description="Address `carrag serve` / `make run` binds to.")
    port: int = Field(8000, description="Port `carrag serve` / `make run` listens on.")
    data_dir: Path = Field(
        default_factory=default_data_dir,
        description="Directory for the SQLite store (documents, chunks, kept originals) and other state. The default is one "
        "per-user location whatever the working directory (`$XDG_DATA_HOME/carrag`, else `~/.local/share/carrag`; "
        "`~/Library/Application Support/carrag` on macOS); `carrag --help`, `/health` and the UI show the store "
        "in use. The Docker image sets `/data`.",
        json_schema_extra={"shown_default": DATA_DIR_SHOWN_DEFAULT},
    )
    log_level: str = Field("INFO", description="Root log level.")
    log_json: bool = Field(True, description="Structured JSON log lines (false: plain text).")

    # --- store -----------------------------------------------------------------------------------
    store: Literal["sqlite", "elasticsearch"] = Field("sqlite", description="Chunk store backend.")
    sqlite_path: Path | None = Field(None, description="SQLite database file (default: `<DATA_DIR>/carrag.db`).")
    elasticsearch_url: str = Field(
        "http://localhost:9200", description="Elasticsearch base URL; several nodes of a cluster comma-separated."
    )
    elasticsearch_index: str = Field("carrag_chunks", description="Index holding the chunks.")
    elasticsearch_api_key: SecretStr | None = Field(None, description="Elasticsearch API key, if secured.")
    elasticsearch_username: str | None = Field(None, description="Elasticsearch basic-auth user.")
    elasticsearch_password: SecretStr | None = Field(None, description="Elasticsearch basic-auth password.")
    elasticsearch_num_candidates: int = Field(
        100, ge=1, le=10000, description="kNN `num_candidates` per shard (HNSW search breadth)."
    )
    elasticsearch_timeout: float = Field(30.0, gt=0, description="Seconds per Elasticsearch request.")
    elasticsearch_shards: int = Field(
        1, ge=1, le=1024, description="Primary shards of a new index (one fits a single node; more spread writes)."
    )
    elasticsearch_replicas: int = Field(
        0, ge=0, le=16, description="Replica copies of each shard of a new index (0 on one node; 1+ on a cluster)."
    )
    elasticsearch_refresh_interval: str = Field(
        "1s", description="`index.refresh_interval` of a new index: how often new writes become searchable."
    )
    elasticsearch_write_refresh: Literal["wait_for", "true"] = Field(
        "wait_for",
        description="How a write waits until readers can see it: `wait_for` the next scheduled refresh "
        "(cheap under load), or `true` to force one at once (lower latency for single writes).",
    )
    elasticsearch_abandoned_after_seconds: float = Field(
        600.0,
        gt=0,
        description="Versions not published within this many seconds (a crashed writer's) are removed by "
        "the periodic sweep; a write gives up publishing after half of it.",
    )

    # --- ingestion -------------------------------------------------------------------------------
    chunk_size: int = Field(500, ge=50, le=20000, description="Maximum characters per chunk.")
    chunk_overlap: int = Field(100, ge=0, description="Characters shared by consecutive chunks.")
    chunking_strategy: ChunkingStrategy = Field(
        ChunkingStrategy.RECURSIVE,
        description="Default chunking strategy (overridable per request). Source files (.py, .js, .ts, .yaml, "
        ".toml, .sql) use `code` unless the request names a strategy.",
    )
    markdown_chunking_for_markup: bool = Field(
        True,
        description="Markdown files and HTML pages (uploaded or fetched) are chunked by headers (`markdown` "
        "strategy, sections in `section`) unless the request names a strategy; false uses CHUNKING_STRATEGY.",
    )
    min_chunk_size: int = Field(
        100, ge=0, description="`sentence` strategy: a trailing chunk shorter than this is merged."
    )
    whole_document_chars: int = Field(
        0,
        ge=0,
        description="A document with at most this many characters of text is kept as one chunk unless "
        "the request sets `chunk_size` (short records such as abstracts or FAQ entries retrieve "
        "better whole; see docs/benchmarks.md). 0 always splits by CHUNK_SIZE.",
    )
    max_upload_bytes: int = Field(50 * 1024 * 1024, ge=1, description="Largest accepted upload; bigger bodies get 413.")
    keep_originals: bool = Field(
        True,
        description="Keep each uploaded file's bytes (and a fetched URL's body) beside its document, for "
        "`GET /documents/{id}/file`; deleted with the document. Off: only the extracted text is stored.",
    )
    max_json_body_bytes: int = Field(
        2 * 1024 * 1024, ge=1024, description="Largest JSON (or form-urlencoded) request body; bigger get 413."
    )
    body_read_timeout_seconds: float = Field(
        15.0,
        gt=0,
        le=600,
        description="Longest wait for the next part of a request body; a client that sends nothing for this "
        "long (a stalled upload, a Content-Length larger than what it sends) gets 408 and the connection closes.",
    )
    max_extracted_chars: int = Field(20_000_000, ge=1, description="Largest extracted text accepted from one document.")
    max_pdf_pages: int = Field(5000, ge=1, description="PDFs (and multi-page TIFF images) with more pages are refused.")
    allow_duplicates: bool = Field(
        False,
        description="Store a document whose text (normalised) equals one already stored under another source "
        'id. Off: such an ingest answers `"status": "duplicate"` with the existing document and stores nothing.',
    )
    pdf_mode: PdfMode = Field(
        PdfMode.TEXT,
        description="`text`: PyMuPDF plain text (fast). `markdown`: pymupdf4llm Markdown with headings "
        "and tables (several times slower); page numbers are kept in both.",
    )
    ocr_enabled: bool = Field(
        True,
        description="OCR (rapidocr-onnxruntime, when installed) reads PDF pages without usable text and "
        "garbage text blocks; progress is reported in the ingest job. False turns it off.",
    )
    ocr_dpi: int = Field(300, ge=72, le=600, description="Resolution at which PDF pages are rendered for OCR.")
    page_image_max_pixels: int = Field(
        2_000_000,
        ge=100_000,
        le=50_000_000,
        description="Most pixels (width × height) of a page picture drawn by `GET /documents/{id}/pages/{n}/image` "
        "(a letter page at about 145 dpi); a larger page is drawn at a lower resolution to fit.",
    )
    page_image_cache_mb: int = Field(
        32, ge=0, description="Megabytes of page pictures kept in memory for repeated requests (0: none kept)."
    )
    max_concurrent_page_images: int = Field(
        2,
        ge=1,
        description="Page pictures drawn at once (CPU work); more wait up to QUERY_QUEUE_TIMEOUT, then get 429.",
    )

    # --- parser budgets: what one document may make a parser read (docs/security.md) --------------
    ocr_max_page_pixels: int = Field(
        20_000_000,
        ge=1_000_000,
        description="Most pixels a page or picture is read by OCR at (A4 at 300 dpi is 8.7 million); a larger "
        "one is rendered at a lower resolution to fit, so memory stays bounded.",
    )
    max_image_pixels: int = Field(
        50_000_000,
        ge=1_000_000,
        description="Largest picture (width × height from its header, before it is decoded): an uploaded "
        "image, a TIFF page, or an image on a PDF page read by OCR. Larger is refused with 413.",
    )
    max_archive_bytes: int = Field(
        256 * 1024 * 1024,
        ge=1024 * 1024,
        description="Most bytes a .docx, .xlsx, .pptx, .odt or .epub may inflate to, counted while reading "
        "(the sizes the archive declares are not trusted). More is refused with 413.",
    )
    max_archive_members: int = Field(
        10_000, ge=10, description="Most files inside one .docx, .xlsx, .pptx, .odt or .epub; more is 413."
    )
    max_markup_bytes: int = Field(
        16 * 1024 * 1024,
        ge=1024 * 1024,
        description="Most markup parsed into a tree, which takes about ten times its size in memory: an HTML "
        "page (characters), or the XML a .docx, .xlsx, .pptx, .odt or .epub inflates to (.xlsx worksheets are "
        "streamed and do not count). More is 413.",
    )
    max_sheet_cells: int = Field(
        2_000_000,
        ge=1000,
        description="Most cells read from one .xlsx: each row counts up to its last non-empty cell. More is 413.",
    )
    max_html_elements: int = Field(
        200_000,
        ge=1000,
        description="Most elements in one HTML page (an upload, a URL, an e-mail body, an e-book chapter); more is 413.",
    )
    max_html_attributes: int = Field(
        1000, ge=10, description="Most attributes on one HTML element, counted before the page is parsed; more is 413."
    )
    max_email_nesting: int = Field(
        10,
        ge=3,
        description="Deepest MIME nesting of an .eml (multipart parts and attached messages), checked before the "
        "message is parsed; deeper is refused with 400. Attached e-mails are read 3 levels deep.",
    )
    max_concurrent_ingests: int = Field(
        2, ge=1, description="Ingests processed at once; further ones wait in the queue."
    )
    ingest_queue_size: int = Field(
        16, ge=0, description="Ingests allowed to wait for a slot; beyond that the API answers 429."
    )

    # --- auto-tagging ----------------------------------------------------------------------------
    tagger: Literal["auto", "llm", "keywords", "off"] = Field(
        "auto",
        description="`llm` asks the LLM; `keywords` is the deterministic fallback; `auto` uses the "
        "LLM when it is a capable remote model (Ollama/OpenAI) and keywords otherwise.",
    )
    tagging_prompt: str = Field(DEFAULT_TAGGING_PROMPT, description="System prompt for LLM tagging.")
    tagging_content_chars: int = Field(8000, ge=100, description="Characters sent to the tagger.")
    max_auto_tags: int = Field(5, ge=0, le=50, description="Auto-generated tags kept per document.")
    tagging_timeout: float = Field(60.0, gt=0, description="Seconds before LLM tagging gives up.")

    # --- embeddings ------------------------------------------------------------------------------
    embedder: Literal["local", "ollama", "openai"] = Field(
        "local",
        description="Embedding backend: `local` (packaged MiniLM), `ollama`, or `openai` (any OpenAI-compatible "
        "`/embeddings` endpoint, configured by the EMBEDDINGS_* settings, separate from the LLM's).",
    )
    local_embedding_model_path: Path | None = Field(
        None, description="ONNX model file for the local embedder (default: the packaged MiniLM)."
    )
    local_embedding_tokenizer_path: Path | None = Field(
        None, description="tokenizer.json for the local embedder (default: the packaged one)."
    )
    local_embedding_threads: int = Field(
        0,
        ge=0,
        description="Worker threads of the local embedder (0 = all cores): a batch's runs (up to 4 texts of "
        "similar length) go to them concurrently, each on one onnxruntime thread; a query is one run on one "
        "thread, which does not spin a second core while the BM25 leg and Elasticsearch use it "
        '(docs/benchmarks.md, "Query embedding on one thread").',
    )
    local_embedding_max_tokens: int = Field(256, ge=8, le=512, description="Token limit per text.")
    embed_batch_size: int = Field(32, ge=1, le=1024, description="Texts per embedding call.")
    embed_timeout: float = Field(120.0, gt=0, description="Seconds per embedding call.")
    embed_retries: int = Field(3, ge=0, le=10, description="Retries of a failed embedding batch.")
    embed_retry_backoff: float = Field(0.5, ge=0, description="First retry delay (doubles each time).")
    embed_cache_size: int = Field(
        10_000, ge=0, description="Embeddings kept in the in-memory LRU cache (0 disables it)."
    )

    # --- hosted embeddings (EMBEDDER=openai) -------------------------------------------------------
    embeddings_base_url: str = Field(
        "https://api.openai.com/v1",
        description="Base URL of the OpenAI-compatible embeddings server (EMBEDDER=openai); `/embeddings` is "
        "appended. Any other URL than OpenAI's is part of the recorded model identity.",
    )
    embeddings_api_key: SecretStr | None = Field(
        None, description="Bearer key for the embeddings server (not OPENAI_API_KEY, which is the LLM's)."
    )
    embeddings_model: str = Field("text-embedding-3-small", description="Embedding model on that server.")
    embeddings_dimensions: int | None = Field(
        None, ge=1, le=8192, description="Ask for vectors of this length (models that support `dimensions`)."
    )

    # --- Ollama / OpenAI-compatible servers --------------------------------------------------------
    ollama_base_url: str = Field("http://localhost:11434", description="Ollama server URL.")
    ollama_embed_model: str = Field("nomic-embed-text", description="Ollama embedding model.")
    ollama_llm_model: str = Field("llama3.2", description="Ollama chat model.")
    ollama_timeout: float = Field(120.0, gt=0, description="Seconds per Ollama request.")
    openai_base_url: str = Field("http://localhost:8080/v1", description="Base URL of an OpenAI-compatible server.")
    openai_api_key: SecretStr | None = Field(None, description="API key for the OpenAI-compatible server.")
    openai_model: str = Field("gpt-4o-mini", description="Model name on the OpenAI-compatible server.")

    # --- generation --------------------------------------------------------------------------------
    llm: Literal["local", "ollama", "openai", "none"] = Field(
        "local",
        description="Answer generator: `local` (GGUF via llama.cpp), `ollama`, `openai` "
        "(any OpenAI-compatible server) or `none` (extractive fallback, no LLM).",
    )
    local_llm_model_path: Path | None = Field(
        None, description="GGUF file for the local LLM (default: the packaged SmolLM2-135M)."
    )
    local_llm_context: int = Field(4096, ge=512, description="Context window of the local LLM.")
    local_llm_threads: int = Field(
        0, ge=0, description="llama.cpp threads (0 = all cores but one; see carrag/services/llms/llama_cpp.py)."
    )
    llm_max_tokens: int = Field(512, ge=1, le=8192, description="Most tokens generated per answer.")
    llm_temperature: float = Field(0.1, ge=0, le=2, description="Sampling temperature.")
    llm_timeout: float = Field(120.0, gt=0, description="Seconds a generation may take in total.")
    system_prompt: str = Field(DEFAULT_SYSTEM_PROMPT, description="System prompt for answers.")
    max_context_chars: int | None = Field(
        None,
        ge=500,
        description="Most characters of retrieved context per prompt (default: 12000, or 3000 for the "
        "local LLM, whose prompt processing runs at ~185 tokens/s on 2 cores).",
    )
    max_history_messages: int = Field(20, ge=0, description="Most history messages kept per query.")

    # --- answers (carrag/services/answers/) ---------------------------------------------------------
    answer_mode: Literal["generate", "extract", "auto"] | None = Field(
        None,
        description="`generate` (the LLM writes the answer), `extract` (the best sentences of the passages, "
        "no LLM) or `auto` (generate, check grounding, fall back to extract). Default: `extract` for the "
        "local LLM and LLM=none, `auto` for Ollama and OpenAI-compatible servers (docs/configuration.md).",
    )
    answer_min_relevance: float | None = Field(
        None,
        ge=0,
        le=1,
        description="Least confidence (0–1: the mean of the answer model's probabilities that the best passage text "
        'answers the question and that the documents answer it) for an answer; below it the answer is "the '
        "documents don't say\" and no LLM runs. Default: 0.5, where an answer is expected to be right as often as "
        "a refusal (carrag/services/answers/model.py). 0 never refuses.",
    )
    answer_min_support: float = Field(
        0.55,
        ge=0,
        le=1,
        description="Support (0–1) a generated sentence needs from the sources to count as grounded.",
    )

    # --- retrieval ---------------------------------------------------------------------------------
    default_top_k: int = Field(5, ge=1, le=100, description="Results per query when not given.")
    max_top_k: int = Field(100, ge=1, le=1000, description="Largest `top_k` a request may ask for.")
    retrieval_k_multiplier: int = Field(3, ge=1, le=50, description="Each leg returns `top_k × multiplier` candidates.")
    rrf_k: int = Field(60, ge=1, description="Reciprocal Rank Fusion constant k in 1/(k + rank).")
    neighbour_window: int = Field(
        1,
        ge=0,
        le=10,
        description="Neighbours fetched on each side. On Elasticsearch each chunk stores 1 on each side, so a search "
        "hit carries its window; a wider window, or chunks written by an older Carrag, are read after the search "
        "in one batched read (docs/architecture.md).",
    )
    max_question_chars: int = Field(4000, ge=1, description="Longest question accepted.")
    sse_keepalive_seconds: float = Field(
        15.0, gt=0, description="Idle seconds before /query/stream sends a keep-alive comment."
    )

    # --- reranking ---------------------------------------------------------------------------------
    rerank_enabled: Literal["auto"] | bool = Field(
        "auto",
        description="Rerank by default (per-request `rerank` wins). `auto`: when the reranker model is installed "
        "(no model ships in a PyPI package, so the embedded default runs without, and /health says `off`); `true`: "
        "always, and a missing model makes /health `degraded` and every answer carry a `rerank_note`.",
    )
    reranker_model: str = Field("ms-marco-MiniLM-L-12-v2", description="flashrank model name.")
    reranker_cache_dir: Path | None = Field(
        None, description="Directory holding `<model>/` files (default: `<DATA_DIR>/flashrank`)."
    )
    reranker_max_length: int = Field(512, ge=16, description="Token limit per question+passage pair.")

    # --- web fetching ------------------------------------------------------------------------------
    fetch_timeout: float = Field(30.0, gt=0, description="Seconds for a whole URL fetch.")
    fetch_max_bytes: int = Field(10 * 1024 * 1024, ge=1, description="Largest fetched body.")
    fetch_max_redirects: int = Field(5, ge=0, le=20, description="Redirects followed per fetch.")
    fetch_allowed_hosts: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="Hosts/CIDRs URL ingestion may reach even if private (comma-separated).",
    )
    fetch_user_agent: str = Field("Carrag/0.1 (+self-hosted RAG)", description="User-Agent sent.")
    per_host_delay: float = Field(1.0, ge=0, description="Seconds between requests to one host.")

    # --- folder sync and site crawl (carrag/services/sync/) -------------------------------------------
    sync_roots: Annotated[list[Path], NoDecode] = Field(
        default_factory=list,
        description="Directories POST /sync may read, comma-separated (a folder must lie under one, symlinks "
        "resolved; none: POST /sync is refused with 403). `carrag sync` without --url may sync any folder.",
    )
    sync_max_files: int = Field(
        100_000,
        ge=1,
        description="Most files one folder sync takes; with more, the sync fails before changing anything.",
    )
    crawl_max_pages: int = Field(
        10_000, ge=1, description="Largest `max_pages` a crawl may ask for (POST /ingest/url with `crawl`)."
    )
    crawl_concurrency: int = Field(
        4, ge=1, le=64, description="Pages a crawl works on at once (each host still waits PER_HOST_DELAY)."
    )

    # --- security ----------------------------------------------------------------------------------
    api_keys: Annotated[list[SecretStr], NoDecode] = Field(
        default_factory=list,
        description="Comma-separated bearer keys; when set, all routes but health need one.",
    )
    api_key_scopes: Annotated[list[ScopedKey], NoDecode] = Field(
        default_factory=list,
        description='JSON object limiting some of API_KEYS, e.g. `{"team-a-key": {"collections": ["team-a"], '
        '"read_only": true}}`: `collections` (names; null = all) and `read_only` (default false). Every key '
        "named must be in API_KEYS; a key not named keeps full access (docs/security.md).",
    )
    cors_origins: Annotated[list[str], NoDecode] = Field(
        default_factory=list, description="Comma-separated origins allowed by CORS (none by default)."
    )
    max_concurrent_queries: int = Field(
        8, ge=1, description="Searches (retrieval, also inside /query) run at once; more wait briefly, then get 429."
    )
    query_queue_timeout: float = Field(
        10.0, ge=0, description="Seconds a query waits for a slot (search, then generation) before 429."
    )
    max_concurrent_generations: int | None = Field(
        None,
        ge=1,
        description="Answers generated at once (default: 1 for the local LLM, which runs one "
        "generation at a time; 4 for Ollama/OpenAI; MAX_CONCURRENT_QUERIES for LLM=none).",
    )
    generation_queue_size: int = Field(
        2,
        ge=0,
        description="Answers allowed to wait (up to QUERY_QUEUE_TIMEOUT) for a generation slot; "
        "beyond that /query and /query/stream answer 429 at once instead of queueing until LLM_TIMEOUT.",
    )

    # --- operations: ingest jobs, shutdown, metrics -------------------------------------------------
    job_retention: int = Field(
        1000, ge=1, description="Finished ingest jobs kept in the store for GET /jobs (oldest dropped first)."
    )
    job_ttl_seconds: float = Field(
        3600.0, gt=0, description="Seconds a finished ingest job stays visible before it expires."
    )
    job_lease_seconds: float = Field(
        15.0,
        gt=0,
        description="An ingest job's lease: the process running it renews it every JOB_LEASE_RENEW_SECONDS; a job "
        "whose lease ran out (its process died) is reported failed, and nothing it wrote is ever visible.",
    )
    job_lease_renew_seconds: float = Field(
        5.0,
        gt=0,
        description="How often a running job's process renews its lease and looks for a cancel request made on "
        "another replica (used as at most half of JOB_LEASE_SECONDS).",
    )
    shutdown_grace_seconds: float = Field(
        30.0,
        ge=0,
        description="On SIGTERM, seconds in-flight ingests get to finish before they are cancelled (and rolled back).",
    )
    metrics_public: bool = Field(False, description="Serve /metrics without an API key even when API_KEYS is set.")

    @field_validator("fetch_allowed_hosts", "api_keys", "cors_origins", "sync_roots", mode="before")
    @classmethod
    def _comma_separated(cls, value: object) -> object:
        return _split_csv(value)

    @field_validator("api_key_scopes", mode="before")
    @classmethod
    def _key_scopes_json(cls, value: object) -> object:
        return parse_key_scopes(value)

    @model_validator(mode="after")
    def _check(self) -> Settings:
        unknown = unknown_scoped_keys(self.api_key_scopes, self.api_keys)
        if unknown:
            positions = ", ".join(str(position) for position in unknown)
            raise ValueError(
                f"API_KEY_SCOPES entry {positions} (counting from 1) names a key that is not in API_KEYS; "
                "every scoped key must also be listed in API_KEYS"
            )
        if self.chunk_overlap * 2 > self.chunk_size:
            raise ValueError(
                f"CHUNK_OVERLAP ({self.chunk_overlap}) must be at most half of CHUNK_SIZE ({self.chunk_size})"
            )
        return self

    @property
    def resolved_sqlite_path(self) -> Path:
        return self.sqlite_path or self.data_dir / "carrag.db"

    @property
    def store_location(self) -> str:
        """Where the store in use lives, for `carrag --help`, /health and the UI: the SQLite file, or the
        Elasticsearch URL (without credentials) and index."""
        if self.store == "sqlite":
            return str(self.resolved_sqlite_path.expanduser().absolute())
        urls = []
        for url in self.elasticsearch_url.split(","):
            parts = urlsplit(url.strip())
            netloc = parts.netloc.rsplit("@", 1)[-1]
            urls.append(urlunsplit((parts.scheme, netloc, parts.path, "", "")))
        return f"{','.join(urls)} index {self.elasticsearch_index}"

    def legacy_store_hint(self, working_directory: Path | None = None) -> str | None:
        """A note when DATA_DIR was left to its per-user default but the working directory holds a store
        made by an older Carrag (whose default was ``./data``), so nobody thinks their documents vanished."""
        if self.store != "sqlite" or "data_dir" in self.model_fields_set or self.sqlite_path is not None:
            return None
        legacy = (working_directory or Path.cwd()) / "data" / "carrag.db"
        if not legacy.is_file() or legacy.absolute() == self.resolved_sqlite_path.absolute():
            return None
        return (
            f"{legacy} is a store from before DATA_DIR defaulted to {self.data_dir}; this run uses "
            f"{self.resolved_sqlite_path}. Set DATA_DIR={legacy.parent} to keep using the old one."
        )

    @property
    def resolved_max_context_chars(self) -> int:
        if self.max_context_chars is not None:
            return self.max_context_chars
        return 3000 if self.llm == "local" else 12_000

    @property
    def resolved_answer_mode(self) -> Literal["generate", "extract", "auto"]:
        from carrag.services.answers.modes import default_answer_mode

        return self.answer_mode or default_answer_mode(self.llm)

    @property
    def resolved_max_concurrent_generations(self) -> int:
        if self.max_concurrent_generations is not None:
            return self.max_concurrent_generations
        if self.llm == "local":
            return 1
        return self.max_concurrent_queries if self.llm == "none" else 4

    @property
    def resolved_reranker_cache_dir(self) -> Path:
        return self.reranker_cache_dir or self.data_dir / "flashrank"


@lru_cache
def get_settings() -> Settings:
    return Settings()


def revealed(secret: SecretStr | None) -> str | None:
    """A secret setting's value, for the one client that sends it (the settings show it as ``**********``)."""
    return secret.get_secret_value() if secret is not None else None
