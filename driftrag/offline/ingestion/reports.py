"""`OfflineCommunityReporter`: community reports by extraction, in the same schema as the LLM's.

From the `CommunityContext` a report needs (and citing only ids it shows):

- title: the community's top entities by degree inside the context (ties: more source chunks,
  then name), e.g. "Gryphon, Mock Turtle and Alice"; a parent whose members were all replaced by
  sub-community reports takes the names from those reports' titles;
- summary: one line of counts, then the most central sentences of the context's chunk excerpts
  (`summaries.central_sentences`, with a bonus for each community entity a sentence names), within
  `REPORT_WORDS`; without excerpts, the entity summaries and sub-report summaries stand in;
- rating, from the community's full size (not the truncated context):
  `rating = 10 · x / (x + 6)`, `x = ln(1 + entities) + ln(1 + relationships) + ln(1 + chunks)`,
  rounded to one decimal. It grows with each count and stays below 10: a pair of entities seen in
  a few chunks rates about 3.5, a community of 30 entities with 100 relationships over 150 chunks
  about 6.9. More relationships for the same members (a denser community) rate higher;
- findings: the strongest relationships of the context (by weight), each with its evidence
  sentences; then sub-community reports if room is left (at most `MAX_FINDINGS`);
- citations: the top entities, the findings' relationships and the chunks whose sentences the
  summary uses, all filtered by `context.citable_ids()`.
"""

from __future__ import annotations

import asyncio
import math
from collections import Counter

from driftrag.models.graph import Citations, CommunityContext, CommunityReport, Finding, MergedEntity
from driftrag.offline.ingestion.summaries import (
    central_sentences,
    cut_words,
    join_sentences,
    shared_words,
    split_sentences,
)
from driftrag.offline.nlp import AUTO, LanguageResources, paragraphs

REPORT_WORDS = 120
MAX_FINDINGS = 5
TITLE_NAMES = 3
CITED_ENTITIES = 10
FINDING_WORDS = 80
NAME_BONUS = 0.1  # added to a sentence's centrality per community entity it names
_END = (".", "!", "?", "…", '"', "'", "’", "”", "»", ")")


def community_rating(entities: int, relationships: int, chunks: int) -> tuple[float, str]:
    """The rating and its explanation (formula in the module docstring)."""
    x = math.log1p(entities) + math.log1p(relationships) + math.log1p(chunks)
    rating = round(10 * x / (x + 6), 1)
    explanation = (
        f"Extractive rating, no model: 10·x/(x+6) with x = ln(1+{entities} entities) + "
        f"ln(1+{relationships} relationships) + ln(1+{chunks} source chunks) = {x:.2f}; "
        "bigger and more densely connected communities, mentioned in more chunks, rate higher."
    )
    return rating, explanation


def _join_names(names: list[str]) -> str:
    if len(names) <= 1:
        return "".join(names)
    return f"{', '.join(names[:-1])} and {names[-1]}"


def _ranked_entities(context: CommunityContext) -> list[MergedEntity]:
    ids = {e.id for e in context.entities}
    degree = Counter(
        end for r in context.relationships if {r.source_id, r.target_id} <= ids for end in (r.source_id, r.target_id)
    )
    return sorted(context.entities, key=lambda e: (-degree[e.id], -len(e.source_chunk_ids), e.name, e.id))


class OfflineCommunityReporter:
    """`CommunityReporter` by extraction (module docstring)."""

    def __init__(self, resources: LanguageResources, *, language: str = AUTO) -> None:
        self._resources = resources
        self._language = language

    async def report(self, community: CommunityContext) -> CommunityReport:
        return await asyncio.to_thread(self.build, community)

    def build(self, context: CommunityContext) -> CommunityReport:
        community = context.community
        ranked = _ranked_entities(context)
        top = [e.name for e in ranked[:TITLE_NAMES]]
        if not top:
            top = [r.title for r in context.sub_reports[:TITLE_NAMES]]
        title = _join_names(top) or f"Community {community.id}"
        summary, summary_chunks = self._summary(context, ranked)
        rating, explanation = community_rating(
            len(community.entity_ids), len(community.relationship_ids), len(community.chunk_ids)
        )
        findings, finding_ids = self._findings(context)
        citable = context.citable_ids()
        cited = [e.id for e in ranked[:CITED_ENTITIES]] + finding_ids + summary_chunks
        cited_set = {i for i in cited if i in citable}
        return CommunityReport(
            community_id=community.id,
            level=community.level,
            title=title,
            summary=summary,
            rating=rating,
            rating_explanation=explanation,
            findings=findings,
            citations=Citations(
                entity_ids=sorted(i for i in cited_set if i.startswith("entity-")),
                relationship_ids=sorted(i for i in cited_set if i.startswith("relationship-")),
                chunk_ids=sorted(i for i in cited_set if i.startswith("chunk-")),
            ),
        )

    def _summary(self, context: CommunityContext, ranked: list[MergedEntity]) -> tuple[str, list[str]]:
        community = context.community
        sample = " ".join(c.text for c in context.chunks) or " ".join(e.summary or "" for e in ranked)
        language = self._resources.resolve(self._language, sample)
        lead = (
            f"Community of {len(community.entity_ids)} entities and {len(community.relationship_ids)} "
            f"relationships, mentioned in {len(community.chunk_ids)} chunks; central entities: "
            f"{_join_names([e.name for e in ranked[:TITLE_NAMES]]) or 'see the sub-communities'}."
        )
        # (sentence, chunk id) from the excerpts; an excerpt's cut-off last sentence is left out.
        candidates: list[tuple[str, str | None]] = []
        for excerpt in context.chunks:
            units = [s for p in paragraphs(excerpt.text) if not p.heading for s in language.sentences(p.text)]
            if units and not units[-1].rstrip().endswith(_END):
                units = units[:-1]
            candidates += [(" ".join(sentence.split()), excerpt.chunk_id) for sentence in units]
        if not candidates:
            texts = [e.summary or " ".join(e.descriptions[:2]) for e in ranked]
            texts += [r.summary for r in context.sub_reports]
            candidates = [(s, None) for s in split_sentences([t for t in texts if t], language)]
        distinct = list(dict.fromkeys(candidates))
        names = [e.name for e in ranked if e.name]

        def bonus(sentence: str) -> float:
            return NAME_BONUS * sum(name in sentence for name in names)

        ignore = shared_words([], language)
        chosen = central_sentences([s for s, _ in distinct], language, REPORT_WORDS, bonus, ignore)
        body = cut_words(join_sentences([distinct[i][0] for i in chosen]), REPORT_WORDS)
        chunk_ids = list(dict.fromkeys(distinct[i][1] for i in chosen if distinct[i][1]))
        return f"{lead} {body}".strip(), chunk_ids

    def _findings(self, context: CommunityContext) -> tuple[list[Finding], list[str]]:
        names = {e.id: e.name for e in context.entities}
        findings: list[Finding] = []
        ids: list[str] = []
        for rel in sorted(context.relationships, key=lambda r: (-r.weight, r.id))[:MAX_FINDINGS]:
            source, target = names.get(rel.source_id, rel.source_id), names.get(rel.target_id, rel.target_id)
            pmi = f", PMI {rel.pmi:.2f}" if rel.pmi is not None else ""
            chunks = len(rel.source_chunk_ids)
            evidence = rel.summary or " ".join(rel.descriptions[:2])
            findings.append(
                Finding(
                    summary=f"{source} and {target} appear together (weight {rel.weight:g}{pmi}, {chunks} chunks)",
                    explanation=cut_words(evidence, FINDING_WORDS),
                )
            )
            ids.append(rel.id)
        for sub in context.sub_reports[: MAX_FINDINGS - len(findings)]:
            findings.append(
                Finding(summary=f"Sub-community: {sub.title}", explanation=cut_words(sub.summary, FINDING_WORDS))
            )
        return findings, ids
