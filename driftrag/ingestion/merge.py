"""Merge per-chunk extractions into one entity/relationship set per knowledge base.

Name normalisation (the merge key, `normalise_name`): Unicode NFKC, quotes and backticks stripped, a
trailing possessive `'s` / `’s` removed, a leading elided `l'` removed, casefolded,
whitespace collapsed, a leading English or French article dropped when a name remains ("The Queen",
"the Queen's" and "Queen" are one entity), and Cyrillic words reduced to a light stem so inflected
forms meet the nominative. The display name is the most frequent original form (ties: alphabetical).

Relationships are directed and keyed by (source id, target id, type), except the generic
`RELATED_TO`, which is symmetric by definition: its endpoints are put in id order, so A->B and B->A
merge. Weights are summed strengths; descriptions are kept in first-seen order, exact duplicates
dropped. An endpoint that no chunk listed as an entity is created with type `UNKNOWN` and the
relationship's description. Outputs are sorted by id so re-runs produce identical data.

Then aliases are folded (`fold_aliases`, rules in `driftrag.ingestion.aliases`): names that are only a
form of address ("Majesty") are dropped, a one-word name that heads exactly one multi-word name
of a compatible type ("Cat" / "Cheshire Cat") is merged into it and listed in its `aliases`, and so
is a titled form into the name it titles ("Old Mattias Crane" / "Mattias Crane"). The
rule sees only the kb's set of names, so the rebuild from chunk checkpoints after a re-ingest or a
delete gives the same result as a fresh ingest of the same chunks.

Each relationship also gets its pointwise mutual information over chunks,
`pmi = log2(n_ab · N / (n_a · n_b))`: N = extracted chunks (neither failed nor skipped), n_ab = the
relationship's source chunks, n_a and n_b = the source chunks of its endpoints. It is positive when
the two ends meet more often than their frequencies predict; the offline refiner normalises weights
with it and graph views draw with it.
"""

from __future__ import annotations

import asyncio
import logging
import re
import unicodedata
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence, Set
from typing import NamedTuple, TypeVar

from driftrag.errors import ModelError
from driftrag.ingestion.aliases import AliasPlan, plan_aliases
from driftrag.ingestion.tasks import DescriptionSummarizer
from driftrag.models.graph import (
    GENERIC_RELATIONSHIP_TYPE,
    UNKNOWN_ENTITY_TYPE,
    ExtractionOutcome,
    MergedEntity,
    MergedRelationship,
    MergeResult,
    pmi,
    stable_hash,
)

log = logging.getLogger(__name__)

_QUOTES = re.compile(r"[\"'`“”‘’«»„]")
_POSSESSIVE = re.compile(r"['’]s$", re.IGNORECASE)
_SPACES = re.compile(r"\s+")
# Leading articles a name may carry in English and French (the prompt asks for names without them).
_ARTICLE = re.compile(r"^(?:the|le|la|les) ")
_ELIDED_ARTICLE = re.compile(r"^[lL]['’](?=\w)")
_CYRILLIC_WORD = re.compile(r"[\u0400-\u04ff-]+")
# Russian nominal case endings, longest first; stripping them makes Анна, Анну, Анны, Анной one key.
_CASE_ENDINGS = tuple(
    sorted(
        (
            "ами",
            "ями",
            "ого",
            "его",
            "ому",
            "ему",
            "ой",
            "ей",
            "ий",
            "ый",
            "ая",
            "яя",
            "ою",
            "ею",
            "ом",
            "ем",
            "ым",
            "им",
            "ам",
            "ям",
            "ах",
            "ях",
            "а",
            "я",
            "у",
            "ю",
            "ы",
            "и",
            "е",
            "о",
            "ь",
        ),
        key=len,
        reverse=True,
    )
)
_MIN_STEM = 3


def normalise_name(name: str) -> str:
    """The merge key of a name: case, quotes, possessive and a leading English or French article
    ignored; Cyrillic words reduced to their stem so that inflected forms (Анну, Анны) meet the
    nominative (Анна)."""
    text = unicodedata.normalize("NFKC", name).strip()
    text = _POSSESSIVE.sub("", text)
    text = _ELIDED_ARTICLE.sub("", text)  # before the quotes go: l'Reine, l’Île
    text = _SPACES.sub(" ", _QUOTES.sub("", text)).strip().casefold()
    article = _ARTICLE.match(text)
    if article and len(text) > article.end():
        text = text[article.end() :]
    return " ".join(_cyrillic_stem(word) for word in text.split(" "))


def _cyrillic_stem(word: str) -> str:
    """A Cyrillic word without its nominal case ending (a light stemmer: names only, stems of at least
    three letters kept); other scripts unchanged."""
    if not _CYRILLIC_WORD.fullmatch(word):
        return word
    for ending in _CASE_ENDINGS:
        if word.endswith(ending) and len(word) - len(ending) >= _MIN_STEM:
            return word[: -len(ending)]
    return word


def entity_id(normalised_name: str) -> str:
    return f"entity-{stable_hash(normalised_name)}"


def relationship_id(source_id: str, target_id: str, type_: str) -> str:
    return f"relationship-{stable_hash(source_id, target_id, type_)}"


def _append_unique(items: list[str], new: Iterable[str]) -> None:
    for item in new:
        if item and item not in items:
            items.append(item)


def _display_name(forms: Counter[str]) -> str:
    return min(forms, key=lambda form: (-forms[form], form))


def _entity_type(types: Counter[str]) -> str:
    known = Counter({t: n for t, n in types.items() if t != UNKNOWN_ENTITY_TYPE})
    return _display_name(known) if known else UNKNOWN_ENTITY_TYPE


def extracted_chunk_count(outcomes: Sequence[ExtractionOutcome]) -> int:
    """N of the PMI: chunks whose extraction neither failed nor was skipped."""
    return sum(1 for outcome in outcomes if not outcome.failed and not outcome.skipped_reason)


def merge_extractions(outcomes: Sequence[ExtractionOutcome]) -> MergeResult:
    """Merge the successful outcomes (failed or skipped ones contribute nothing), aliases folded."""
    return fold_aliases(merge_by_name(outcomes), extracted_chunk_count(outcomes))


def merge_by_name(outcomes: Sequence[ExtractionOutcome]) -> MergeResult:
    """One entity per normalised name, one relationship per (source, target, type)."""
    forms: dict[str, Counter[str]] = defaultdict(Counter)
    types: dict[str, Counter[str]] = defaultdict(Counter)
    descriptions: dict[str, list[str]] = defaultdict(list)
    chunks: dict[str, set[str]] = defaultdict(set)
    listed: set[str] = set()
    rel_fields: dict[tuple[str, str, str], dict] = {}
    warnings: Counter[str] = Counter()

    def touch(key: str, form: str, entity_type: str, description: str, chunk_id: str) -> None:
        forms[key][form.strip()] += 1
        types[key][entity_type] += 1
        _append_unique(descriptions[key], [description])
        chunks[key].add(chunk_id)

    for outcome in (o for o in outcomes if not o.failed):
        for entity in outcome.entities:
            key = normalise_name(entity.name)
            if not key:
                warnings["entities with an empty normalised name"] += 1
                continue
            listed.add(key)
            touch(key, entity.name, entity.type, entity.description, outcome.chunk_id)
        for rel in outcome.relationships:
            source, target = normalise_name(rel.source), normalise_name(rel.target)
            if not source or not target or source == target:
                warnings["relationships with an empty or identical endpoint"] += 1
                continue
            for key, form in ((source, rel.source), (target, rel.target)):
                if key not in listed:
                    touch(key, form, UNKNOWN_ENTITY_TYPE, "", outcome.chunk_id)
            source_id, target_id = entity_id(source), entity_id(target)
            if rel.type == GENERIC_RELATIONSHIP_TYPE and target_id < source_id:
                source_id, target_id = target_id, source_id
            fields = rel_fields.setdefault(
                (source_id, target_id, rel.type),
                {"descriptions": [], "original": set(), "weight": 0.0, "chunks": set(), "ends": (source, target)},
            )
            _append_unique(fields["descriptions"], [rel.description])
            fields["original"].update([rel.original_type] if rel.original_type else [])
            fields["weight"] += rel.strength
            fields["chunks"].add(outcome.chunk_id)

    # Endpoints never listed as entities borrow the descriptions of the relationships naming them.
    for fields in rel_fields.values():
        for key in fields["ends"]:
            if key not in listed:
                _append_unique(descriptions[key], fields["descriptions"])

    entities = [
        MergedEntity(
            id=entity_id(key),
            name=_display_name(forms[key]),
            normalised_name=key,
            type=_entity_type(types[key]),
            descriptions=descriptions[key],
            source_chunk_ids=sorted(chunks[key]),
        )
        for key in forms
    ]
    total_chunks = extracted_chunk_count(outcomes)
    relationships = [
        MergedRelationship(
            id=relationship_id(source_id, target_id, type_),
            source_id=source_id,
            target_id=target_id,
            type=type_,
            original_types=sorted(fields["original"]),
            descriptions=fields["descriptions"],
            weight=fields["weight"],
            source_chunk_ids=sorted(fields["chunks"]),
            pmi=pmi(
                len(fields["chunks"]),
                len(chunks[source_key]),
                len(chunks[target_key]),
                total_chunks,
            ),
        )
        for (source_id, target_id, type_), fields in rel_fields.items()
        for source_key, target_key in [fields["ends"]]
    ]
    return MergeResult(
        entities=sorted(entities, key=lambda e: e.id),
        relationships=sorted(relationships, key=lambda r: r.id),
        warnings=[f"{n} {what} dropped" for what, n in sorted(warnings.items())],
        total_chunks=total_chunks,
    )


def fold_aliases(merged: MergeResult, total_chunks: int, plan: AliasPlan | None = None) -> MergeResult:
    """Apply `aliases.plan_aliases` to a merge: forms of address go with their relationships, and each
    one-word alias or titled form is folded into the name it joins (chunks united, descriptions
    appended, its display name added to `aliases`; titled forms may give the display name, see
    `driftrag.ingestion.aliases`); relationships are re-keyed on the folded ids, those between a
    name and its alias dropped, duplicates merged as in `merge_extractions`, and every PMI recomputed
    from the folded chunk sets (`total_chunks` = N).

    `plan` (default: the plan of the merge's own names) is given by an incremental update, whose merge
    holds part of the kb: a name it folds into may then be missing from the merge; such a folded
    entity and the PMI of its relationships are not computed (the caller keeps the stored ones)."""
    if plan is None:
        plan = plan_aliases({entity.normalised_name: entity.type for entity in merged.entities})
    if not plan.canonical and not plan.address:
        return merged.model_copy(update={"total_chunks": total_chunks})
    new_id: dict[str, str | None] = {}
    for entity in merged.entities:
        key = plan.resolve(entity.normalised_name)
        new_id[entity.id] = None if key is None else entity_id(key)
    warnings: Counter[str] = Counter()
    folded: dict[str, MergedEntity] = {}
    # Display-name candidates of the entities that titled forms join: (chunks, words, name).
    titled_forms: dict[str, list[tuple[int, int, str]]] = {}
    # Names that absorb others first, so each alias finds its target already there.
    for entity in sorted(merged.entities, key=lambda e: (e.normalised_name in plan.canonical, e.id)):
        target = new_id[entity.id]
        if target is None:
            warnings["entities that are only a form of address"] += 1
        elif target == entity.id:
            folded[target] = entity
        elif target in folded:
            if " " in entity.normalised_name:  # a titled form, not a one-word alias
                forms = titled_forms.setdefault(target, [_display_form(folded[target])])
                forms.append(_display_form(entity))
            base = folded[target]
            descriptions = list(base.descriptions)
            _append_unique(descriptions, entity.descriptions)
            folded[target] = base.model_copy(
                update={
                    "type": entity.type if base.type == UNKNOWN_ENTITY_TYPE else base.type,
                    "descriptions": descriptions,
                    "source_chunk_ids": sorted(set(base.source_chunk_ids) | set(entity.source_chunk_ids)),
                    "aliases": sorted({*base.aliases, entity.name, *entity.aliases}),
                }
            )
    relationships: dict[tuple[str, str, str], MergedRelationship] = {}
    for rel in merged.relationships:
        source_id, target_id = new_id.get(rel.source_id, rel.source_id), new_id.get(rel.target_id, rel.target_id)
        if source_id is None or target_id is None:
            warnings["relationships with a form of address"] += 1
            continue
        if source_id == target_id:
            warnings["relationships between a name and its alias"] += 1
            continue
        if rel.type == GENERIC_RELATIONSHIP_TYPE and target_id < source_id:
            source_id, target_id = target_id, source_id
        key = (source_id, target_id, rel.type)
        old = relationships.get(key)
        if old is None:
            relationships[key] = rel.model_copy(
                update={"id": relationship_id(*key), "source_id": source_id, "target_id": target_id}
            )
            continue
        descriptions = list(old.descriptions)
        _append_unique(descriptions, rel.descriptions)
        relationships[key] = old.model_copy(
            update={
                "original_types": sorted(set(old.original_types) | set(rel.original_types)),
                "descriptions": descriptions,
                "weight": old.weight + rel.weight,
                "source_chunk_ids": sorted(set(old.source_chunk_ids) | set(rel.source_chunk_ids)),
            }
        )
    for target, forms in titled_forms.items():
        # The form found in most chunks, the longer on a tie (aliases module docstring).
        name = min(forms, key=lambda form: (-form[0], -form[1], form[2]))[2]
        entity = folded[target]
        others = {*entity.aliases, entity.name} - {name}
        folded[target] = entity.model_copy(update={"name": name, "aliases": sorted(others)})
    chunk_counts = {entity.id: len(entity.source_chunk_ids) for entity in folded.values()}
    rescored = [
        rel.model_copy(
            update={
                "pmi": pmi(
                    len(rel.source_chunk_ids), chunk_counts[rel.source_id], chunk_counts[rel.target_id], total_chunks
                )
                if rel.source_id in chunk_counts and rel.target_id in chunk_counts
                else None
            }
        )
        for rel in relationships.values()
    ]
    return MergeResult(
        entities=sorted(folded.values(), key=lambda e: e.id),
        relationships=sorted(rescored, key=lambda r: r.id),
        warnings=[*merged.warnings, *(f"{n} {what} dropped" for what, n in sorted(warnings.items()))],
        total_chunks=total_chunks,
    )


def _display_form(entity: MergedEntity) -> tuple[int, int, str]:
    return len(entity.source_chunk_ids), len(entity.name.split()), entity.name


def needs_summary(descriptions: Sequence[str]) -> bool:
    """A model summary is only worth a call when there are at least two distinct descriptions."""
    return len({d.strip() for d in descriptions if d.strip()}) >= 2


class StartedSummaries(NamedTuple):
    """What `start_summaries` returns."""

    tasks: dict[str, asyncio.Task[str]]  # the summary of each key
    failed: set[str]  # the keys the model failed on, filled as their tasks end
    all_called: asyncio.Event  # set once every summary has started its model call (or needed none)


def start_summaries(
    items: Sequence[tuple[str, str, Sequence[str]]], summarizer: DescriptionSummarizer, *, concurrency: int = 8
) -> StartedSummaries:
    """Each summary started at once under the concurrency limit, so a caller can go on with an item as
    soon as its own summary exists. A summary the summarizer raised a `ModelError` for is its distinct
    descriptions joined, as in `summarize_all`. The caller awaits or cancels the tasks."""
    limit = asyncio.Semaphore(max(1, concurrency))
    failed: set[str] = set()
    all_called = asyncio.Event()
    waiting = len(items)

    def called() -> None:
        nonlocal waiting
        waiting -= 1
        if not waiting:
            all_called.set()

    async def one(key: str, name: str, descriptions: Sequence[str]) -> str:
        distinct: list[str] = []
        _append_unique(distinct, (d.strip() for d in descriptions))
        if not needs_summary(distinct):
            called()
            return distinct[0] if distinct else ""
        async with limit:
            called()
            try:
                return await summarizer.summarize(name, distinct)
            except ModelError as exc:
                log.warning("summary of %r kept as its descriptions (marked, retried next run): %s", name, exc)
                failed.add(key)
                return " ".join(distinct)

    if not items:
        all_called.set()
    tasks = {key: asyncio.ensure_future(one(key, name, descriptions)) for key, name, descriptions in items}
    return StartedSummaries(tasks, failed, all_called)


async def summarize_all(
    items: Sequence[tuple[str, str, Sequence[str]]], summarizer: DescriptionSummarizer, *, concurrency: int = 8
) -> tuple[dict[str, str], set[str]]:
    """(`{key: summary}`, the keys the model failed on) for `(key, name, descriptions)` items; single
    descriptions are used as is. A summary the summarizer raised a `ModelError` for (the model failed
    after its retries) is its distinct descriptions joined, a placeholder: one summary is not worth the
    run, and the key is returned so the placeholder is marked and asked for again next run."""
    tasks, failed, _ = start_summaries(items, summarizer, concurrency=concurrency)
    try:
        summaries = await asyncio.gather(*tasks.values())
    finally:
        for task in tasks.values():
            task.cancel()  # a failure leaves no summary running (a no-op on finished tasks)
    return dict(zip(tasks, summaries, strict=True)), failed


def summary_items(merged: MergeResult) -> list[tuple[str, str, list[str]]]:
    """Items for `summarize_all`: entities by name, relationships as `source -> target`."""
    names = {e.id: e.name for e in merged.entities}
    items = [(e.id, e.name, e.descriptions) for e in merged.entities]
    items += [
        (r.id, f"{names.get(r.source_id, r.source_id)} -> {names.get(r.target_id, r.target_id)}", r.descriptions)
        for r in merged.relationships
    ]
    return items


def apply_summaries(merged: MergeResult, summaries: dict[str, str], failed: set[str] | None = None) -> MergeResult:
    """`merged` with these summaries; those of `failed` keys are marked placeholders (`summary_failed`)."""
    failed = failed or set()
    return merged.model_copy(
        update={
            "entities": [with_summary(e, summaries, failed) for e in merged.entities],
            "relationships": [with_summary(r, summaries, failed) for r in merged.relationships],
        }
    )


Item = TypeVar("Item", MergedEntity, MergedRelationship)


def with_summary(item: Item, summaries: Mapping[str, str], failed: Set[str]) -> Item:
    """One entity or relationship as `apply_summaries` gives it."""
    return item.model_copy(
        update={"summary": summaries.get(item.id, item.summary), "summary_failed": item.id in failed}
    )
