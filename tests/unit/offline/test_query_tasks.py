"""The offline extractive query tasks: answers, primer, HyDE, namer and reduce, without any model."""

from __future__ import annotations

import re

import pytest

from driftrag.models.search import Source
from driftrag.offline.nlp import LanguageResources
from driftrag.offline.query.answers import EXTRACTIVE_LABEL, NO_ANSWER
from driftrag.offline.query.scoring import SentenceScorer, bm25_shares, relevance_score, source_prior
from driftrag.offline.query.tasks import offline_query_tasks
from driftrag.offline.query.text import Sentence
from driftrag.search.drift.models import IntermediateAnswer
from driftrag.search.models import SearchContext
from driftrag.search.tasks import (
    ContextAnswerer,
    DriftPrimer,
    DriftReducer,
    HydeWriter,
    QueryEntityNamer,
    QueryTasks,
)
from driftrag.settings import Settings

QUESTION = "Where does the Gryphon take Alice?"
BRACKETED = re.compile(r"\[([^\[\]]+)\]")

SISTER = Source(
    id="chunk-sister",
    kind="chunk",
    text="Alice was beginning to get very tired of sitting by her sister on the bank.\r\n"
    "Once or twice she had peeped into the book her sister was reading.",
)
GRYPHON = Source(
    id="chunk-gryphon",
    kind="chunk",
    text="The Gryphon took Alice by the hand and led her down to the sea shore, where the Mock Turtle "
    "sat sighing on a little ledge of rock. 'This here young lady,' said the Gryphon, 'she wants for "
    "to know your history.'",
)
CROQUET = Source(
    id="chunk-croquet",
    kind="chunk",
    text="The Queen of Hearts shouted 'Off with her head!' across the croquet ground. "
    "The Duchess kept her chin on Alice's shoulder. The King tried to calm the Queen.",
)
MOCK_TURTLE = Source(
    id="entity-mock-turtle",
    kind="entity",
    title="Mock Turtle",
    text="Mock Turtle: a melancholy creature who tells his history, with the Gryphon beside him.",
)


def context(*sources: Source) -> SearchContext:
    return SearchContext(text="", n_tokens=0, budget_tokens=4000, sources=list(sources))


def report(community_id: str, title: str, summary: str, findings: list[tuple[str, str]]) -> Source:
    # The Markdown of `store.graph.render_report`.
    lines = [f"# {title}", "", summary, "", "Rating: 7 — central to the story"]
    for heading, explanation in findings:
        lines += ["", f"## {heading}", explanation]
    return Source(id=community_id, kind="community", title=title, text="\n".join(lines), rating=7.0)


def cited_ids(answer: str) -> set[str]:
    return {i.strip() for group in BRACKETED.findall(answer) for i in group.split(",")}


@pytest.fixture
def tasks(resources: LanguageResources) -> QueryTasks:
    return offline_query_tasks(Settings(), resources)


def test_the_builder_gives_extractive_tasks_for_every_protocol(tasks: QueryTasks) -> None:
    assert tasks.extractive is True
    assert isinstance(tasks.namer, QueryEntityNamer)
    assert isinstance(tasks.answerer, ContextAnswerer)
    assert isinstance(tasks.hyde, HydeWriter)
    assert isinstance(tasks.primer, DriftPrimer)
    assert isinstance(tasks.reducer, DriftReducer)


# --- answerer ---------------------------------------------------------------------------------


async def test_the_most_relevant_sentence_comes_first(tasks: QueryTasks) -> None:
    payload = await tasks.answerer.answer(QUESTION, context(SISTER, GRYPHON, CROQUET), max_follow_ups=3)

    bullets = [line for line in payload.answer.splitlines() if line.startswith("- ")]
    assert bullets[0].startswith("- The Gryphon took Alice by the hand and led her down to the sea shore")
    assert bullets[0].endswith("[chunk-gryphon]")
    assert payload.citations[0] == "chunk-gryphon"
    assert payload.score >= 50


async def test_every_answer_says_it_is_extractive(tasks: QueryTasks) -> None:
    full = context(SISTER, GRYPHON, CROQUET, MOCK_TURTLE)
    reports = context(report("community-1", "Gryphon and Mock Turtle", "The Gryphon leads Alice to the sea.", []))
    answers = [
        (await tasks.answerer.answer(QUESTION, full)).answer,
        (await tasks.answerer.answer(QUESTION, context())).answer,
        (await tasks.primer.prime(QUESTION, reports, max_follow_ups=2)).answer,
        (await tasks.primer.prime(QUESTION, context(), max_follow_ups=2)).answer,
        (await tasks.reducer.reduce(QUESTION, [])).answer,
    ]
    assert all(answer.startswith(f"_{EXTRACTIVE_LABEL}") for answer in answers)


async def test_citations_are_only_ids_of_the_context(tasks: QueryTasks) -> None:
    forged = Source(id="chunk-forged", kind="chunk", text="The Gryphon took Alice away, see [chunk-elsewhere].")
    ctx = context(SISTER, GRYPHON, CROQUET, MOCK_TURTLE, forged)

    payload = await tasks.answerer.answer(QUESTION, ctx, max_follow_ups=3)

    assert payload.citations
    assert set(payload.citations) <= ctx.ids()
    bullets = [line for line in payload.answer.splitlines() if line.startswith("- ")]
    assert {re.search(r"\[([^\[\]]+)\]$", b).group(1) for b in bullets} == set(payload.citations)


async def test_each_sentence_is_one_bullet_line(tasks: QueryTasks) -> None:
    verse = Source(
        id="chunk-verse",
        kind="chunk",
        text="'Will you walk a little faster?' said a whiting to a snail,\n"
        "'There's a porpoise close behind us, and he's treading on my tail.\n"
        "See how eagerly the lobsters and the turtles all advance!",
    )
    payload = await tasks.answerer.answer("Who walks faster with the snail?", context(verse, SISTER))

    note, body = payload.answer.split("\n\n", 1)
    assert note.startswith(f"_{EXTRACTIVE_LABEL}")
    assert all(line.startswith("- ") or line.startswith("The retrieved context") for line in body.splitlines())
    assert any("whiting to a snail, 'There's a porpoise" in line for line in body.splitlines())


async def test_an_empty_context_gets_an_honest_non_answer(tasks: QueryTasks) -> None:
    fragments = Source(id="chunk-title", kind="chunk", text="CHAPTER X.\n\nThe End")
    for ctx in (context(), context(fragments)):
        payload = await tasks.answerer.answer(QUESTION, ctx, max_follow_ups=3)

        assert NO_ANSWER in payload.answer
        assert "does not answer" in payload.answer
        assert payload.score == 0
        assert payload.citations == []
        assert payload.follow_up_queries == []


async def test_follow_ups_leave_out_the_question_names_and_respect_the_cap(tasks: QueryTasks) -> None:
    ctx = context(GRYPHON, CROQUET, MOCK_TURTLE, SISTER)

    capped = await tasks.answerer.answer(QUESTION, ctx, max_follow_ups=2)
    wide = await tasks.answerer.answer(QUESTION, ctx, max_follow_ups=10)
    none = await tasks.answerer.answer(QUESTION, ctx, max_follow_ups=0)

    assert len(capped.follow_up_queries) == 2
    assert capped.follow_up_queries == wide.follow_up_queries[:2]
    assert none.follow_up_queries == []
    subjects = [re.match(r"How is (.+) related to the Gryphon\?$", q).group(1) for q in wide.follow_up_queries]
    assert "the Mock Turtle" in subjects
    assert not {"Alice", "Gryphon", "the Gryphon"} & set(subjects)
    assert len(subjects) == len(set(subjects))


async def test_follow_ups_start_with_the_names_of_the_best_sentences(tasks: QueryTasks) -> None:
    payload = await tasks.answerer.answer(QUESTION, context(SISTER, GRYPHON, CROQUET), max_follow_ups=3)

    assert payload.follow_up_queries[0] == "How is the Mock Turtle related to the Gryphon?"


async def test_answers_are_deterministic(tasks: QueryTasks, resources: LanguageResources) -> None:
    ctx = context(SISTER, GRYPHON, CROQUET, MOCK_TURTLE)
    first = await tasks.answerer.answer(QUESTION, ctx, max_follow_ups=3)
    again = await offline_query_tasks(Settings(), resources).answerer.answer(QUESTION, ctx, max_follow_ups=3)

    assert first == again


async def test_rare_and_name_terms_outweigh_common_ones(resources: LanguageResources) -> None:
    language = resources.resolve("english", QUESTION)
    sentences = [
        Sentence("Alice walked along the path and Alice sat down again.", "chunk-a", 0, 0),
        Sentence("Alice looked at the path; Alice sighed.", "chunk-a", 0, 1),
        Sentence("Then the Gryphon took her to the shore.", "chunk-b", 1, 0, kind_rank=1),
    ]
    scored = await SentenceScorer().rank(QUESTION, sentences, language)

    # "Gryphon" is in one sentence, "Alice" in two: the rarer name decides, despite the source's rank.
    assert scored[0].sentence.source_id == "chunk-b"
    assert all(0.0 <= s.relevance <= 1.0 for s in scored)


def test_bm25_share_is_the_weighted_share_of_the_terms_held() -> None:
    terms = {"gryphon": 2.0, "take": 1.0}
    shares = bm25_shares(terms, [["gryphon", "take"], ["gryphon", "shore"], ["shore", "sea"], ["take", "sea"]])
    assert shares[0] == pytest.approx(1.0)
    assert shares[0] > shares[1] > shares[3] > shares[2] == 0.0


def test_the_prior_favours_the_first_sources_of_each_kind() -> None:
    priors = [source_prior(Sentence("x y z", "chunk", 0, 0, kind_rank=rank)) for rank in range(6)]
    assert priors == sorted(priors, reverse=True)
    assert priors[0] == 1.0 and priors[5] == pytest.approx(0.5)


def test_the_score_rises_with_relevance() -> None:
    scores = [relevance_score(r) for r in (-0.5, 0.0, 0.2, 0.5, 0.9, 1.0, 1.5)]
    assert scores == sorted(scores)
    assert scores[0] == 0 and scores[-1] == 100


# --- primer -----------------------------------------------------------------------------------


async def test_the_primer_answers_from_the_reports_with_their_names_as_follow_ups(tasks: QueryTasks) -> None:
    sea = report(
        "community-sea",
        "The Gryphon, Alice and the Mock Turtle",
        "The Gryphon takes Alice to the sea shore to meet the Mock Turtle, who tells his history.",
        [("The Lobster Quadrille", "The Mock Turtle and the Gryphon dance the Lobster Quadrille for Alice.")],
    )
    court = report(
        "community-court",
        "The Court of the Queen of Hearts",
        "The Queen of Hearts and the King of Hearts hold a trial; the Knave is accused.",
        [("The Trial", "The White Rabbit reads the accusation against the Knave.")],
    )
    reports = context(court, sea, GRYPHON)  # a chunk among the reports is not used by the primer

    payload = await tasks.primer.prime(QUESTION, reports, max_follow_ups=3)

    assert payload.citations[0] == "community-sea"
    assert set(payload.citations) <= {"community-sea", "community-court"}
    assert len(payload.follow_up_queries) == 3
    assert payload.follow_up_queries[0] == "How is the Mock Turtle related to the Gryphon?"
    assert not any(re.match(r"How is (the )?(Gryphon|Alice) ", q) for q in payload.follow_up_queries)


# --- HyDE -------------------------------------------------------------------------------------

TEMPLATE = "\n".join(
    [
        "# The Duchess's Kitchen",
        "",
        "The Duchess, her Cook and the baby share a smoky kitchen.",
        "",
        "Rating: 6 — a turbulent scene",
        "",
        "## Pepper everywhere",
        "The Cook throws pepper and pans.",
        "",
        "## The baby turns into a pig",
        "Alice carries the baby out; it becomes a pig.",
    ]
)


async def test_hyde_is_a_deterministic_report_shaped_expansion(tasks: QueryTasks, resources: LanguageResources) -> None:
    text = await tasks.hyde.hypothetical_report(QUESTION, TEMPLATE)
    again = await offline_query_tasks(Settings(), resources).hyde.hypothetical_report(QUESTION, TEMPLATE)

    assert text == again
    lines = text.splitlines()
    assert lines[0] == f"# {QUESTION}"
    assert "Key terms: Gryphon, Alice, take." in text
    assert [line for line in lines if line.startswith("## ")] == ["## Gryphon", "## Alice"]
    assert "Duchess" not in text and "Rating" not in text


async def test_hyde_without_findings_gives_title_and_summary(tasks: QueryTasks) -> None:
    text = await tasks.hyde.hypothetical_report("What happens at the trial?", "# A title\n\nA summary.")

    assert text == "# What happens at the trial?\n\nWhat happens at the trial? Key terms: trial."


# --- namer ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("question", "names"),
    [
        (QUESTION, ["Gryphon", "Alice"]),
        ("What did the Queen of Hearts say to the March Hare?", ["Queen of Hearts", "March Hare"]),
        ("Why is the Mad Hatter's tea party endless?", ["Mad Hatter"]),
        ("Suddenly, what did the Queen do?", ["Queen"]),
        ("Describe the Cheshire Cat.", ["Cheshire Cat"]),
        ("Gryphon: where does he go?", ["Gryphon"]),
        ("What happens at the trial?", []),
        ("where does the gryphon go?", ["Gryphon"]),
    ],
)
async def test_the_namer_finds_the_names_as_written(tasks: QueryTasks, question: str, names: list[str]) -> None:
    assert await tasks.namer.entity_names(question) == names


# --- reducer ----------------------------------------------------------------------------------


def intermediate(answer_id: str, score: int, bullets: list[str], source_ids: list[str]) -> IntermediateAnswer:
    text = "\n\n".join([f"_{EXTRACTIVE_LABEL}: the most relevant sentences._", "\n".join(bullets)])
    return IntermediateAnswer(
        id=answer_id, depth=0 if answer_id == "primer" else 1, query=QUESTION, answer=text, score=score,
        source_ids=source_ids,
    )  # fmt: skip


async def test_the_reducer_drops_near_duplicates_and_unites_their_citations(tasks: QueryTasks) -> None:
    took = "The Gryphon took Alice by the hand and led her to the Mock Turtle by the sea."
    answers = [
        intermediate("primer", 80, [f"- {took} [community-sea]"], ["community-sea"]),
        intermediate(
            "d1-1",
            70,
            [f"- {took.replace('the sea', 'the sea shore')} [chunk-gryphon, chunk-unknown]", "- Alice sat by her "
             "sister on the bank. [chunk-sister]"],
            ["chunk-gryphon", "chunk-sister"],
        ),
    ]  # fmt: skip

    reduced = await tasks.reducer.reduce(QUESTION, answers)

    bullets = [line for line in reduced.answer.splitlines() if line.startswith("- ")]
    assert sum("Gryphon took Alice" in b for b in bullets) == 1
    assert bullets[0] == f"- {took} [community-sea, chunk-gryphon]"
    assert "chunk-unknown" not in reduced.answer
    assert reduced.citations == [
        i for i in ["community-sea", "chunk-gryphon", "chunk-sister"] if i in cited_ids(reduced.answer)
    ]
    assert cited_ids(reduced.answer) == set(reduced.citations)


async def test_the_reducer_ranks_by_score_and_relevance(tasks: QueryTasks) -> None:
    answers = [
        intermediate("d1-1", 30, ["- The Gryphon took Alice down to the sea shore. [chunk-a]"], ["chunk-a"]),
        intermediate("d1-2", 90, ["- The Gryphon took Alice to meet the Mock Turtle. [chunk-b]"], ["chunk-b"]),
    ]

    reduced = await tasks.reducer.reduce(QUESTION, answers)

    assert reduced.citations[0] == "chunk-b"
    assert reduced.answer.startswith(f"_{EXTRACTIVE_LABEL}")


async def test_the_reducer_without_statements_says_so(tasks: QueryTasks) -> None:
    empty = intermediate("primer", 0, [], [])

    reduced = await tasks.reducer.reduce(QUESTION, [empty])

    assert "no statement" in reduced.answer
    assert reduced.citations == []


# An original short French text: a lighthouse keeper, a fisherwoman and a schoolteacher on an island.
FRENCH_CHUNKS = [
    Source(
        id="chunk-fr-1",
        kind="chunk",
        title="Le phare",
        text=(
            "Chaque soir, Marguerite Lavallée allumait la lanterne du phare de Port-Bleu. "
            "Elle parlait souvent avec Odile Ferrand, la pêcheuse, qui rentrait tard de la baie. "
            "Un jour de tempête, Odile ne revint pas avant la nuit."
        ),
    ),
    Source(
        id="chunk-fr-2",
        kind="chunk",
        title="L'école",
        text=(
            "Le maître d'école, Bastien Roux, rassembla les enfants sur le quai pour guetter la barque. "
            "Marguerite fit tourner la lanterne plus vite que d'habitude, et la barque d'Odile suivit la lumière "
            "jusqu'au port."
        ),
    ),
]


async def test_a_french_context_gets_french_follow_ups(tasks: QueryTasks) -> None:
    payload = await tasks.answerer.answer(
        "Pourquoi Marguerite fit-elle tourner la lanterne plus vite ?", context(*FRENCH_CHUNKS), max_follow_ups=3
    )
    assert payload.follow_up_queries
    assert all(q.startswith("Quel est") and q.endswith(" ?") for q in payload.follow_up_queries), payload
    named = " ".join(payload.follow_up_queries)
    assert "Odile" in named and "Marguerite Lavallée" not in named


async def test_an_english_context_keeps_english_follow_ups(tasks: QueryTasks) -> None:
    payload = await tasks.answerer.answer(QUESTION, context(SISTER, GRYPHON, MOCK_TURTLE), max_follow_ups=2)
    assert payload.follow_up_queries and all(q.startswith(("How is", "What is")) for q in payload.follow_up_queries), (
        payload
    )


async def test_the_primer_alternates_report_names_with_the_neighbourhood_of_the_question(tasks: QueryTasks) -> None:
    sea = report(
        "community-sea",
        "The Gryphon, Alice and the Mock Turtle",
        "The Gryphon takes Alice to the sea shore to meet the Mock Turtle, who tells his history.",
        [("The Lobster Quadrille", "The Mock Turtle and the Gryphon dance the Lobster Quadrille for Alice.")],
    )
    # Graph neighbours the reports never name: the one whose description answers the question comes first.
    neighbourhood = [
        Source(id="entity-hatter", kind="entity", title="Hatter", text="Hatter: sings at the tea party.", origin="x"),
        Source(
            id="entity-cook",
            kind="entity",
            title="Cook",
            text="Cook: the Gryphon takes Alice past the Cook, who sleeps by the sea.",
            origin="neighbour:Gryphon",
        ),
    ]

    payload = await tasks.primer.prime(QUESTION, context(sea), max_follow_ups=4, entities=neighbourhood)
    without = await tasks.primer.prime(QUESTION, context(sea), max_follow_ups=4)

    assert payload.citations == without.citations and payload.answer == without.answer
    follow_ups = payload.follow_up_queries
    assert len(follow_ups) == 4 == len(set(follow_ups))
    assert follow_ups[0] == without.follow_up_queries[0] == "How is the Mock Turtle related to the Gryphon?"
    assert follow_ups[1] == "How is the Cook related to the Gryphon?"
    assert "How is Hatter related to the Gryphon?" in follow_ups
    assert not any("Hatter" in q or "Cook" in q for q in without.follow_up_queries)
