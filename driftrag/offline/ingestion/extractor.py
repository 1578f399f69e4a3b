"""`OfflineGraphExtractor`: entities and co-occurrence relationships of a chunk, without a model.

Per chunk: the language is resolved (setting or stopword guess), the text is split into paragraphs
(headings skipped) and sentences, name spans are found and resolved (`offline.entities`), then

- each entity gets the type its mentions voted for and, as description, the first sentences of the
  chunk that mention it (at most `DESCRIPTION_SENTENCES`, `DESCRIPTION_WORDS` words; sentences cut
  by the chunk boundaries only when there is nothing else): the description is provenance text,
  not a paraphrase;
- each pair of entities co-occurring in a sentence, or within `window` following sentences, gets a
  relationship whose description is the first sentences where they co-occur and whose strength is
  the number of such co-occurrences in the chunk, capped to 1..10. Its type is `RELATED_TO`, unless a
  sentence names the two side by side with a verb of `offline.relations` between them ("Alice asked
  the Caterpillar"): then the type those verbs give most often in the chunk (the first on a tie), in
  the direction of the text, with the verb as `original_type`. A co-occurrence is
  counted once per *anchor* sentence holding one end while the other end is in the same sentence or
  in one of the `window` sentences after it (paragraph breaks do not stop the window: in dialogue,
  each line is its own paragraph).

The knowledge base's example node names (`ExtractConfig.nodes`) are always recognised; the few-shot
text, custom instructions and relationship tags need a model and are ignored (with a warning).
"""

from __future__ import annotations

import asyncio
import itertools
import re
from collections import Counter, defaultdict
from collections.abc import Sequence

from driftrag.ingestion.extraction import skipped_outcome
from driftrag.models.graph import (
    GENERIC_RELATIONSHIP_TYPE,
    Chunk,
    ExtractConfig,
    ExtractedEntity,
    ExtractedRelationship,
    ExtractionOutcome,
)
from driftrag.offline.entities import PLACE, Mention, SpanDetector, guess_type, lowercase_words, resolve_mentions
from driftrag.offline.lexicon import lexicon_for
from driftrag.offline.nlp import AUTO, LanguageResources, paragraphs, words
from driftrag.offline.relations import TABLES, VerbTable, relation_type

_OPENING = re.compile(r"^[\s'\"‘“«(\[—–-]*")
_ENDINGS = (".", "!", "?", "…", ":", ";", "'", '"', "’", "”", "»", ")")
DESCRIPTION_SENTENCES = 2
DESCRIPTION_WORDS = 60
DEFAULT_WINDOW = 1
MAX_STRENGTH = 10


def excerpt(sentences: Sequence[str], max_words: int = DESCRIPTION_WORDS) -> str:
    """Sentences joined, cut at `max_words` words (an ellipsis marks the cut)."""
    tokens = " ".join(sentences).split()
    if len(tokens) <= max_words:
        return " ".join(tokens)
    return " ".join(tokens[:max_words]) + " …"


class OfflineGraphExtractor:
    """`GraphExtractor` by name spans and sentence co-occurrence (see module docstring)."""

    def __init__(self, resources: LanguageResources, *, language: str = AUTO, window: int = DEFAULT_WINDOW) -> None:
        self._resources = resources
        self._language = language
        self._window = max(0, window)

    async def extract(self, chunk: Chunk, config: ExtractConfig) -> ExtractionOutcome:
        skipped = skipped_outcome(chunk, config)
        if skipped is not None:
            return skipped
        # CPU work of a few milliseconds, but the first call also parses the language model.
        return await asyncio.to_thread(self.extract_text, chunk.id, chunk.text, config)

    def extract_text(self, chunk_id: str, text: str, config: ExtractConfig | None = None) -> ExtractionOutcome:
        config = config or ExtractConfig()
        language = self._resources.resolve(self._language, text)
        lexicon = lexicon_for(language.name)
        detector = SpanDetector(language, lexicon)
        listed = [node.name for node in config.nodes]
        sentences = [s for p in paragraphs(text) if not p.heading for s in language.sentences(p.text)]
        mentions = [m for i, sentence in enumerate(sentences) for m in detector.mentions(sentence, i, listed)]
        mentions = resolve_mentions(mentions, language, lexicon, lowercase_words(sentences))

        by_key: dict[str, list[Mention]] = defaultdict(list)
        for mention in mentions:
            by_key[mention.key].append(mention)
        names = {key: _display_name(group) for key, group in by_key.items()}
        types = {key: guess_type(sum((m.votes for m in group), Counter())) for key, group in by_key.items()}
        partial = _partial_sentences(sentences)
        entities = [
            ExtractedEntity(
                name=names[key],
                type=types[key],
                description=excerpt([sentences[i] for i in _evidence({m.sentence for m in group}, partial)]),
            )
            for key, group in sorted(by_key.items())
        ]
        keys_in = [sorted({m.key for m in mentions if m.sentence == i}) for i in range(len(sentences))]
        typed = _typed_pairs(sentences, mentions, types, TABLES.get(language.name))
        relationships = self._cooccurrences(sentences, keys_in, names, typed)
        return ExtractionOutcome(
            chunk_id=chunk_id,
            entities=entities,
            relationships=relationships,
            warnings=_ignored(config),
        )

    def _cooccurrences(
        self,
        sentences: Sequence[str],
        keys_in: Sequence[Sequence[str]],
        names: dict[str, str],
        typed: dict[tuple[str, str], Counter[tuple[str, str, str, str]]],
    ) -> list[ExtractedRelationship]:
        """Pairs counted once per anchor sentence: one end in it, the other in it or the window after it."""
        counts: Counter[tuple[str, str]] = Counter()
        evidence: dict[tuple[str, str], list[int]] = defaultdict(list)
        for anchor, keys in enumerate(keys_in):
            pairs: dict[tuple[str, str], int] = {}
            for offset in range(self._window + 1):
                if anchor + offset >= len(keys_in):
                    break
                for a in keys:
                    for b in keys_in[anchor + offset]:
                        pair = (min(a, b), max(a, b))
                        if a != b and pair not in pairs:
                            pairs[pair] = offset
            for pair, offset in pairs.items():
                counts[pair] += 1
                if len(evidence[pair]) < DESCRIPTION_SENTENCES:
                    seen = evidence[pair]
                    seen += [i for i in range(anchor, anchor + offset + 1) if i not in seen]
        relationships = []
        for (a, b), count in sorted(counts.items()):
            source, target, type_, verb = a, b, GENERIC_RELATIONSHIP_TYPE, None
            if typed.get((a, b)):
                (type_, source, target, verb), _ = typed[(a, b)].most_common(1)[0]
            relationships.append(
                ExtractedRelationship(
                    source=names[source],
                    target=names[target],
                    type=type_,
                    description=excerpt([sentences[i] for i in evidence[(a, b)]]),
                    strength=min(MAX_STRENGTH, count),
                    original_type=verb,
                )
            )
        return relationships


def _typed_pairs(
    sentences: Sequence[str], mentions: Sequence[Mention], types: dict[str, str], table: VerbTable | None
) -> dict[tuple[str, str], Counter[tuple[str, str, str, str]]]:
    """`{(key, key) in order: Counter((type, source key, target key, verb))}` over the sentences where
    two names stand side by side with a known verb between them (`offline.relations`)."""
    typed: dict[tuple[str, str], Counter[tuple[str, str, str, str]]] = defaultdict(Counter)
    if table is None:
        return typed
    for first, second in itertools.pairwise(mentions):
        if first.sentence != second.sentence or first.key == second.key:
            continue
        sentence = sentences[first.sentence]
        between = [w.casefold() for w in words(sentence[first.end : second.start])]
        before = [w.casefold() for w in words(sentence[: first.start])][-2:]
        found = relation_type(between, table, before=before, target_is_place=types[second.key] == PLACE)
        if found is not None:
            type_, verb = found
            typed[(min(first.key, second.key), max(first.key, second.key))][(type_, first.key, second.key, verb)] += 1
    return typed


def _partial_sentences(sentences: Sequence[str]) -> set[int]:
    """Sentences the chunk boundaries cut: a first one starting in lower case, a last one not ended."""
    partial = set()
    if sentences and _OPENING.sub("", sentences[0])[:1].islower():
        partial.add(0)
    if sentences and not sentences[-1].rstrip().endswith(_ENDINGS):
        partial.add(len(sentences) - 1)
    return partial


def _evidence(indices: set[int], partial: set[int]) -> list[int]:
    """The first `DESCRIPTION_SENTENCES` of `indices`, whole sentences first, in text order."""
    chosen = sorted(indices, key=lambda i: (i in partial, i))[:DESCRIPTION_SENTENCES]
    return sorted(chosen)


def _display_name(group: Sequence[Mention]) -> str:
    forms = Counter(m.name for m in group)
    return min(forms, key=lambda form: (-forms[form], -len(words(form)), form))


def _ignored(config: ExtractConfig) -> list[str]:
    ignored = [
        what
        for what, present in (
            ("few-shot text", config.text.strip()),
            ("custom instructions", config.custom_instructions.strip()),
            ("relationship tags", config.tags),
        )
        if present
    ]
    return [f"offline extraction ignores the extract config's {', '.join(ignored)}"] if ignored else []
