"""Extractive summaries: central sentences within a word budget, in source order, no model."""

from __future__ import annotations

from driftrag.ingestion.tasks import DescriptionSummarizer
from driftrag.offline.ingestion.summaries import (
    OfflineDescriptionSummarizer,
    central_sentences,
    centrality,
    shared_words,
    split_sentences,
)
from driftrag.offline.nlp import Language, LanguageResources

SENTENCES = [
    "The lighthouse keeper filled the lamp with oil from the cask.",
    "Someone had poured seawater into the oil cask of the lighthouse.",
    "The gulls were loud that morning.",
    "The spoiled oil drowned the wick of the lighthouse lamp.",
]


def test_the_most_central_sentences_are_chosen_and_kept_in_order(english: Language) -> None:
    scores = centrality(SENTENCES, english)
    assert scores[2] == min(scores)  # the off-topic sentence
    chosen = central_sentences(SENTENCES, english, max_words=25)
    assert 2 not in chosen and chosen == sorted(chosen)
    assert sum(len(SENTENCES[i].split()) for i in chosen) <= 25


def test_at_least_one_sentence_and_ties_go_to_the_first(english: Language) -> None:
    assert central_sentences(SENTENCES, english, max_words=3) == [central_sentences(SENTENCES, english, 3)[0]]
    assert central_sentences(["Same words here.", "Same words here!"], english, max_words=3) == [0]
    assert central_sentences([], english, max_words=10) == []


def test_near_duplicates_are_not_repeated(english: Language) -> None:
    sentences = ["The oil cask was full of seawater.", "The oil cask was full of seawater!", "The wick drowned."]
    assert central_sentences(sentences, english, max_words=100) == [0, 2]


def test_words_every_sentence_shares_do_not_decide(english: Language) -> None:
    sentences = [
        "'Yes,' said Alice.",
        "Alice followed the White Rabbit down the rabbit-hole into a long hall.",
        "Alice found a little golden key on the glass table in the hall.",
    ]
    ignore = shared_words(["Alice"], english)
    assert "alice" in ignore and "said" in ignore
    assert 0 not in central_sentences(sentences, english, max_words=25, ignore=ignore)


def test_split_sentences_dedupes_and_drops_cut_markers(english: Language) -> None:
    texts = ["Pip rang the bell. He rang it for hours …", "Pip rang the bell."]
    assert split_sentences(texts, english) == ["Pip rang the bell.", "He rang it for hours"]


async def test_the_summarizer_needs_no_model(resources: LanguageResources) -> None:
    summarizer = OfflineDescriptionSummarizer(resources, max_words=30)
    assert isinstance(summarizer, DescriptionSummarizer)
    assert await summarizer.summarize("Pip Rackham", ["Only one.", " Only one. "]) == "Only one."
    summary = await summarizer.summarize("Lighthouse", SENTENCES)
    assert summary and len(summary.split()) <= 31
    assert all(sentence in SENTENCES for sentence in english_sentences(resources, summary))


def english_sentences(resources: LanguageResources, text: str) -> list[str]:
    return resources.get("english").load().sentences(text)
