"""Fixtures for ingestion-workflow tests: deps with a scripted chat model, a runner collecting progress."""

from __future__ import annotations

import pytest

from driftrag.providers import Providers, build_providers
from driftrag.settings import Settings
from driftrag.store import Neo4jStore
from tests.support.ingestion import SMALL_CHUNKS, Ingestor


@pytest.fixture(scope="session")
def ingest_settings(neo4j_settings: Settings) -> Settings:
    return neo4j_settings.model_copy(update=SMALL_CHUNKS)


@pytest.fixture(scope="session")
def providers(ingest_settings: Settings) -> Providers:
    return build_providers(ingest_settings)


@pytest.fixture
def ingestor(ingest_settings: Settings, store: Neo4jStore, providers: Providers) -> Ingestor:
    return Ingestor(settings=ingest_settings, store=store, providers=providers)
