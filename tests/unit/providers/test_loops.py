"""`LoopWatch`: a looping answer is recognised while it streams; a real answer, however regular, is not."""

from __future__ import annotations

import json

import pytest

from driftrag.providers.loops import LoopWatch


def _fed(text: str, piece: int = 3) -> LoopWatch:
    watch = LoopWatch()
    for start in range(0, len(text), piece):
        if watch.feed(text[start : start + piece]):
            break
    return watch


@pytest.mark.parametrize(
    "looping",
    [
        # A small model's descriptions: the same sentence again and again, across items.
        json.dumps(
            {
                "entities": [
                    {"name": f"E{i}", "type": "PERSON", "description": "She is a very good lady of the harbour."}
                    for i in range(6)
                ]
            }
        ),
        "The answer is: " * 12,
        "The Queen" + ".12" * 40,
        "See the lamp " + "[x]" * 40,
        "who is a small grey woman " * 6,
    ],
)
def test_a_looping_answer_is_stopped(looping: str) -> None:
    watch = _fed(looping)
    assert watch.reason is not None
    assert watch.feed("more") is True  # once looping, always looping


def test_the_stop_comes_early_in_a_long_loop() -> None:
    text = "Pip rang the bell for hours until dawn. " * 100
    watch = LoopWatch()
    fed = 0
    for start in range(0, len(text), 4):
        fed += 4
        if watch.feed(text[start : start + 4]):
            break
    assert fed < len(text) // 20


@pytest.mark.parametrize(
    "clean",
    [
        # A regular extraction: one structure, names repeated as sources and targets, short descriptions.
        json.dumps(
            {
                "entities": [
                    {"name": name, "type": "PERSON", "description": f"{name} keeps the lamp of Cinder Point."}
                    for name in ("Pip Rackham", "Old Mattias Crane", "Wren Halloway", "Silas Gorridge")
                ],
                "relationships": [
                    {"source": "Pip Rackham", "target": t, "type": "MET", "description": "Met", "strength": 5}
                    for t in ("Old Mattias Crane", "Wren Halloway", "Silas Gorridge")
                ],
            },
            indent=2,
        ),
        "| a | b | c |\n" + "|---" * 30 + "|\n| 1 | 2 | 3 |",
        "Answer [S1][S2][S3][S4][S5][S6]. The keeper [S1] rang it [S2]; the captain heard it [S3].",
        "=" * 120 + "\nA heading, then text that says one thing once.",
        "1,000,000 tons; 2,000,000 tons; 3,000,000 tons were shipped.",
    ],
)
def test_a_regular_answer_runs_to_its_end(clean: str) -> None:
    assert _fed(clean).reason is None
