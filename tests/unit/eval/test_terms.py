"""The answer-based metrics on hand-made cases: stopwords and the question's own words left out, the
set's language guessed (French included), evidence scored by its best source."""

from __future__ import annotations

import pytest

from driftrag.eval.questions import QuestionItem
from driftrag.eval.terms import (
    QuestionTerms,
    WordSets,
    answer_token_recall,
    evidence_token_recall,
    question_terms,
    set_language,
)


def item(question: str, answer: str, *evidence: str, qid: str = "q1") -> QuestionItem:
    return QuestionItem(id=qid, type="local", question=question, reference_answer=answer, evidence=list(evidence))


def test_answer_terms_leave_out_stopwords_and_the_questions_words() -> None:
    english = set_language([item("Who rang the bell in the storm?", "The errand boy rang it, and then he ran home.")])
    assert english.name == "english"
    terms = question_terms(
        item("Who rang the bell in the storm?", "The errand boy rang it, and then he ran home."), english
    )
    # "the", "it", "and", "then", "he" are stopwords; "rang" is the question's own word.
    assert terms.answer == {"errand", "boy", "ran", "home"}


def test_answer_token_recall_counts_words_anywhere_in_the_context_case_folded() -> None:
    words = WordSets()
    terms = QuestionTerms(answer=frozenset({"errand", "boy", "ran", "home"}), evidence=())
    context = [words("An Errand boy came."), words("Then he ran.")]
    assert answer_token_recall(terms, context) == pytest.approx(3 / 4)
    assert answer_token_recall(terms, []) == 0.0
    # Nothing left to look for (a yes/no answer, or one the question already says): undefined, not 0 or 1.
    assert answer_token_recall(QuestionTerms(answer=frozenset(), evidence=()), context) is None


def test_french_stopwords_and_elisions_are_left_out() -> None:
    questions = [
        item(
            "Où le capitaine Nemo emmène-t-il ses prisonniers ?",
            "Il les emmène à bord du Nautilus vers l'île de Crespo.",
            "la forêt de l'île Crespo",
        )
    ]
    french = set_language(questions)
    assert french.name == "french"
    terms = question_terms(questions[0], french)
    # "il", "les", "du", "de" are French stopwords, "à" and the elision "l'" single letters, "emmène" the
    # question's own word (inside "emmène-t-il").
    assert terms.answer == {"bord", "nautilus", "vers", "île", "crespo"}
    assert terms.evidence == (frozenset({"forêt", "île", "crespo"}),)
    context = [WordSets()("Le Nautilus quitta l'Île Crespo.")]
    assert answer_token_recall(terms, context) == pytest.approx(3 / 5)


def test_possessives_and_hyphenated_words_match_their_parts() -> None:
    english = set_language([item("What did the Queen order?", "The executions of the Mock-Turtle's friends.")])
    terms = question_terms(item("What did the Queen order?", "The executions of the Mock-Turtle's friends."), english)
    assert terms.answer == {"executions", "mock", "turtle", "friends"}
    context = [WordSets()("the Mock Turtle sighed; his friends' executions")]
    assert answer_token_recall(terms, context) == 1.0


def test_evidence_token_recall_takes_each_evidence_strings_best_single_source() -> None:
    words = WordSets()
    terms = QuestionTerms(
        answer=frozenset(),
        evidence=(frozenset({"driver", "took", "party", "bay"}), frozenset({"lamp", "dark"})),
    )
    # The first evidence is spread over two sources: its best single source holds 2 of its 4 words.
    context = [words("The driver took a nap."), words("The party reached the bay."), words("The lamp went dark.")]
    assert evidence_token_recall(terms, context) == pytest.approx((2 / 4 + 1) / 2)
    assert evidence_token_recall(QuestionTerms(answer=frozenset(), evidence=()), context) is None
