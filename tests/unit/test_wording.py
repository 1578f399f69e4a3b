from driftrag.wording import plural


def test_one_takes_the_singular_and_other_counts_the_plural() -> None:
    assert plural(1, "document") == "1 document"
    assert plural(0, "document") == "0 documents"
    assert plural(2, "document") == "2 documents"


def test_regular_english_plurals() -> None:
    assert plural(3, "entity") == "3 entities"
    assert plural(2, "community") == "2 communities"
    assert plural(2, "key") == "2 keys"  # a vowel before the y
    assert plural(2, "alias") == "2 aliases"
    assert plural(2, "match") == "2 matches"


def test_an_irregular_plural_is_given() -> None:
    assert plural(2, "chunk extracted offline", "chunks extracted offline") == "2 chunks extracted offline"
    assert plural(1, "chunk extracted offline", "chunks extracted offline") == "1 chunk extracted offline"
