"""Follow-up selection: ranked by relevance, capped per answer and per round, near-duplicates dropped."""

from __future__ import annotations

from driftrag.search.drift.followups import Asked, Proposal, cosine, select_follow_ups

QUESTION = [1.0, 0.0, 0.0]


def proposal(query: str, parent: str, vector: list[float]) -> Proposal:
    return Proposal(query=query, parent_id=parent, vector=vector)


def select(proposals, asked=(), *, per_answer=3, per_round=5, dedup=0.95):
    return select_follow_ups(
        proposals, QUESTION, list(asked), depth=1, per_answer=per_answer, per_round=per_round, dedup_similarity=dedup
    )


def test_searched_follow_ups_are_ordered_by_relevance_to_the_question() -> None:
    nodes = select(
        [
            proposal("far", "primer", [0.0, 1.0, 0.0]),
            proposal("close", "primer", [0.9, 0.1, 0.0]),
            proposal("middle", "primer", [0.5, 0.5, 0.0]),
        ]
    )
    searched = [n for n in nodes if n.status == "searched"]
    assert [n.query for n in searched] == ["close", "middle", "far"]
    assert [n.id for n in searched] == ["d1-1", "d1-2", "d1-3"]
    assert [n.answer_id for n in searched] == ["d1-1", "d1-2", "d1-3"]
    assert searched[0].relevance > searched[1].relevance > searched[2].relevance


def test_each_answer_keeps_at_most_its_cap_and_the_round_its_own() -> None:
    proposals = [proposal(f"a{i}", "d1-1", [1.0, 0.3 * (i + 1), 0.0]) for i in range(4)]
    proposals += [proposal(f"b{i}", "d1-2", [1.0, 0.0, 0.35 * (i + 1)]) for i in range(4)]
    nodes = select(proposals, per_answer=2, per_round=3, dedup=0.9999)
    by_status = {status: [n for n in nodes if n.status == status] for status in ("searched", "over_cap")}
    assert len(by_status["searched"]) == 3
    assert len(by_status["over_cap"]) == 5
    per_parent = {}
    for node in by_status["searched"]:
        per_parent[node.parent_id] = per_parent.get(node.parent_id, 0) + 1
    assert max(per_parent.values()) <= 2
    assert len({n.id for n in nodes}) == len(nodes) == 8


def test_near_duplicates_of_each_other_or_of_earlier_searches_are_dropped() -> None:
    earlier = Asked(id="d1-1", query="Who is the Gryphon?", vector=[0.0, 1.0, 0.0])
    nodes = select(
        [
            proposal("Who is the Mock Turtle?", "d1-2", [0.8, 0.6, 0.0]),
            proposal("who is the mock turtle", "d1-3", [0.0, 0.0, 1.0]),  # same text, other vector
            proposal("Tell me about the Gryphon", "d1-2", [0.01, 1.0, 0.0]),  # close to the earlier search
            proposal("What does the Queen order?", "d1-3", [0.6, 0.0, 0.8]),
        ],
        asked=[earlier],
    )
    status = {n.query: (n.status, n.duplicate_of) for n in nodes}
    assert status["Who is the Mock Turtle?"] == ("searched", None)
    assert status["who is the mock turtle"] == ("duplicate", "Who is the Mock Turtle?")
    assert status["Tell me about the Gryphon"] == ("duplicate", "Who is the Gryphon?")
    assert status["What does the Queen order?"][0] == "searched"


def test_no_proposals_or_a_zero_cap_select_nothing() -> None:
    assert select([]) == []
    nodes = select([proposal("q", "primer", [1.0, 0.0, 0.0])], per_round=0)
    assert [n.status for n in nodes] == ["over_cap"]


def test_selection_is_deterministic_whatever_the_input_order() -> None:
    proposals = [proposal(f"q{i}", f"d1-{i % 3}", [1.0, (i * 7 % 5) / 5, (i * 3 % 4) / 4]) for i in range(9)]
    first = select(proposals, dedup=0.999)
    second = select(list(reversed(proposals)), dedup=0.999)
    assert [(n.id, n.query, n.status) for n in first] == [(n.id, n.query, n.status) for n in second]


def test_cosine_of_zero_vectors_is_zero() -> None:
    assert cosine([0.0, 0.0], [1.0, 0.0]) == 0.0
    assert abs(cosine([1.0, 1.0], [2.0, 2.0]) - 1.0) < 1e-12


def test_follow_ups_targeting_the_same_entity_are_duplicates_whatever_their_cosine() -> None:
    from driftrag.search.drift.followups import query_targets

    names = ["Cat", "Cheshire Cat", "Duchess", "Hatter"]
    question = "Why does the Duchess sneeze?"
    queries = [
        "How is the Cheshire Cat related to the Duchess?",
        "What is the role of the Cheshire Cat?",
        "What is the role of the Hatter?",
    ]
    targets = [query_targets(q, names, question) for q in queries]
    # The longer name wins over the one inside it; the question's own names are no target.
    assert targets == [frozenset({"cheshire cat"}), frozenset({"cheshire cat"}), frozenset({"hatter"})]
    # Orthogonal vectors: cosine alone would keep all three.
    vectors = [[0.9, 0.4, 0.0], [0.8, 0.0, 0.6], [0.7, -0.7, 0.1]]
    proposals = [
        Proposal(query=q, parent_id="primer", vector=v, targets=t)
        for q, v, t in zip(queries, vectors, targets, strict=True)
    ]
    nodes = select(proposals, dedup=0.9999)
    status = {n.query: n.status for n in nodes}
    assert status[queries[0]] == "searched" and status[queries[2]] == "searched"
    assert status[queries[1]] == "duplicate"
    assert next(n for n in nodes if n.query == queries[1]).duplicate_of == queries[0]
    # A query that targets an entity an earlier search already targeted is a duplicate too.
    earlier = Asked(id="d1-1", query="Who is the Hatter?", vector=[0.0, 0.0, 1.0], targets=frozenset({"hatter"}))
    again = select([proposals[2]], [earlier], dedup=0.9999)
    assert again[0].status == "duplicate"
