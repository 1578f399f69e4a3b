"""Which Neo4j version to run: an exact version, or the newest release in a Maven range.

A range is never handed to Maven (Maven 3.8 walks the dependency tree of every version in it); it
is turned into one exact version here, from one look-up of the repository's `maven-metadata.xml`.
"""

from __future__ import annotations

import re
import urllib.error
import urllib.request
from xml.etree import ElementTree

from pydantic import BaseModel, ConfigDict

from driftrag.errors import LocalNeo4jError, MissingPrerequisiteError

_EXACT = re.compile(r"^\d+(\.\d+)*$")
_RANGE = re.compile(r"^([\[\(])\s*(\d+(?:\.\d+)*)?\s*,\s*(\d+(?:\.\d+)*)?\s*([\]\)])$")
_METADATA_PATH = "org/neo4j/neo4j/maven-metadata.xml"
METADATA_TIMEOUT_S = 15.0


def version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


class VersionSpec(BaseModel):
    """An exact version (`exact`), or bounds with their inclusiveness."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    text: str
    exact: str | None = None
    lower: str | None = None
    lower_inclusive: bool = True
    upper: str | None = None
    upper_inclusive: bool = False

    def contains(self, version: str) -> bool:
        if not _EXACT.match(version):
            return False  # alphas, release candidates, drops: never picked
        if self.exact is not None:
            return version_key(version) == version_key(self.exact)
        key = version_key(version)
        if self.lower is not None:
            low = version_key(self.lower)
            if key < low or (key == low and not self.lower_inclusive):
                return False
        if self.upper is not None:
            high = version_key(self.upper)
            if key > high or (key == high and not self.upper_inclusive):
                return False
        return True

    def newest(self, versions: list[str]) -> str | None:
        matching = [version for version in versions if self.contains(version)]
        return max(matching, key=version_key) if matching else None


def parse_version_spec(text: str) -> VersionSpec:
    """`5.26.30` or a Maven range such as `[5.26.0,5.27.0)`; anything else is refused."""
    stripped = text.strip()
    if _EXACT.match(stripped):
        return VersionSpec(text=stripped, exact=stripped)
    found = _RANGE.match(stripped)
    if found is None or (found.group(2) is None and found.group(3) is None):
        raise LocalNeo4jError(
            f"invalid DRIFTRAG_NEO4J_VERSION {text!r}: expected an exact version such as 5.26.30 "
            "or a Maven range such as [5.26.0,5.27.0)"
        )
    return VersionSpec(
        text=stripped,
        lower=found.group(2),
        lower_inclusive=found.group(1) == "[",
        upper=found.group(3),
        upper_inclusive=found.group(4) == "]",
    )


def published_versions(repository: str) -> list[str]:
    """The versions of org.neo4j:neo4j the repository lists; fails within seconds when unreachable."""
    url = f"{repository.rstrip('/')}/{_METADATA_PATH}"
    try:
        with urllib.request.urlopen(url, timeout=METADATA_TIMEOUT_S) as response:
            body = response.read()
    except urllib.error.HTTPError as exc:
        raise LocalNeo4jError(
            f"the Maven repository {repository} answered HTTP {exc.code} for {url}; "
            "check DRIFTRAG_NEO4J_MAVEN_REPOSITORY"
        ) from exc
    except (urllib.error.URLError, TimeoutError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise MissingPrerequisiteError(
            f"cannot reach the Maven repository {repository} ({reason}). The Neo4j jars are not cached yet, "
            "so the network is needed once: connect (a proxy? set DRIFTRAG_NEO4J_MAVEN_REPOSITORY to a "
            "reachable mirror), or run `driftrag neo4j fetch` on a machine with network and copy its "
            "`<DRIFTRAG_HOME>/neo4j/runtime` folder here"
        ) from exc
    return parse_metadata(body)


def parse_metadata(body: bytes) -> list[str]:
    try:
        root = ElementTree.fromstring(body)
    except ElementTree.ParseError as exc:
        raise LocalNeo4jError(f"unreadable maven-metadata.xml for org.neo4j:neo4j: {exc}") from exc
    return [node.text.strip() for node in root.iterfind("./versioning/versions/version") if node.text]


def choose_version(spec: VersionSpec, versions: list[str], repository: str) -> str:
    """The exact version to resolve, checked against what the repository publishes."""
    chosen = spec.newest(versions)
    if chosen is None:
        releases = [v for v in versions if _EXACT.match(v)]
        if spec.exact is not None:  # show the releases of the same line, e.g. 5.26.x for 5.26.99
            line = spec.exact.split(".")[:2]
            releases = [v for v in releases if v.split(".")[:2] == line] or releases
        nearby = sorted(releases, key=version_key)[-5:]
        raise LocalNeo4jError(
            f"no Neo4j release matching {spec.text} in {repository} (newest published: {', '.join(nearby)}); "
            "check DRIFTRAG_NEO4J_VERSION"
        )
    return chosen
