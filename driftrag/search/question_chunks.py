"""The question's own chunk search, which every graph mode starts from: by meaning and by words.

Two rankings of the kb's enabled chunks: the question embedding's nearest (the vector index, basic
search's ranking taken `QUESTION_DEPTH` times deeper) and the best BM25 matches of the question's words
(the chunk full-text index). Embeddings of a small model miss what the words of a question name, most
in languages other than English, and words miss paraphrase: each finds evidence the other ranks far
down. Both enter a mode's rank fusion as the question's own rankings, at the weights of
`driftrag.search.ranking`, so what the graph adds competes with them instead of replacing them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass

from driftrag.models.search import Source
from driftrag.models.seen_rows import SeenRows
from driftrag.models.storage import SearchStorage
from driftrag.search.context import unique_sources
from driftrag.search.ranking import QUESTION_DEPTH, QUESTION_WEIGHT, QUESTION_WORDS_WEIGHT, Ranking
from driftrag.settings import Settings


@dataclass(frozen=True)
class QuestionChunks:
    """The question's chunks by vector similarity and by words, each best first."""

    by_vector: Sequence[Source]
    by_words: Sequence[Source]

    @property
    def sources(self) -> list[Source]:
        """Each chunk once: the vector ranking's, then the chunks only the words found."""
        return unique_sources([*self.by_vector, *self.by_words])

    def rankings(self) -> list[Ranking]:
        return [
            Ranking("question", QUESTION_WEIGHT, [s.id for s in self.by_vector]),
            Ranking("question-words", QUESTION_WORDS_WEIGHT, [s.id for s in self.by_words]),
        ]


def question_depth(settings: Settings) -> int:
    """How many chunks each of the question's two searches returns."""
    return QUESTION_DEPTH * settings.basic_top_k


async def search_question_chunks(
    store: SearchStorage,
    kb: str,
    question: str,
    vector: Sequence[float],
    settings: Settings,
    *,
    seen: SeenRows | None = None,
) -> QuestionChunks:
    """Both searches of `question` (embedded as `vector`) at once."""
    depth = question_depth(settings)
    by_vector, by_words = await asyncio.gather(
        store.search_chunks(kb, vector, depth, seen=seen),
        store.search_chunks_text(kb, question, depth, seen=seen),
    )
    return QuestionChunks(by_vector, by_words)
