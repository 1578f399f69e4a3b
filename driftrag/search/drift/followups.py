"""Choosing the follow-up queries of a DRIFT round: rank, drop near-duplicates, cap.

The public implementations take follow-ups in the order the model wrote them (or at random), never
compare them with what was already asked, and let their number grow with every answer. Here every
proposed query becomes a node of the follow-up tree with a status, and the choice is deterministic:
1. per answer, proposals ranked by cosine similarity to the question, the first `per_answer` kept;
2. the kept ones of all answers ranked the same way (ties: parent id, then text);
3. a query is a duplicate when its similarity to the question, an earlier search or an already-chosen
   query reaches `dedup_similarity`, when its normalised text repeats one, or when the entities it
   targets (the known entity names it writes that the question does not, `query_targets`) are all
   targeted by one of them already: "How is the Cat related to X?" and "What is the role of the
   Cat?" search the same entity's neighbourhood, whatever their cosine;
4. the first `per_round` survivors are searched, the rest are over the cap.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from driftrag.search.drift.models import FollowUp, FollowUpStatus

_SPACES = re.compile(r"\s+")


@dataclass(frozen=True)
class Proposal:
    """A follow-up query proposed by an intermediate answer, with its embedding and target entities."""

    query: str
    parent_id: str
    vector: list[float]
    targets: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Asked:
    """A query already searched (or the question itself), for duplicate detection."""

    id: str
    query: str
    vector: list[float]
    targets: frozenset[str] = frozenset()


def _mentions(text: str, name: str) -> bool:
    return re.search(rf"(?<!\w){re.escape(name)}(?!\w)", text) is not None


def query_targets(query: str, entity_names: Sequence[str], question: str) -> frozenset[str]:
    """The entity names (casefolded) that `query` writes and the question does not; a name inside a
    longer written name counts once, as the longer one."""
    text, asked = query.casefold(), question.casefold()
    found = {n for n in {name.casefold().strip() for name in entity_names} if n and _mentions(text, n)}
    longest = {n for n in found if not any(n != other and _mentions(other, n) for other in found)}
    return frozenset(n for n in longest if not _mentions(asked, n))


def cosine(left: Sequence[float], right: Sequence[float]) -> float:
    # numpy: a round's proposals x asked queries of 384-1536 floats cost ~25 ms a query in plain Python.
    a, b = np.asarray(left, dtype=np.float64), np.asarray(right, dtype=np.float64)
    if a.shape != b.shape:
        raise ValueError(f"vectors of different lengths: {a.shape[0]} and {b.shape[0]}")
    norms = float(np.linalg.norm(a) * np.linalg.norm(b))
    return float(a @ b) / norms if norms else 0.0


def normalise_query(query: str) -> str:
    return _SPACES.sub(" ", query).strip().rstrip("?.!").casefold()


def select_follow_ups(
    proposals: Sequence[Proposal],
    question_vector: Sequence[float],
    asked: Sequence[Asked],
    *,
    depth: int,
    per_answer: int,
    per_round: int,
    dedup_similarity: float,
) -> list[FollowUp]:
    """Every proposal as a `FollowUp`; those with status `searched` are this round's searches."""
    scored = [(cosine(question_vector, p.vector), p) for p in proposals if p.query.strip()]
    nodes: list[FollowUp] = []
    kept: list[tuple[float, Proposal]] = []
    by_parent: dict[str, list[tuple[float, Proposal]]] = {}
    for relevance, proposal in scored:
        by_parent.setdefault(proposal.parent_id, []).append((relevance, proposal))
    for parent_id in sorted(by_parent):
        ranked = sorted(by_parent[parent_id], key=lambda item: (-item[0], item[1].query))
        kept.extend(ranked[:per_answer])
        nodes.extend(_node(p, r, depth, "over_cap") for r, p in ranked[per_answer:])

    chosen: list[Asked] = []
    for relevance, proposal in sorted(kept, key=lambda item: (-item[0], item[1].parent_id, item[1].query)):
        duplicate_of = _duplicate_of(proposal, [*asked, *chosen], dedup_similarity)
        if duplicate_of is not None:
            nodes.append(_node(proposal, relevance, depth, "duplicate", duplicate_of=duplicate_of))
        elif len(chosen) < per_round:
            node = _node(proposal, relevance, depth, "searched", index=len(chosen) + 1)
            chosen.append(Asked(id=node.id, query=proposal.query, vector=proposal.vector, targets=proposal.targets))
            nodes.append(node)
        else:
            nodes.append(_node(proposal, relevance, depth, "over_cap"))
    return _numbered(nodes, depth)


def _duplicate_of(proposal: Proposal, earlier: Sequence[Asked], threshold: float) -> str | None:
    text = normalise_query(proposal.query)
    for item in earlier:
        if normalise_query(item.query) == text or cosine(proposal.vector, item.vector) >= threshold:
            return item.query
        if proposal.targets and proposal.targets <= item.targets:
            return item.query
    return None


def _node(
    proposal: Proposal,
    relevance: float,
    depth: int,
    status: FollowUpStatus,
    *,
    duplicate_of: str | None = None,
    index: int | None = None,
) -> FollowUp:
    # Searched nodes are numbered in search order (their answers are `d<depth>-<n>`); others later.
    node_id = f"d{depth}-{index}" if index is not None else ""
    return FollowUp(
        id=node_id,
        query=proposal.query,
        depth=depth,
        parent_id=proposal.parent_id,
        relevance=round(relevance, 6),
        status=status,
        duplicate_of=duplicate_of,
        answer_id=node_id or None,
    )


def _numbered(nodes: list[FollowUp], depth: int) -> list[FollowUp]:
    """Searched nodes first (in search order), then the rest, each with a unique id."""
    searched = sorted((n for n in nodes if n.status == "searched"), key=lambda n: int(n.id.rsplit("-", 1)[1]))
    others = sorted((n for n in nodes if n.status != "searched"), key=lambda n: (-n.relevance, n.parent_id, n.query))
    return searched + [
        node.model_copy(update={"id": f"d{depth}-x{number}"}) for number, node in enumerate(others, start=1)
    ]
