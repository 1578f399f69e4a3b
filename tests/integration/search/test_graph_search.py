"""The bounded one-hop graph search against the real Neo4j, on small purpose-built graphs."""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path

import neo4j
import pytest

from driftrag.errors import (
    BackendUnavailableError,
    GraphDisabledError,
    InvalidIdentifierError,
    InvalidQueryError,
    KnowledgeBaseDeletingError,
    KnowledgeBaseNotFoundError,
)
from driftrag.models.graph import Chunk, SourceDocument
from driftrag.search.graph_search import GraphSearchResponse, graph_search
from driftrag.settings import Settings
from driftrag.store import Neo4jStore
from driftrag.store.cypher import graph as graph_cy
from driftrag.store.documents import DocumentWriter
from driftrag.store.graph import GraphStore
from driftrag.store.graph_search import GraphSearchStore
from tests.support.cli import run_cli_fail_fast
from tests.support.graphs import entity, names, relate, write_graph
from tests.support.ports import free_port

# --- seeds ------------------------------------------------------------------------------------------


async def test_seeds_are_ordered_exact_then_shorter_then_alphabetical(
    store: Neo4jStore, kb: str, neo4j_settings: Settings, schema: None
) -> None:
    names_in_graph = ["White Rabbit", "B Rabbit", "Rabbit hole", "A Rabbit", "Rabbits", "Rabbit", "rabbit", "RABBIT"]
    entities = [entity(name) for name in names_in_graph]
    alice = entity("Alice")
    await write_graph(store, kb, [*entities, alice], [relate(alice, entities[5])])

    response = await graph_search(GraphSearchStore(store), neo4j_settings, kb, "Rabbit")

    assert names(response, seeds=True) == ["Rabbit", "Rabbits", "A Rabbit", "B Rabbit", "Rabbit hole", "White Rabbit"]
    assert [e.seed_rank for e in response.entities if e.is_seed] == [1, 2, 3, 4, 5, 6]
    assert [e.match for e in response.entities] == ["exact"] + ["substring"] * 5 + ["neighbour"]
    assert names(response, seeds=False) == ["Alice"]
    assert response.entities[-1].seed_rank is None
    assert response.truncation.model_dump() == {
        "results_truncated": False,
        "rows_returned": 6,
        "rows_total": 6,
        "rows_total_is_lower_bound": False,
        "candidates_truncated": False,
        "candidates_matched": 6,
        "candidates_matched_is_lower_bound": False,
        "candidates_returned": 6,
        "fields_truncated": False,
        "fields": [],
    }
    [relationship] = response.relationships
    assert (relationship.source_name, relationship.target_name) == ("Alice", "Rabbit")
    assert relationship.source_chunk_ids == ["chunk-1a"]


async def test_matching_is_case_sensitive_and_stays_in_its_kb(
    store: Neo4jStore, kb: str, neo4j_settings: Settings, schema: None
) -> None:
    await write_graph(store, kb, [entity("rabbit stew"), entity("Rabbit"), entity("RABBIT")])
    await write_graph(store, f"{kb}-other", [entity("rabbit pie")])

    assert names(await graph_search(GraphSearchStore(store), neo4j_settings, kb, "rabbit")) == ["rabbit stew"]
    assert names(await graph_search(GraphSearchStore(store), neo4j_settings, kb, "RABBIT")) == ["RABBIT"]
    assert names(await graph_search(GraphSearchStore(store), neo4j_settings, kb, "Stew")) == []


async def test_seeds_are_capped_with_exact_markers(
    store: Neo4jStore, kb: str, neo4j_settings: Settings, schema: None
) -> None:
    await write_graph(store, kb, [entity(f"Card {i:03d}") for i in range(250)])

    response = await graph_search(GraphSearchStore(store), neo4j_settings, kb, "Card")

    assert names(response) == [f"Card {i:03d}" for i in range(200)]
    assert all(e.is_seed and not response.relationships for e in response.entities)
    truncation = response.truncation
    assert (truncation.candidates_matched, truncation.candidates_returned, truncation.candidates_truncated) == (
        250,
        200,
        True,
    )
    assert (truncation.rows_total, truncation.rows_returned, truncation.results_truncated) == (200, 200, False)

    small = await graph_search(GraphSearchStore(store), neo4j_settings, kb, "Card", max_seeds=5)
    assert names(small) == [f"Card {i:03d}" for i in range(5)]
    assert (small.truncation.candidates_matched, small.truncation.candidates_returned) == (250, 5)


async def test_rows_are_capped_keeping_the_best_seeds_neighbourhoods(
    store: Neo4jStore, kb: str, neo4j_settings: Settings, schema: None, caplog: pytest.LogCaptureFixture
) -> None:
    hub, hubble = entity("Hub"), entity("Hubble")
    leaves = [entity(f"Leaf {i:04d}") for i in range(2100)]
    # Weights cycle so that the kept rows must be the heaviest, ties broken by relationship id.
    relationships = [relate(hub, leaf, weight=float(i % 7)) for i, leaf in enumerate(leaves)]
    relationships += [relate(leaves[i], hubble) for i in range(3)]
    started = time.monotonic()
    await write_graph(store, kb, [hub, hubble, *leaves], relationships)
    assert time.monotonic() - started < 60
    # Rows are counted exactly up to the counting cap; one above the 2103 rows keeps the totals exact.
    neo4j_settings = neo4j_settings.model_copy(update={"graph_search_count_cap": 2104})

    with caplog.at_level(logging.WARNING, logger="driftrag.search.graph_search"):
        response = await graph_search(GraphSearchStore(store), neo4j_settings, kb, "Hub")

    assert response.truncation.model_dump(exclude={"fields"}) == {
        "results_truncated": True,
        "rows_returned": 2000,
        "rows_total": 2103,
        "rows_total_is_lower_bound": False,
        "candidates_truncated": True,
        "candidates_matched": 2,
        "candidates_matched_is_lower_bound": False,
        "candidates_returned": 1,
        "fields_truncated": False,
    }
    assert names(response, seeds=True) == ["Hub"]
    assert len(response.relationships) == 2000 and len(response.entities) == 2001
    expected = sorted(relationships[:2100], key=lambda r: (-r.weight, r.id))[:2000]
    assert [r.id for r in response.relationships] == [r.id for r in expected]
    assert "cut at max_rows=2000: 2000 of 2103 rows" in caplog.text

    # A caller cannot ask for more rows than the server's cap...
    with pytest.raises(InvalidQueryError, match="max_rows 2101 is above the server's cap of 2000"):
        await graph_search(GraphSearchStore(store), neo4j_settings, kb, "Hub", max_rows=2101)
    # ...but a server configured with room for one more row brings the second seed in with its heaviest
    # relationship only.
    wider_settings = neo4j_settings.model_copy(update={"graph_search_max_rows": 2101})
    wider = await graph_search(GraphSearchStore(store), wider_settings, kb, "Hub")
    assert names(wider, seeds=True) == ["Hub", "Hubble"]
    assert (wider.truncation.rows_returned, wider.truncation.rows_total) == (2101, 2103)
    assert wider.truncation.candidates_returned == 2 and not wider.truncation.candidates_truncated


async def test_entity_without_relationships_and_shared_relationships_appear_once(
    store: Neo4jStore, kb: str, neo4j_settings: Settings, schema: None
) -> None:
    mad, march, lonely = entity("Mad Hatter"), entity("March Hare"), entity("Lonely Hatter")
    shared = relate(mad, march, weight=3)
    await write_graph(store, kb, [mad, march, lonely], [shared])

    hatters = await graph_search(GraphSearchStore(store), neo4j_settings, kb, "Hatter")
    assert names(hatters, seeds=True) == ["Mad Hatter", "Lonely Hatter"]
    assert [r.id for r in hatters.relationships] == [shared.id]
    assert hatters.truncation.rows_returned == 2

    both = await graph_search(
        GraphSearchStore(store), neo4j_settings, kb, "M"
    )  # both ends are seeds: one relationship, two rows
    assert names(both) == ["Mad Hatter", "March Hare"] and all(e.is_seed for e in both.entities)
    assert [r.id for r in both.relationships] == [shared.id]
    assert (both.truncation.rows_returned, both.truncation.rows_total) == (2, 2)


async def test_a_neighbour_of_several_seeds_in_several_parts_comes_once_at_its_first_row(
    store: Neo4jStore, kb: str, neo4j_settings: Settings, schema: None
) -> None:
    # 3 seeds x 151 rows: the answer comes in parts of 200 rows, and the neighbour they share is each
    # seed's lightest row, so its rows fall in three different parts.
    stars, common = [entity(f"Star {c}") for c in "ABC"], entity("Common")
    planets = {star.id: [entity(f"Planet {star.name[-1]}{i:03d}") for i in range(150)] for star in stars}
    heavy = {star.id: [relate(star, planet, weight=2.0) for planet in planets[star.id]] for star in stars}
    light = [relate(star, common, weight=1.0) for star in stars]
    await write_graph(
        store,
        kb,
        [*stars, common, *(p for star in stars for p in planets[star.id])],
        [*light, *(r for star in stars for r in heavy[star.id])],
    )

    response = await graph_search(GraphSearchStore(store), neo4j_settings, kb, "Star")

    assert names(response, seeds=True) == ["Star A", "Star B", "Star C"]
    expected = [
        r for star, last in zip(stars, light, strict=True) for r in [*sorted(heavy[star.id], key=lambda r: r.id), last]
    ]
    assert [r.id for r in response.relationships] == [r.id for r in expected]
    assert response.truncation.rows_returned == response.truncation.rows_total == 453
    # Neighbours once each, in the order of their first row: Common right after Star A's planets.
    neighbour_ids = [r.target_id for r in expected]
    assert [e.id for e in response.entities if not e.is_seed] == list(dict.fromkeys(neighbour_ids))
    assert [r.target_name for r in response.relationships] == [
        {e.id: e.name for e in response.entities}[target] for target in neighbour_ids
    ]


async def test_a_search_lost_after_its_first_part_raises_and_is_not_answered_half(
    store: Neo4jStore, kb: str, neo4j_settings: Settings, schema: None, flaky_store
) -> None:
    hub = entity("Hub")
    leaves = [entity(f"Leaf {i:03d}") for i in range(450)]
    await write_graph(store, kb, [hub, *leaves], [relate(hub, leaf) for leaf in leaves])
    searches = GraphSearchStore(flaky_store[0])
    flaky = flaky_store[1]

    flaky.break_stream_after(1)  # three parts: the first arrives, then the connection is lost
    with pytest.raises(BackendUnavailableError, match="unreachable"):
        await graph_search(searches, neo4j_settings, kb, "Hub")
    # Lost before its first part, the read is run again, as a managed transaction.
    flaky.fail_next(1)
    whole = await graph_search(searches, neo4j_settings, kb, "Hub")
    assert flaky.injected == 2
    assert whole.truncation.rows_returned == len(whole.relationships) == 450
    assert len({e.id for e in whole.entities}) == len(whole.entities) == 451


async def test_a_search_that_fails_because_its_kb_is_being_deleted_says_so(
    store: Neo4jStore, kb: str, neo4j_settings: Settings, schema: None, flaky_store
) -> None:
    hub = entity("Hub")
    leaves = [entity(f"Leaf {i:03d}") for i in range(450)]
    await write_graph(store, kb, [hub, *leaves], [relate(hub, leaf) for leaf in leaves])
    flaky_store[1].break_stream_after(1)  # three parts: the first arrives, then the read fails
    auth = (neo4j_settings.neo4j_username, neo4j_settings.neo4j_password.get_secret_value())
    with neo4j.GraphDatabase.driver(neo4j_settings.bolt_uri, auth=auth) as other_client:

        def delete_starts(part) -> None:
            # Another client starts deleting the kb between two parts of the answer.
            other_client.execute_query(graph_cy.SET_KB_DELETING, kb=kb)

        with pytest.raises(KnowledgeBaseDeletingError):
            await GraphSearchStore(flaky_store[0]).one_hop(kb, "Hub", max_seeds=5, max_rows=500, on_part=delete_starts)


# --- source validation ------------------------------------------------------------------------------


async def test_deleted_sources_hide_entities_and_relationships(
    store: Neo4jStore, kb: str, neo4j_settings: Settings, schema: None
) -> None:
    queen = entity("Queen", "chunk-1a", "chunk-2a")
    knave = entity("Knave", "chunk-2a")
    king = entity("King", "chunk-1b")
    await write_graph(
        store, kb, [queen, knave, king], [relate(queen, knave, "chunk-1a"), relate(king, queen, "chunk-2a")]
    )
    before = await graph_search(GraphSearchStore(store), neo4j_settings, kb, "Queen")
    assert names(before) == ["Queen", "Knave", "King"]

    await GraphStore(store).delete_document(kb, "document-two")  # no rebuild: the search must check itself

    after = await graph_search(GraphSearchStore(store), neo4j_settings, kb, "Queen")
    assert names(after) == ["Queen"]
    assert after.entities[0].source_chunk_ids == ["chunk-1a"]
    assert after.relationships == []
    assert (await graph_search(GraphSearchStore(store), neo4j_settings, kb, "Knave")).entities == []
    assert names(await graph_search(GraphSearchStore(store), neo4j_settings, kb, "King")) == ["King"]


async def test_disabled_chunk_hides_an_entity_until_enabled_again(
    store: Neo4jStore, kb: str, neo4j_settings: Settings, schema: None
) -> None:
    cat, alice = entity("Cheshire Cat", "chunk-1b"), entity("Alice", "chunk-1a")
    await write_graph(store, kb, [cat, alice], [relate(alice, cat, "chunk-1a")])
    switches = GraphSearchStore(store)

    assert await switches.set_chunks_enabled(kb, ["chunk-1b", "chunk-1b", "chunk-missing"], False) == 1
    assert names(await graph_search(GraphSearchStore(store), neo4j_settings, kb, "Cat")) == []
    assert names(await graph_search(GraphSearchStore(store), neo4j_settings, kb, "Alice")) == [
        "Alice"
    ]  # not as a neighbour either

    assert await switches.set_chunks_enabled(kb, ["chunk-1b"], True) == 1
    assert names(await graph_search(GraphSearchStore(store), neo4j_settings, kb, "Cat")) == ["Cheshire Cat", "Alice"]


async def test_relationship_vanishes_when_its_sources_are_disabled(
    store: Neo4jStore, kb: str, neo4j_settings: Settings, schema: None
) -> None:
    duchess, cook = entity("Duchess", "chunk-1a"), entity("Cook", "chunk-1a")
    await write_graph(store, kb, [duchess, cook], [relate(duchess, cook, "chunk-1b", "chunk-2a")])
    switches = GraphSearchStore(store)

    await switches.set_chunks_enabled(kb, ["chunk-1b"], False)
    partly = await graph_search(GraphSearchStore(store), neo4j_settings, kb, "Duchess")
    assert partly.relationships[0].source_chunk_ids == ["chunk-2a"]

    await switches.set_chunks_enabled(kb, ["chunk-2a"], False)
    gone = await graph_search(GraphSearchStore(store), neo4j_settings, kb, "Duchess")
    assert names(gone) == ["Duchess"] and gone.relationships == []
    assert gone.truncation.rows_returned == 1


async def test_source_ids_are_the_first_valid_ones_also_past_a_disabled_head(
    store: Neo4jStore, kb: str, neo4j_settings: Settings, schema: None
) -> None:
    # 80 sources: longer than the stored head of a list (64 ids), so all three ways of reading them run.
    chunk_ids = [f"chunk-long{i:03d}" for i in range(80)]
    document = SourceDocument(id="document-long", kb=kb, title="long", text="x", content_hash="long")
    chunks = [
        Chunk(id=chunk_id, document_id=document.id, index=i, text=chunk_id, n_tokens=1, start_char=0, end_char=1)
        for i, chunk_id in enumerate(chunk_ids)
    ]
    await DocumentWriter(store).upsert_document(document, chunks)
    hub, leaf = entity("Hub", *chunk_ids), entity("Leaf", chunk_ids[-1])
    link = relate(hub, leaf, *chunk_ids)
    await GraphStore(store).replace_entity_layer(kb, [hub, leaf], [link], total_chunks=0)
    settings = neo4j_settings.model_copy(update={"graph_search_max_source_ids": 3})
    switches = GraphSearchStore(store)

    async def shown() -> tuple[list[str], list[str], list[tuple[str, int]]]:
        response = await graph_search(switches, settings, kb, "Hub")
        cuts = [(f.owner_id, f.original_length) for f in response.truncation.fields if f.field == "source_chunk_ids"]
        return response.entities[0].source_chunk_ids, response.relationships[0].source_chunk_ids, cuts

    every_cut = [(hub.id, 80), (link.id, 80)]
    assert await shown() == (chunk_ids[:3], chunk_ids[:3], every_cut)  # all valid: the stored head
    await switches.set_chunks_enabled(kb, chunk_ids[:2], False)
    assert await shown() == (chunk_ids[2:5], chunk_ids[2:5], every_cut)  # the head, checked
    await switches.set_chunks_enabled(kb, chunk_ids[:70], False)
    assert await shown() == (chunk_ids[70:73], chunk_ids[70:73], every_cut)  # past the head: the whole list
    await switches.set_chunks_enabled(kb, chunk_ids[:78], False)
    two_left = chunk_ids[78:]  # fewer valid ids than shown: nothing is cut from what is valid
    assert await shown() == (two_left, two_left, [])


async def test_chunk_switch_refuses_bad_ids_and_unknown_kbs(store: Neo4jStore, kb: str, schema: None) -> None:
    await write_graph(store, kb, [entity("Dodo")])
    switches = GraphSearchStore(store)
    for bad in (["chunk-1a'}) DETACH DELETE c //"], ["entity-abc"], [""]):
        with pytest.raises(InvalidIdentifierError):
            await switches.set_chunks_enabled(kb, bad, False)
    with pytest.raises(KnowledgeBaseNotFoundError):
        await switches.set_chunks_enabled(f"{kb}-absent", ["chunk-1a"], False)
    assert await switches.set_chunks_enabled(kb, [], False) == 0


# --- hostile input and field bounds ------------------------------------------------------------------

ODD_NAME = 'O\'Brien "the" `tick` .*[](){}$x\\ Straße 🐇'
HOSTILE_QUERIES = [
    "'",
    '"',
    "`",
    "\\",
    ".*",
    "[a-z]+",
    "(",
    ")",
    "}) MATCH (n) DETACH DELETE n //",
    "$kb",
    "x" * 10_240,
]


@pytest.mark.parametrize("query", HOSTILE_QUERIES)
async def test_hostile_queries_are_plain_substrings(
    query: str, store: Neo4jStore, kb: str, neo4j_settings: Settings, schema: None
) -> None:
    await write_graph(store, kb, [entity(ODD_NAME), entity("Plain")])

    response = await graph_search(GraphSearchStore(store), neo4j_settings, kb, query)

    assert names(response) == ([ODD_NAME] if query in ODD_NAME else [])
    assert response.query == query
    assert names(await graph_search(GraphSearchStore(store), neo4j_settings, kb, "Plain")) == [
        "Plain"
    ]  # nothing was touched


async def test_unicode_and_literal_regex_characters_match(
    store: Neo4jStore, kb: str, neo4j_settings: Settings, schema: None
) -> None:
    await write_graph(store, kb, [entity(ODD_NAME), entity("Plain")])
    for query in ("🐇", "Straße", ".*[](){}", "`tick`", 'O\'Brien "the"'):
        assert names(await graph_search(GraphSearchStore(store), neo4j_settings, kb, query)) == [ODD_NAME]


@pytest.mark.parametrize("query", ["", "   ", "\n\t", "x" * 16_385])
async def test_blank_or_huge_queries_fail_validation_before_any_query(query: str, tmp_path: Path) -> None:
    settings = Settings(neo4j_uri=f"bolt://127.0.0.1:{free_port()}", home=tmp_path)
    async with Neo4jStore.from_settings(settings) as unreachable:
        with pytest.raises(InvalidQueryError, match="query: "):
            await graph_search(GraphSearchStore(unreachable), settings, "kb", query)
        with pytest.raises(InvalidIdentifierError):
            await graph_search(GraphSearchStore(unreachable), settings, "bad kb'", "Alice")


async def test_long_fields_are_cut_with_markers(
    store: Neo4jStore, kb: str, neo4j_settings: Settings, schema: None
) -> None:
    descriptions = ["d" * 50, "short", "e" * 21]
    wordy = entity("Wordy", "chunk-1a", "chunk-1b", "chunk-2a", descriptions=descriptions)
    await write_graph(store, kb, [wordy])
    # Source ids have their own cap, separate from the attribute lists'.
    settings = neo4j_settings.model_copy(
        update={"graph_search_max_field_chars": 20, "graph_search_max_list_items": 2, "graph_search_max_source_ids": 1}
    )

    response = await graph_search(GraphSearchStore(store), settings, kb, "Wordy")

    [found] = response.entities
    assert found.description == "d" * 20
    assert found.attributes == ["d" * 20, "short"]
    assert found.source_chunk_ids == ["chunk-1a"]
    markers = [(f.owner_id, f.field, f.original_length, f.returned_length) for f in response.truncation.fields]
    assert markers == [
        (wordy.id, "description", 50, 20),
        (wordy.id, "attributes", 3, 2),
        (wordy.id, "attributes[0]", 50, 20),
        (wordy.id, "source_chunk_ids", 3, 1),
    ]
    assert response.truncation.fields_truncated and not response.truncation.results_truncated


# --- errors distinct from "no match" -----------------------------------------------------------------


async def test_empty_result_unknown_kb_and_disabled_graph_are_distinct(
    store: Neo4jStore, kb: str, neo4j_settings: Settings, schema: None
) -> None:
    await write_graph(store, kb, [entity("Dormouse")])
    empty = await graph_search(GraphSearchStore(store), neo4j_settings, kb, "Gryphon")
    assert empty.entities == [] and empty.truncation.candidates_matched == 0

    with pytest.raises(KnowledgeBaseNotFoundError):
        await graph_search(GraphSearchStore(store), neo4j_settings, f"{kb}-absent", "Dormouse")

    switches = GraphSearchStore(store)
    await switches.set_graph_enabled(kb, False)
    with pytest.raises(GraphDisabledError) as raised:
        await graph_search(GraphSearchStore(store), neo4j_settings, kb, "Dormouse")
    assert isinstance(raised.value, BackendUnavailableError)
    assert f"driftrag graph-enable --kb {kb}" in str(raised.value)

    await switches.set_graph_enabled(kb, True)
    assert names(await graph_search(GraphSearchStore(store), neo4j_settings, kb, "Dormouse")) == ["Dormouse"]
    with pytest.raises(KnowledgeBaseNotFoundError):
        await switches.set_graph_enabled(f"{kb}-absent", False)


async def test_unreachable_neo4j_raises_instead_of_answering_empty(tmp_path: Path) -> None:
    settings = Settings(neo4j_uri=f"bolt://127.0.0.1:{free_port()}", home=tmp_path)
    # The driver's managed transactions retry for 30 s by default; no retry keeps the test fast.
    driver = neo4j.AsyncGraphDatabase.driver(settings.bolt_uri, auth=("neo4j", "x"), max_transaction_retry_time=0)
    async with Neo4jStore(settings, driver) as unreachable:
        with pytest.raises(BackendUnavailableError):
            await graph_search(GraphSearchStore(unreachable), settings, "kb", "Alice")


# --- CLI ---------------------------------------------------------------------------------------------


async def test_cli_prints_json_and_switches_chunks(
    store: Neo4jStore, kb: str, neo4j_uri: str, tmp_path: Path, schema: None
) -> None:
    cat, alice = entity("Cheshire Cat", "chunk-1b"), entity("Alice", "chunk-1a")
    await write_graph(store, kb, [cat, alice], [relate(alice, cat, "chunk-1a")])

    found = run_cli_fail_fast("graph-search", "Cat", "--kb", kb, "--max-rows", "5", uri=neo4j_uri, home=tmp_path)
    assert found.returncode == 0, found.stderr
    response = GraphSearchResponse.model_validate(json.loads(found.stdout))
    assert names(response) == ["Cheshire Cat", "Alice"] and response.truncation.rows_returned == 1

    disabled = run_cli_fail_fast(
        "chunk", "disable", "chunk-1b", "chunk-9z", "--kb", kb, "--json", uri=neo4j_uri, home=tmp_path
    )
    assert disabled.returncode == 0, disabled.stderr
    assert json.loads(disabled.stdout) == {"kb": kb, "enabled": False, "requested": 2, "matched": 1}
    hidden = run_cli_fail_fast("graph-search", "Cat", "--kb", kb, uri=neo4j_uri, home=tmp_path)
    assert json.loads(hidden.stdout)["entities"] == []
    enabled = run_cli_fail_fast("chunk", "enable", "chunk-1b", "--kb", kb, uri=neo4j_uri, home=tmp_path)
    assert enabled.returncode == 0 and "enabled 1 chunk in" in enabled.stdout

    graph_off = run_cli_fail_fast("graph-disable", "--kb", kb, uri=neo4j_uri, home=tmp_path)
    assert graph_off.returncode == 0, graph_off.stderr
    refused = run_cli_fail_fast("graph-search", "Cat", "--kb", kb, uri=neo4j_uri, home=tmp_path)
    assert refused.returncode == 3 and "graph-enable" in refused.stderr
    assert run_cli_fail_fast("graph-enable", "--kb", kb, uri=neo4j_uri, home=tmp_path).returncode == 0

    blank = run_cli_fail_fast("graph-search", "  ", "--kb", kb, uri=neo4j_uri, home=tmp_path)
    assert blank.returncode == 2 and "non-whitespace" in blank.stderr
    unknown = run_cli_fail_fast("graph-search", "Cat", "--kb", f"{kb}-absent", uri=neo4j_uri, home=tmp_path)
    assert unknown.returncode == 1 and "does not exist" in unknown.stderr


def test_cli_exits_3_when_neo4j_is_unreachable(tmp_path: Path) -> None:
    result = run_cli_fail_fast(
        "graph-search", "Alice", "--kb", "kb", uri=f"bolt://127.0.0.1:{free_port()}", home=tmp_path
    )
    assert result.returncode == 3
    assert "unreachable" in result.stderr and result.stdout == ""
