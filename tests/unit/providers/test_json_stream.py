"""The `answer` field of a JSON answer decoded while it streams, and what a reader of the stream sees."""

from __future__ import annotations

import json

import pytest

from driftrag.providers.handles import Handles
from driftrag.providers.json_stream import JsonFieldStream
from driftrag.search.streaming import AnswerDelta, AnswerReset, AnswerStream, reconcile

ANSWER = 'He said "hi" \\ and left.\nThen é, 😀 and a tab\there.'
RAW = 'Sure, here it is:\n```json\n{"score": 80, "answer": ' + json.dumps(ANSWER) + ', "citations": ["S1"]}\n```'


@pytest.mark.parametrize("size", [1, 2, 3, 5, 11, len(RAW)])
def test_the_field_decodes_whatever_the_piece_size(size: int) -> None:
    field = JsonFieldStream("answer")
    decoded = "".join(field.feed(RAW[i : i + size]) for i in range(0, len(RAW), size))
    assert decoded == ANSWER and field.done


def test_nothing_before_the_field_and_nothing_after_it() -> None:
    field = JsonFieldStream("answer")
    assert field.feed('{"answer_note": "x", "score": 1, ') == ""
    assert field.feed('"answer": "ok"') == "ok" and field.feed(', "answer": "again"}') == ""


async def _preview(raw: str, handles: Handles, size: int = 3) -> tuple[str, list]:
    events: list = []
    stream = AnswerStream(events.append)
    preview = stream.json_answer(handles.written_back)
    await preview.begin()
    for i in range(0, len(raw), size):
        await preview.feed(raw[i : i + size])
    return stream.text, events


async def test_handles_are_written_back_and_the_text_stripped_as_the_parser_does() -> None:
    handles = Handles(["chunk-aaa", "entity-bbb"])
    raw = json.dumps({"answer": "  Mara lit the lamp [S1]; Quill [s2] helped [S9].  ", "citations": ["S1"]})
    text, events = await _preview(raw, handles)
    assert text == "Mara lit the lamp [chunk-aaa]; Quill [entity-bbb] helped [S9]."
    assert all(isinstance(e, AnswerDelta) and "[S1]" not in e.text for e in events)
    assert len(events) > 5


async def test_a_new_attempt_voids_what_the_last_one_showed() -> None:
    events: list = []
    stream = AnswerStream(events.append)
    preview = stream.json_answer(lambda text: text)
    await preview.begin()
    await preview.feed('{"answer": "first try')
    await preview.begin()
    await preview.feed('{"answer": "second"}')
    assert stream.text == "second"
    assert [type(e) for e in events] == [AnswerDelta, AnswerReset, AnswerDelta]


def test_reconcile_completes_a_prefix_and_restarts_otherwise() -> None:
    assert reconcile("The Hat", "The Hatter") == [AnswerDelta(text="ter")]
    assert reconcile("The Hatter", "The Hatter") == []
    restarted = reconcile("Nothing", "The Hatter")
    assert isinstance(restarted[0], AnswerReset) and restarted[1] == AnswerDelta(text="The Hatter")
