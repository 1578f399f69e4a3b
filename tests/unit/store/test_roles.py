"""The Neo4j classes implement the storage seam's roles as the protocols declare them."""

from __future__ import annotations

import dataclasses
import inspect
import typing

import pytest

from driftrag.models import storage
from driftrag.models.storage import Stores
from driftrag.settings import Settings
from driftrag.store.neo4j_store import Neo4jStore
from driftrag.store.roles import neo4j_roles

ROLES = typing.get_type_hints(Stores, vars(storage))


def _stores() -> Stores:
    settings = Settings(llm_provider="offline")
    return neo4j_roles(Neo4jStore.from_settings(settings))  # the driver connects on first use, not here


def _methods(protocol: type) -> list[str]:
    return [name for name, value in vars(protocol).items() if callable(value) and not name.startswith("_")]


def test_every_role_field_names_a_protocol_of_the_seam() -> None:
    assert ROLES and all(getattr(role, "_is_protocol", False) for role in ROLES.values())


@pytest.mark.parametrize("field", [field.name for field in dataclasses.fields(Stores)])
def test_each_role_is_implemented_with_the_declared_signatures(field: str) -> None:
    role, implementation = ROLES[field], getattr(_stores(), field)
    assert isinstance(implementation, role)
    for name in _methods(role):
        declared = inspect.signature(getattr(role, name))
        actual = inspect.signature(getattr(type(implementation), name))
        where = f"{type(implementation).__name__}.{name}"
        # Every declared parameter, of the same kind; an implementation may add optional ones.
        assert {n: p.kind for n, p in declared.parameters.items()} == {
            n: p.kind for n, p in actual.parameters.items() if n in declared.parameters
        }, where
        extra = [p for n, p in actual.parameters.items() if n not in declared.parameters]
        assert all(p.default is not inspect.Parameter.empty for p in extra), where
