import pytest

from driftrag.errors import InvalidQueryError
from driftrag.search.question import check_question, question_tokens
from driftrag.settings import Settings

SETTINGS = Settings(_env_file=None, max_question_tokens=20)


def test_a_question_within_the_limit_passes_unchanged() -> None:
    question = " Who keeps the Glass Lighthouse? "
    assert check_question(question, SETTINGS) == question


def test_the_limit_counts_tokens_not_characters() -> None:
    at_limit = " ".join(["house"] * 20)
    assert question_tokens(at_limit) == 20
    assert check_question(at_limit, SETTINGS) == at_limit
    with pytest.raises(InvalidQueryError, match=r"21 tokens, above the limit of 20 \(DRIFTRAG_MAX_QUESTION_TOKENS\)"):
        check_question(at_limit + " house", SETTINGS)


@pytest.mark.parametrize("question", ["", "   \n\t"])
def test_an_empty_question_is_refused(question: str) -> None:
    with pytest.raises(InvalidQueryError, match="empty"):
        check_question(question, SETTINGS)


def test_a_huge_question_is_refused_without_being_tokenised() -> None:
    with pytest.raises(InvalidQueryError, match="50000000 characters"):
        check_question("x" * 50_000_000, SETTINGS)
