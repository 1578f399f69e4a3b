"""The query tasks of the offline extractive mode: no model, no network, same typed payloads.

- namer: the proper-noun spans of the question (`text.name_spans`), case kept;
- answerer and primer: the most relevant sentences of the context (`answers`);
- HyDE: a fixed expansion of the question in the template report's shape (below);
- reducer: the best statements of the intermediate answers (`reduce`);
- global map and reduce: the key sentences of community reports, then the best of them (`global_search`).

The answerer, primer and reducer score sentences with `SentenceScorer` (lexical and
source rank; nothing is embedded at query time).

HyDE rule. The template is a community report in Markdown (`# title`, summary, `Rating:` line,
`## finding` sections). The hypothetical report is, with T the question's key terms (its names as
written, then its other content words, at most 8):

    # <the question>

    <the question> Key terms: T1, T2, ….

    ## T1                      one section per template finding, at most one per key term
    <the question>

A template without `##` findings gives the title and summary only. No rating line: its explanation
names the template's own entities, which would pull the search towards that community. The same
question and template always give the same text.
"""

from __future__ import annotations

import itertools

from driftrag.offline.lexicon import lexicon_for
from driftrag.offline.nlp import LanguageResources, words
from driftrag.offline.query.answers import ExtractiveAnswerer, ExtractivePrimer
from driftrag.offline.query.global_search import ExtractiveGlobalMapper, ExtractiveGlobalReducer
from driftrag.offline.query.reduce import ExtractiveReducer
from driftrag.offline.query.scoring import SentenceScorer
from driftrag.offline.query.text import QueryLanguage, key_terms, name_spans
from driftrag.search.tasks import QueryTasks
from driftrag.settings import Settings

MAX_HYDE_SECTIONS = 5


class ExtractiveNamer:
    """`QueryEntityNamer` without a model: the names the question writes with capitals."""

    def __init__(self, *, language: QueryLanguage) -> None:
        self._language = language

    async def entity_names(self, question: str) -> list[str]:
        language = await self._language.of(question)
        names = [span.name for span in name_spans([question], language, question=True)]
        if names or question != question.casefold():
            return names
        # A question typed without any capital ("where does the gryphon go?") still names things: the
        # words after a determiner and the uncommon words, capitalised as names usually are.
        tokens = words(question)
        determiners = lexicon_for(language.name).determiners
        after_determiner = {t.casefold() for before, t in itertools.pairwise(tokens) if before in determiners}
        return [
            term[:1].upper() + term[1:]
            for term in key_terms(question, language)
            if term in after_determiner or term not in language.common_words
        ]


class ExtractiveHyde:
    """`HydeWriter` without a model (the rule is in the module docstring)."""

    def __init__(self, *, language: QueryLanguage) -> None:
        self._language = language

    async def hypothetical_report(self, question: str, template: str) -> str:
        language = await self._language.of(question)
        question = " ".join(question.split())
        terms = key_terms(question, language)
        sections = [line for line in template.splitlines() if line.lstrip().startswith("## ")]
        lines = [f"# {question}", "", f"{question} Key terms: {', '.join(terms)}." if terms else question]
        for term in terms[: min(len(sections), MAX_HYDE_SECTIONS)]:
            lines += ["", f"## {term}", question]
        return "\n".join(lines)


def offline_query_tasks(settings: Settings, resources: LanguageResources | None = None) -> QueryTasks:
    """The extractive tasks of one query; building them does no I/O (language data loads on first use).

    Pass the same `resources` to every query (the composition root keeps one per engine): Punkt models
    take about a second to parse, once per `LanguageResources`, not per query.
    """
    scorer = SentenceScorer()
    language = QueryLanguage(resources or LanguageResources(), settings.offline_language)
    max_tokens = settings.answer_max_tokens
    return QueryTasks(
        namer=ExtractiveNamer(language=language),
        answerer=ExtractiveAnswerer(scorer, language=language, max_tokens=max_tokens),
        hyde=ExtractiveHyde(language=language),
        primer=ExtractivePrimer(scorer, language=language, max_tokens=max_tokens),
        reducer=ExtractiveReducer(scorer, language=language, max_tokens=max_tokens),
        global_mapper=ExtractiveGlobalMapper(scorer, language=language),
        global_reducer=ExtractiveGlobalReducer(language=language, max_tokens=max_tokens),
        extractive=True,
    )
