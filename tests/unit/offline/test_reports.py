"""Extractive community reports: the report schema, citations from the context, rating, findings."""

from __future__ import annotations

import pytest

from driftrag.ingestion.reports import build_report_context
from driftrag.ingestion.tasks import CommunityReporter
from driftrag.models.graph import Community, CommunityReport, MergedEntity, MergedRelationship
from driftrag.offline.ingestion.reports import MAX_FINDINGS, OfflineCommunityReporter, community_rating
from driftrag.offline.nlp import LanguageResources

A, B, C = ("chunk-" + letter * 32 for letter in "abc")
CHUNKS = {
    A: "The Gryphon and the Mock Turtle danced the Lobster Quadrille on the beach. Alice watched them.",
    B: "'Will you walk a little faster?' said a whiting to a snail. The Mock Turtle sang it slowly.",
    C: "The Gryphon took Alice by the hand and hurried off to the trial. The King was the judge.",
}


def _entity(n: str, name: str, chunks: list[str]) -> MergedEntity:
    return MergedEntity(
        id=f"entity-{n * 20}",
        name=name,
        normalised_name=name.casefold(),
        type="PERSON",
        descriptions=[f"{name} is in the story."],
        source_chunk_ids=chunks,
    )


ENTITIES = [
    _entity("1", "Gryphon", [A, C]),
    _entity("2", "Mock Turtle", [A, B]),
    _entity("3", "Alice", [A, C]),
    _entity("4", "King", [C]),
]


def _rel(n: str, source: MergedEntity, target: MergedEntity, weight: float, chunks: list[str]) -> MergedRelationship:
    return MergedRelationship(
        id=f"relationship-{n * 20}",
        source_id=source.id,
        target_id=target.id,
        weight=weight,
        pmi=1.5,
        descriptions=[f"{source.name} and {target.name} in one sentence."],
        source_chunk_ids=chunks,
    )


RELATIONSHIPS = [
    _rel("a", ENTITIES[0], ENTITIES[1], 4.0, [A]),
    _rel("b", ENTITIES[0], ENTITIES[2], 2.0, [A, C]),
    _rel("c", ENTITIES[2], ENTITIES[3], 0.5, [C]),
]


def _context(entities=ENTITIES, relationships=RELATIONSHIPS, **kwargs):
    community = Community(
        id="community-0-0",
        level=0,
        entity_ids=sorted(e.id for e in entities),
        relationship_ids=sorted(r.id for r in relationships),
        chunk_ids=sorted(CHUNKS),
    )
    return build_report_context(
        community,
        {e.id: e for e in entities},
        {r.id: r for r in relationships},
        CHUNKS,
        kwargs.pop("subs", {}),
        excerpt_share=0.5,
        **kwargs,
    )


@pytest.fixture
def reporter(resources: LanguageResources) -> OfflineCommunityReporter:
    return OfflineCommunityReporter(resources)


async def test_the_report_has_the_llm_reports_schema_and_cites_only_the_context(reporter) -> None:
    assert isinstance(reporter, CommunityReporter)
    context = _context()
    report = await reporter.report(context)
    assert isinstance(report, CommunityReport)
    assert report.community_id == "community-0-0" and report.level == 0
    # Top entities by degree inside the community: Alice and Gryphon (2; ties by chunks, then name),
    # then Mock Turtle (1, in two chunks) before the King (1, in one).
    assert report.title == "Alice, Gryphon and Mock Turtle"
    assert report.summary.startswith("Community of 4 entities and 3 relationships, mentioned in 3 chunks")
    cited = set(report.citations.entity_ids) | set(report.citations.relationship_ids) | set(report.citations.chunk_ids)
    assert cited and cited <= context.citable_ids()
    assert report.citations.relationship_ids == sorted(r.id for r in RELATIONSHIPS)
    assert report.citations.chunk_ids  # the summary quotes chunk sentences and cites their chunks
    body = report.summary.split(". ", 1)[1]
    assert any(sentence in body for text in CHUNKS.values() for sentence in text.split(". "))
    assert CommunityReport.model_validate_json(report.model_dump_json()) == report


async def test_findings_are_the_strongest_relationships_with_their_evidence(reporter) -> None:
    report = await reporter.report(_context())
    assert [f.summary.split(" appear")[0] for f in report.findings] == [
        "Gryphon and Mock Turtle",
        "Gryphon and Alice",
        "Alice and King",
    ]
    assert report.findings[0].explanation == "Gryphon and Mock Turtle in one sentence."
    assert "PMI 1.50" in report.findings[0].summary and len(report.findings) <= MAX_FINDINGS


def test_the_rating_grows_with_size_density_and_mentions() -> None:
    small, _ = community_rating(2, 1, 2)
    bigger, _ = community_rating(10, 1, 2)
    denser, _ = community_rating(10, 20, 2)
    mentioned, explanation = community_rating(10, 20, 40)
    assert 0 < small < bigger < denser < mentioned < 10
    assert community_rating(1000, 100_000, 10_000)[0] <= 10
    assert "10·x/(x+6)" in explanation and "ln(1+10 entities)" in explanation


async def test_the_rating_is_explained_and_uses_the_whole_community(reporter) -> None:
    report = await reporter.report(_context())
    assert report.rating == community_rating(4, 3, 3)[0]
    assert report.rating_explanation.startswith("Extractive rating, no model")


async def test_a_parent_made_of_sub_reports_takes_names_and_findings_from_them(reporter) -> None:
    child = CommunityReport(
        community_id="community-1-0", level=1, title="Gryphon and Mock Turtle", summary="They dance.", rating=5
    )
    community = Community(id="community-0-0", level=0, child_ids=["community-1-0"], entity_ids=[], chunk_ids=[])
    context = build_report_context(community, {}, {}, {}, {"community-1-0": child}, children=[])
    context = context.model_copy(update={"sub_reports": [child]})
    report = await reporter.report(context)
    assert report.title == "Gryphon and Mock Turtle"
    assert report.findings[0].summary == "Sub-community: Gryphon and Mock Turtle"
    assert report.citations.entity_ids == [] and report.citations.chunk_ids == []


async def test_without_excerpts_the_entity_texts_stand_in(reporter) -> None:
    context = _context().model_copy(update={"chunks": []})
    report = await reporter.report(context)
    assert "is in the story." in report.summary
    assert report.citations.chunk_ids == []
