"""One set of language resources for the offline unit tests (parsing a Punkt model takes a second)."""

from __future__ import annotations

import pytest

from driftrag.offline.nlp import Language, LanguageResources


@pytest.fixture(scope="session")
def resources() -> LanguageResources:
    return LanguageResources()


@pytest.fixture(scope="session")
def english(resources: LanguageResources) -> Language:
    return resources.get("english").load()


@pytest.fixture(scope="session")
def french(resources: LanguageResources) -> Language:
    return resources.get("french").load()
