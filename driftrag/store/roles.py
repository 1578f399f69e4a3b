"""The Neo4j implementation of every store role (`driftrag.models.storage`), over one driver."""

from __future__ import annotations

from driftrag.models.storage import Stores
from driftrag.store.documents import DocumentWriter
from driftrag.store.graph import GraphStore
from driftrag.store.graph_search import GraphSearchStore
from driftrag.store.interop import InterchangeReader
from driftrag.store.jobs import JobStore
from driftrag.store.locks import KbLocks
from driftrag.store.neo4j_store import Neo4jStore
from driftrag.store.search import SearchStore
from driftrag.store.views import GraphViewStore


def neo4j_roles(store: Neo4jStore) -> Stores:
    """Every role over `store`; the five graph roles are one `GraphStore`."""
    graph = GraphStore(store)
    return Stores(
        database=store,
        documents=DocumentWriter(store),
        kbs=graph,
        extractions=graph,
        entity_layer=graph,
        communities=graph,
        listing=graph,
        search=SearchStore(store),
        graph_search=GraphSearchStore(store),
        views=GraphViewStore(store),
        locks=KbLocks(store),
        jobs=JobStore(store),
        interchange=InterchangeReader(store),
    )
