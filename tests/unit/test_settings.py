"""Every settings field is read from its environment variable, and read somewhere in the package."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from driftrag.settings import Settings

PACKAGE = Path(__file__).resolve().parents[2] / "driftrag"

# A non-default value for every field, under the variable a user would set.
ENVIRONMENT = {
    "NEO4J_URI": ("neo4j_uri", "bolt://db.example:7687"),
    "NEO4J_USERNAME": ("neo4j_username", "reader"),
    "NEO4J_PASSWORD": ("neo4j_password", "s3cret"),
    "NEO4J_DATABASE": ("neo4j_database", "graphs"),
    "OPENAI_API_KEY": ("openai_api_key", "sk-test"),
    "OPENAI_BASE_URL": ("openai_base_url", "http://127.0.0.1:9/v1"),
    "DRIFTRAG_HOME": ("home", "/tmp/driftrag-elsewhere"),
    "DRIFTRAG_NEO4J_VERSION": ("neo4j_version", "[5.26.1,5.27.0)"),
    "DRIFTRAG_NEO4J_MAVEN_REPOSITORY": ("neo4j_maven_repository", "http://127.0.0.1:9/maven2"),
    "DRIFTRAG_NEO4J_RESOLVE_TIMEOUT_S": ("neo4j_resolve_timeout_s", "60"),
    "DRIFTRAG_NEO4J_PORT": ("neo4j_port", "7999"),
    "DRIFTRAG_NEO4J_HEAP_MB": ("neo4j_heap_mb", "2048"),
    "DRIFTRAG_NEO4J_PAGECACHE_MB": ("neo4j_pagecache_mb", "256"),
    "DRIFTRAG_NEO4J_START_TIMEOUT_S": ("neo4j_start_timeout_s", "30"),
    "DRIFTRAG_CONNECT_RETRIES": ("connect_retries", "7"),
    "DRIFTRAG_CONNECT_RETRY_DELAY_S": ("connect_retry_delay_s", "0.5"),
    "DRIFTRAG_NEO4J_CONNECT_TIMEOUT_S": ("neo4j_connect_timeout_s", "3.5"),
    "DRIFTRAG_NEO4J_HEALTH_PROBE_S": ("neo4j_health_probe_s", "2"),
    "DRIFTRAG_LLM_PROVIDER": ("llm_provider", "openai"),
    "DRIFTRAG_LLM_MODEL": ("llm_model", "gpt-4.1-mini"),
    "DRIFTRAG_LLM_TEMPERATURE": ("llm_temperature", "0.3"),
    "DRIFTRAG_LLM_TIMEOUT_S": ("llm_timeout_s", "12"),
    "DRIFTRAG_LLM_MAX_RETRIES": ("llm_max_retries", "5"),
    "DRIFTRAG_LLM_CONCURRENCY": ("llm_concurrency", "3"),
    "DRIFTRAG_LLM_CACHE": ("llm_cache", "false"),
    "DRIFTRAG_LLM_STRUCTURED": ("llm_structured", "json_object"),
    "DRIFTRAG_EMBEDDING_PROVIDER": ("embedding_provider", "offline"),
    "DRIFTRAG_LLM_CONTEXT_WINDOW": ("llm_context_window", "8192"),
    "DRIFTRAG_LLM_DISABLE_THINKING": ("llm_disable_thinking", "false"),
    "DRIFTRAG_EXTRACTION_MAX_TOKENS": ("extraction_max_tokens", "1024"),
    "DRIFTRAG_SUMMARY_MAX_TOKENS": ("summary_max_tokens", "300"),
    "DRIFTRAG_REPORT_MAX_TOKENS": ("report_max_tokens", "1200"),
    "DRIFTRAG_EMBEDDING_MODEL": ("embedding_model", "text-embedding-3-large"),
    "DRIFTRAG_EMBEDDING_DIMENSIONS": ("embedding_dimensions", "256"),
    "DRIFTRAG_EMBED_BATCH_SIZE": ("embed_batch_size", "16"),
    "DRIFTRAG_EMBED_WORKERS": ("embed_workers", "3"),
    "DRIFTRAG_LOCAL_MODEL": ("local_model", "/models/smollm2.gguf"),
    "DRIFTRAG_LOCAL_CONTEXT": ("local_context", "2048"),
    "DRIFTRAG_LOCAL_THREADS": ("local_threads", "1"),
    "DRIFTRAG_LOCAL_TIMEOUT_S": ("local_timeout_s", "900"),
    "DRIFTRAG_LOCAL_START_TIMEOUT_S": ("local_start_timeout_s", "30"),
    "DRIFTRAG_CHUNK_SIZE": ("chunk_size", "600"),
    "DRIFTRAG_CHUNK_OVERLAP": ("chunk_overlap", "50"),
    "DRIFTRAG_MAX_FILE_MB": ("max_file_mb", "5"),
    "DRIFTRAG_GRAPH_EXTRACTION": ("graph_extraction", "false"),
    "DRIFTRAG_MAX_ARCHIVE_MB": ("max_archive_mb", "64"),
    "DRIFTRAG_MAX_ARCHIVE_MEMBERS": ("max_archive_members", "500"),
    "DRIFTRAG_OCR": ("ocr", "false"),
    "DRIFTRAG_OCR_LANGUAGE": ("ocr_language", "eng+fra"),
    "DRIFTRAG_MAX_GLEANINGS": ("max_gleanings", "0"),
    "DRIFTRAG_EXTRACTION_ATTEMPTS": ("extraction_attempts", "3"),
    "DRIFTRAG_MAX_CLUSTER_SIZE": ("max_cluster_size", "20"),
    "DRIFTRAG_LEIDEN_SEED": ("leiden_seed", "42"),
    "DRIFTRAG_REPORT_CONTEXT_TOKENS": ("report_context_tokens", "4000"),
    "DRIFTRAG_KB_LOCK_TTL_S": ("kb_lock_ttl_s", "30"),
    "DRIFTRAG_VECTOR_EXACT_LIMIT": ("vector_exact_limit", "50"),
    "DRIFTRAG_BASIC_TOP_K": ("basic_top_k", "4"),
    "DRIFTRAG_LOCAL_TOP_K_ENTITIES": ("local_top_k_entities", "8"),
    "DRIFTRAG_LOCAL_CONTEXT_TOKENS": ("local_context_tokens", "6000"),
    "DRIFTRAG_LOCAL_TEXT_PROPORTION": ("local_text_proportion", "0.4"),
    "DRIFTRAG_LOCAL_COMMUNITY_PROPORTION": ("local_community_proportion", "0.25"),
    "DRIFTRAG_ENTITY_SEARCH_MAX_ENTITIES": ("entity_search_max_entities", "7"),
    "DRIFTRAG_ANSWER_MAX_TOKENS": ("answer_max_tokens", "500"),
    "DRIFTRAG_MAX_QUESTION_TOKENS": ("max_question_tokens", "300"),
    "DRIFTRAG_QUERY_TIMEOUT_S": ("query_timeout_s", "90"),
    "DRIFTRAG_QUERY_STEP_RETRIES": ("query_step_retries", "3"),
    "DRIFTRAG_QUERY_OFFLINE_FALLBACK": ("query_offline_fallback", "false"),
    "DRIFTRAG_EXTRACTION_OFFLINE_FALLBACK": ("extraction_offline_fallback", "false"),
    "DRIFTRAG_GRAPH_SEARCH_MAX_SEEDS": ("graph_search_max_seeds", "50"),
    "DRIFTRAG_GRAPH_SEARCH_MAX_ROWS": ("graph_search_max_rows", "500"),
    "DRIFTRAG_GRAPH_SEARCH_MAX_FIELD_CHARS": ("graph_search_max_field_chars", "300"),
    "DRIFTRAG_GRAPH_SEARCH_MAX_LIST_ITEMS": ("graph_search_max_list_items", "10"),
    "DRIFTRAG_GRAPH_SEARCH_MAX_SOURCE_IDS": ("graph_search_max_source_ids", "5"),
    "DRIFTRAG_GRAPH_SEARCH_COUNT_CAP": ("graph_search_count_cap", "500"),
    "DRIFTRAG_DRIFT_TOP_K_COMMUNITIES": ("drift_top_k_communities", "3"),
    "DRIFTRAG_DRIFT_MIN_COMMUNITY_RATING": ("drift_min_community_rating", "5"),
    "DRIFTRAG_DRIFT_MAX_DEPTH": ("drift_max_depth", "3"),
    "DRIFTRAG_DRIFT_FOLLOWUPS_PER_ANSWER": ("drift_followups_per_answer", "2"),
    "DRIFTRAG_DRIFT_FOLLOWUPS_PER_ROUND": ("drift_followups_per_round", "8"),
    "DRIFTRAG_DRIFT_NUM_WORKERS": ("drift_num_workers", "2"),
    "DRIFTRAG_DRIFT_DEDUP_SIMILARITY": ("drift_dedup_similarity", "0.8"),
    "DRIFTRAG_DRIFT_MIN_ANSWER_SCORE": ("drift_min_answer_score", "40"),
    "DRIFTRAG_GLOBAL_COMMUNITY_LEVEL": ("global_community_level", "1"),
    "DRIFTRAG_GLOBAL_MAP_CONTEXT_TOKENS": ("global_map_context_tokens", "3000"),
    "DRIFTRAG_GLOBAL_NUM_WORKERS": ("global_num_workers", "2"),
    "DRIFTRAG_QUERY_MAX_LLM_CALLS": ("query_max_llm_calls", "12"),
    "DRIFTRAG_QUERY_MAX_PROMPT_TOKENS": ("query_max_prompt_tokens", "50000"),
    "DRIFTRAG_PROMPTS_DIR": ("prompts_dir", "/etc/driftrag/prompts"),
    "DRIFTRAG_OFFLINE_LANGUAGE": ("offline_language", "french"),
    "DRIFTRAG_OFFLINE_CHUNK_SIZE": ("offline_chunk_size", "250"),
    "DRIFTRAG_OFFLINE_CHUNK_OVERLAP": ("offline_chunk_overlap", "20"),
    "DRIFTRAG_OFFLINE_COOCCURRENCE_WINDOW": ("offline_cooccurrence_window", "0"),
    "DRIFTRAG_OFFLINE_MIN_ENTITY_CHUNKS": ("offline_min_entity_chunks", "3"),
    "DRIFTRAG_OFFLINE_MIN_COOCCURRENCES": ("offline_min_cooccurrences", "3"),
    "DRIFTRAG_OFFLINE_SUMMARY_WORDS": ("offline_summary_words", "120"),
    "DRIFTRAG_API_KEYS_FILE": ("api_keys_file", "/etc/driftrag/api-keys.json"),
    "DRIFTRAG_API_HOST": ("api_host", "0.0.0.0"),
    "DRIFTRAG_API_PORT": ("api_port", "8080"),
    "DRIFTRAG_API_WORKERS": ("api_workers", "3"),
    "DRIFTRAG_API_MAX_BODY_KB": ("api_max_body_kb", "64"),
    "DRIFTRAG_API_MAX_INGEST_BODY_MB": ("api_max_ingest_body_mb", "10"),
    "DRIFTRAG_API_MAX_PENDING_JOBS": ("api_max_pending_jobs", "3"),
    "DRIFTRAG_API_KEYS_RELOAD_S": ("api_keys_reload_s", "0.5"),
    "DRIFTRAG_API_HEADER_TIMEOUT_S": ("api_header_timeout_s", "3"),
    "DRIFTRAG_API_BODY_TIMEOUT_S": ("api_body_timeout_s", "7"),
    "DRIFTRAG_API_BODY_MIN_RATE_KIB_S": ("api_body_min_rate_kib_s", "8"),
    "DRIFTRAG_API_KEEP_ALIVE_S": ("api_keep_alive_s", "2"),
    "DRIFTRAG_API_MAX_CONNECTIONS": ("api_max_connections", "40"),
    "DRIFTRAG_API_MAX_HEADER_KB": ("api_max_header_kb", "8"),
    "DRIFTRAG_API_SSE_PING_S": ("api_sse_ping_s", "2.5"),
    "DRIFTRAG_API_ALLOW_QUERY_KEY": ("api_allow_query_key", "true"),
    "DRIFTRAG_MAX_DOCUMENT_CHARS": ("max_document_chars", "1000"),
    "DRIFTRAG_MAX_TEXT_RATIO": ("max_text_ratio", "12.5"),
    "DRIFTRAG_MAX_DOCUMENT_PAGES": ("max_document_pages", "30"),
    "DRIFTRAG_MAX_SPINE_ENTRIES": ("max_spine_entries", "40"),
    "DRIFTRAG_MAX_TABLE_CELLS": ("max_table_cells", "500"),
    "DRIFTRAG_PARSE_WORKERS": ("parse_workers", "3"),
    "DRIFTRAG_PARSE_TIMEOUT_S": ("parse_timeout_s", "45"),
}


def _plain(value: object) -> str:
    if hasattr(value, "get_secret_value"):
        value = value.get_secret_value()
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def test_the_environment_table_covers_every_field() -> None:
    assert {field for field, _ in ENVIRONMENT.values()} == set(Settings.model_fields)


def test_every_field_is_read_from_its_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    for variable, (_, value) in ENVIRONMENT.items():
        monkeypatch.setenv(variable, value)
    settings = Settings(_env_file=None)
    for variable, (field, value) in ENVIRONMENT.items():
        assert _plain(getattr(settings, field)) == value, variable


def test_defaults_differ_from_the_test_values() -> None:
    # Otherwise the test above could pass without reading the environment.
    defaults = Settings(_env_file=None)
    for variable, (field, value) in ENVIRONMENT.items():
        assert _plain(getattr(defaults, field)) != value, variable


def test_every_field_is_used_by_the_package() -> None:
    """No dead config: each field is read as `settings.<field>` (or `self.<field>` in a Settings helper)."""
    readers = "\n".join(path.read_text() for path in PACKAGE.rglob("*.py") if path.name != "settings.py")
    helpers = (PACKAGE / "settings.py").read_text().split("@property", 1)[1]
    unused = [
        field
        for field in Settings.model_fields
        if not re.search(rf"settings\.{field}\b", readers) and not re.search(rf"self\.{field}\b", helpers)
    ]
    assert unused == [], f"settings nobody reads: {unused}"


def test_auto_provider_follows_the_api_key() -> None:
    assert Settings(_env_file=None, openai_api_key=None).resolved_llm_provider() == "offline"
    assert Settings(_env_file=None, openai_api_key="k").resolved_llm_provider() == "openai"
    assert Settings(_env_file=None, openai_api_key="k", llm_provider="offline").resolved_llm_provider() == "offline"


def test_the_embedder_is_chosen_apart_from_the_chat_model() -> None:
    assert Settings(_env_file=None, openai_api_key="k").resolved_embedding_provider() == "openai"
    assert Settings(_env_file=None).resolved_embedding_provider() == "offline"
    local = Settings(_env_file=None, openai_api_key="k", llm_provider="local", local_model="/m.gguf")
    assert local.resolved_embedding_provider() == "offline", "auto: the bundled embedder beside a local model"
    chosen = Settings(_env_file=None, openai_api_key="k", embedding_provider="offline")
    assert chosen.resolved_llm_provider() == "openai" and chosen.resolved_embedding_provider() == "offline"
