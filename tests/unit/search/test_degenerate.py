import pytest

from driftrag.prompts.examples import EXAMPLE_HIRE, EXAMPLE_ORG, EXAMPLE_PERSON
from driftrag.providers.structured import describe_keys
from driftrag.search.degenerate import (
    copied_example,
    copied_shape,
    degenerate,
    lone_citation,
    repeated_phrase,
    token_run,
)
from driftrag.search.llm_tasks import AnswerPayload, MapPayload, ReducedAnswer

QUESTION = "Who is the Mad Hatter?"
CLEAN = (
    "The Hatter is a guest of the mad tea-party with the March Hare and the Dormouse [S1]. He was condemned by "
    "the Queen for murdering the time [S2], so it is always six o'clock there; he later appears as a witness "
    "at the trial of the Knave of Hearts [S3]."
)


def test_clean_answers_are_not_degenerate() -> None:
    for answer in (
        CLEAN,
        "The context does not say.",
        "Alice, Alice and the White Rabbit [S1].",
        "It was very, very, very late when the Rabbit ran past [S2].",
        "Population: 1000000 — see the table below.\n\n-----\n\n...",
        "Yes [S1].",
    ):
        assert degenerate(answer, step="answer", question=QUESTION, shown=[CLEAN]) == [], answer


def test_one_phrase_repeated_is_degenerate() -> None:
    answer = "The answer is: The answer is: The answer is: The answer is: The answer is: The answer is:"
    detail = repeated_phrase(answer)
    assert detail is not None and "6 times" in detail and "The answer is:" in detail
    # A long loop after a real start is flagged too.
    looped = "The Hatter is a guest [S1]. " + "He said that he said that " * 8
    assert repeated_phrase(looped) is not None
    assert repeated_phrase(CLEAN) is None


def test_a_run_of_one_token_is_degenerate() -> None:
    copied = f"{EXAMPLE_PERSON} hired the keeper [S2]; " + "[x]" * 40
    assert token_run(copied) == "a run of one token: '[x]' × 40"
    assert token_run("Alice Alice Alice Alice Alice Alice") is not None
    assert token_run("zzzzzzzzzzzzzzzzzzzzzzzz") is not None
    assert token_run("==================== Table ====================") is None
    assert token_run(CLEAN) is None


@pytest.mark.parametrize(
    ("answer", "unit"),
    [
        ("The Queen.12.12.12.12.12.12.12.12...", ".12"),  # SmolLM2's answer under the schema
        ("1.1.1.1.1.", "1."),
        ("The Hatter [S1]. 12, 12, 12, 12, 12, 12", " 12,"),
        ("[S1][S1][S1][S1][S1][S1]", "[S1]"),
        ("Alice- - - -x-x-x-x-x-x-x", "-x"),
        ("7777777777777777777", "7"),
    ],
)
def test_a_run_of_one_short_unit_between_punctuation_is_degenerate(answer: str, unit: str) -> None:
    detail = token_run(answer)
    assert detail is not None and detail.startswith(f"a run of one token: {unit!r}"), detail
    flags = degenerate(answer, step="answer", question=QUESTION, shown=[CLEAN])
    assert flags and {flag.reason for flag in flags} == {"degenerate"}


@pytest.mark.parametrize(
    "answer",
    [
        "Population: 1000000 — see the table below.\n\n-----\n\n...",
        "The treasury held $1,000,000,000,000,000 [S1].",
        "| who | a | b | c | d | e |\n|---|---|---|---|---|---|\n| Alice | 1 | 1 | 1 | 1 | 1 |",
        "Versions 1.1.1 and 2.2.2 ran on 10.10.10.10 [S1][S2][S3][S4][S5][S6][S7].",
        "1. Alice [S1]\n2. The Hatter [S2]\n3. The Queen [S3]\n4. The Knave [S4]\n5. The King [S5]",
        "Zzzzz, said the Dormouse [S2]. He said 'no, no, no!' in 1865, 1866 and 1867 (12:12 on 2024-12-12).",
        "Call 555-5555 ... ... ... or 0.0.0.0.0.0 [S2].",
    ],
)
def test_lists_citations_numbers_and_typography_are_not_a_run(answer: str) -> None:
    assert token_run(answer) is None, answer
    assert degenerate(answer, step="answer", question=QUESTION, shown=[CLEAN]) == [], answer


def test_the_prompts_answer_shape_copied_is_degenerate() -> None:
    for model in (AnswerPayload, ReducedAnswer, MapPayload):
        shape = describe_keys(model)
        assert copied_shape(shape) is not None, shape  # the key line verbatim
        [flag] = degenerate(f"The Hatter [S1]. {shape}", step="answer", question=QUESTION, shown=[CLEAN])
        assert flag.reason == "degenerate" and "description of the answer" in flag.detail
    for fragment in ("The Hatter: string ≤8000", 'the "score": integer 0-100 of it', "points [≤20 × item]"):
        assert copied_shape(fragment) is not None, fragment
    for prose in (
        CLEAN,
        "If x ≤ 5, the string is short; the score is an integer from 0 to 100 [S1].",
        'The sign read "string": a cord, 8000 of them ≤ the cellar [S2].',
        '{"answer": "The Hatter", "score": 80}',
    ):
        assert copied_shape(prose) is None, prose


def test_a_lone_citation_is_degenerate() -> None:
    for answer in ("S1", " [S1] ", "S1, S2.", "[E3][S12]", "chunk-5e1b9c"):
        assert lone_citation(answer) is not None, answer
    for answer in ("S1 is the first source, about the Hatter.", "Yes.", "1865", ""):
        assert lone_citation(answer) is None, answer


def test_the_example_retold_from_a_copied_source_is_degenerate() -> None:
    # A report that copied an earlier prompt's example, as the 0.5B model's reports did.
    copied_report = f"{EXAMPLE_ORG} and its staff in Placeholder City. {EXAMPLE_PERSON} hired {EXAMPLE_HIRE}."
    answer = f"{EXAMPLE_PERSON} runs the {EXAMPLE_ORG} [S1]."
    detail = copied_example(answer, QUESTION, [copied_report, CLEAN])
    assert detail is not None and EXAMPLE_PERSON in detail
    # A corpus that names it once, not a retold example, is answered from.
    assert copied_example(f"{EXAMPLE_PERSON} keeps the light [S1].", QUESTION, [f"{EXAMPLE_PERSON} keeps it."]) is None
    # Named by no source at all: the grounding check's (`ungrounded`), not flagged twice.
    assert copied_example(answer, QUESTION, [CLEAN]) is None
    [flag] = degenerate(answer, step="global reduce", question=QUESTION, shown=[copied_report])
    assert (flag.step, flag.reason) == ("global reduce", "degenerate")
