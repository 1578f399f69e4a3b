from __future__ import annotations

import pytest

from driftrag.errors import InvalidIdentifierError, UnsupportedServerError
from driftrag.models.identifiers import validate_kb_id, validate_node_id
from driftrag.models.server import check_server_version


@pytest.mark.parametrize("kb", ["alice", "Alice_2", "kb-1", "0", "a" * 64])
def test_valid_kb_ids_pass(kb: str) -> None:
    assert validate_kb_id(kb) == kb


@pytest.mark.parametrize(
    "kb",
    ["", "-x", "_x", "a b", "kb'", "kb`", 'kb"', "}) DETACH DELETE n //", "a" * 65, "é", "kb\n", None, 3],
)
def test_hostile_or_malformed_kb_ids_fail(kb: object) -> None:
    with pytest.raises(InvalidIdentifierError):
        validate_kb_id(kb)  # type: ignore[arg-type]


def test_node_ids_need_a_known_kind() -> None:
    assert validate_node_id("entity-abc123") == "entity-abc123"
    for bad in ["entity-", "node-1", "entity-a b", "chunk-x'}) RETURN 1 //"]:
        with pytest.raises(InvalidIdentifierError):
            validate_node_id(bad)


@pytest.mark.parametrize("version", ["5.26.0", "5.26.30", "5.27.1", "2025.01.0", "2026.10.2"])
def test_supported_server_versions(version: str) -> None:
    check_server_version(version)


@pytest.mark.parametrize("version", ["5.25.1", "5.11.0", "4.4.30", "garbage"])
def test_unsupported_server_versions(version: str) -> None:
    with pytest.raises(UnsupportedServerError):
        check_server_version(version)
