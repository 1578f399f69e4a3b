"""Turning DRIFTRAG_NEO4J_VERSION into the one exact version Maven is given."""

from __future__ import annotations

import time

import pytest

from driftrag.errors import LocalNeo4jError, MissingPrerequisiteError
from driftrag.local_neo4j.versions import choose_version, parse_metadata, parse_version_spec, published_versions

METADATA = b"""<?xml version="1.0" encoding="UTF-8"?>
<metadata>
  <groupId>org.neo4j</groupId>
  <artifactId>neo4j</artifactId>
  <versioning>
    <latest>2025.01.0</latest>
    <versions>
      <version>5.25.1</version>
      <version>5.26.0</version>
      <version>5.26.2</version>
      <version>5.26.10</version>
      <version>5.26.9</version>
      <version>5.27.0-alpha01</version>
      <version>5.27.0</version>
      <version>2025.01.0</version>
    </versions>
  </versioning>
</metadata>
"""


def test_a_range_picks_its_newest_release_numerically_and_never_a_pre_release() -> None:
    versions = parse_metadata(METADATA)
    spec = parse_version_spec("[5.26.0,5.27.0)")
    assert choose_version(spec, versions, "repo") == "5.26.10"  # 10 > 9, not string order
    assert choose_version(parse_version_spec("[5.26.0,5.27.0]"), versions, "repo") == "5.27.0"
    assert choose_version(parse_version_spec("(,5.26.0)"), versions, "repo") == "5.25.1"
    assert choose_version(parse_version_spec("[5.26.0,)"), versions, "repo") == "2025.01.0"


def test_an_exact_version_must_be_published() -> None:
    versions = parse_metadata(METADATA)
    assert choose_version(parse_version_spec("5.26.2"), versions, "repo") == "5.26.2"
    with pytest.raises(LocalNeo4jError, match=r"no Neo4j release matching 5\.26\.99 in repo") as caught:
        choose_version(parse_version_spec("5.26.99"), versions, "repo")
    assert "newest published: 5.26.0, 5.26.2, 5.26.9, 5.26.10)" in str(caught.value)


@pytest.mark.parametrize("text", ["latest", "[5.26.0", "5.26.x", "[,]", "5.26.0,5.27.0", ""])
def test_an_unusable_version_setting_is_refused_with_an_example(text: str) -> None:
    with pytest.raises(LocalNeo4jError, match=r"expected an exact version such as 5\.26\.30"):
        parse_version_spec(text)


def test_an_unreachable_repository_fails_within_seconds_and_says_how_to_fix_it() -> None:
    started = time.monotonic()
    with pytest.raises(MissingPrerequisiteError) as caught:
        published_versions("http://127.0.0.1:1/maven2")
    assert time.monotonic() - started < 10
    message = str(caught.value)
    assert "cannot reach the Maven repository http://127.0.0.1:1/maven2" in message
    assert "DRIFTRAG_NEO4J_MAVEN_REPOSITORY" in message
    assert "driftrag neo4j fetch" in message
