"""The table of `driftrag kb list`."""

from __future__ import annotations

from driftrag.cli.kb_listing import KbListing, render_listing
from driftrag.models.graph import KbCounts, KbSummary


def test_an_empty_listing_says_how_to_create_a_kb() -> None:
    assert "driftrag ingest" in render_listing(KbListing(knowledge_bases=[]))


def test_rows_are_aligned_and_unknown_values_are_dashes() -> None:
    listing = KbListing(
        knowledge_bases=[
            KbSummary(
                kb="alice",
                graph_enabled=True,
                stale=False,
                mode="offline",
                embedder="multilingual-e5-small",
                embedding_dimension=384,
                counts=KbCounts(documents=1, chunks=158, entities=80, relationships=300, communities=20, reports=20),
            ),
            KbSummary(
                kb="old",
                graph_enabled=False,
                stale=True,
                mode=None,
                counts=KbCounts(documents=2),
            ),
        ]
    )
    header, alice, old = render_listing(listing).splitlines()
    assert alice.split() == [
        "alice",
        "offline",
        "multilingual-e5-small",
        "384",
        "1",
        "158",
        "80",
        "300",
        "20",
        "20",
        "enabled",
    ]
    assert old.split() == ["old", "-", "-", "-", "2", "0", "0", "0", "0", "0", "disabled,", "stale"]
    # Every column starts where its header does.
    assert alice.index("offline") == header.index("mode") == old.index("-")
    assert alice.index("384") == header.index("dim")


def test_incomplete_and_half_deleted_kbs_are_flagged() -> None:
    listing = KbListing(
        knowledge_bases=[
            KbSummary(
                kb="hurt",
                graph_enabled=True,
                stale=False,
                incomplete=True,
                mode="openai",
                counts=KbCounts(documents=1, failed_chunks=2, placeholder_reports=1),
            ),
            KbSummary(kb="gone", graph_enabled=True, stale=False, deleting=True, mode=None, counts=KbCounts()),
        ]
    )
    _, hurt, gone = render_listing(listing).splitlines()
    assert hurt.endswith("enabled, incomplete")
    assert "deleting" in gone and "delete it again" in gone
