"""Question sets: parsing, validation errors with line numbers, the normalisation rule, evidence checks."""

from __future__ import annotations

from pathlib import Path

import pytest

from driftrag.eval.questions import (
    QuestionItem,
    QuestionSetError,
    dump_questions,
    load_questions,
    missing_evidence,
    normalise,
    parse_questions,
    questions_digest,
    read_corpus,
    select_split,
)


def test_normalise_crlf_cr_and_whitespace_runs() -> None:
    assert normalise("  a\r\nb\rc\n\n\td  e ") == "a b c d e"


def test_optional_fields_default_and_round_trip() -> None:
    items = parse_questions('{"id": "g1", "type": "global", "question": "What are the themes?"}\n\n')
    assert items == [QuestionItem(id="g1", type="global", question="What are the themes?")]
    assert items[0].reference_answer == "" and items[0].evidence == []
    assert parse_questions(dump_questions(items)) == items


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('{"id": "q", "type": "trivia", "question": "?"}', "type"),
        ('{"id": "q", "type": "local", "question": "  "}', "blank"),
        ('{"id": "q", "type": "local", "question": "?", "extra": 1}', "extra"),
        ('{"id": "q", "type": "local", "question": "?", "evidence": [" "]}', "evidence"),
        ('{"id": "q", "type": "local", ', "invalid question"),
    ],
)
def test_invalid_lines_are_refused_with_their_line_number(line: str, message: str) -> None:
    text = '{"id": "ok", "type": "local", "question": "Fine?"}\n' + line + "\n"
    with pytest.raises(QuestionSetError, match=message) as caught:
        parse_questions(text, "set.jsonl")
    assert "set.jsonl:2" in str(caught.value)


def test_repeated_ids_are_refused() -> None:
    line = '{"id": "q1", "type": "local", "question": "?"}\n'
    with pytest.raises(QuestionSetError, match="already used on line 1"):
        parse_questions(line + line)


def test_empty_or_missing_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "empty.jsonl").write_text("\n", encoding="utf-8")
    with pytest.raises(QuestionSetError, match="no questions"):
        load_questions(tmp_path / "empty.jsonl")
    with pytest.raises(QuestionSetError, match="cannot read"):
        load_questions(tmp_path / "absent.jsonl")


def test_corpus_folder_is_read_in_name_order_and_evidence_checked(tmp_path: Path) -> None:
    (tmp_path / "b.md").write_text("second  file\r\nends here", encoding="utf-8")
    (tmp_path / "a.md").write_text("first file", encoding="utf-8")
    (tmp_path / "notes.json").write_text("ignored", encoding="utf-8")
    corpus = read_corpus([tmp_path])
    assert corpus == "first file second file ends here"
    items = [
        QuestionItem(id="x", type="local", question="?", evidence=["file\nsecond", "second file ends"]),
        QuestionItem(id="y", type="local", question="?", evidence=["not in it"]),
    ]
    assert missing_evidence(items, corpus) == [("y", "not in it")]


def test_digest_changes_with_the_set() -> None:
    one = [QuestionItem(id="a", type="local", question="?")]
    two = [QuestionItem(id="a", type="local", question="??")]
    assert questions_digest(one) == questions_digest(list(one))
    assert questions_digest(one) != questions_digest(two)


def test_a_split_selects_its_half_and_a_set_without_one_only_all() -> None:
    items = [
        QuestionItem(id="a", type="local", question="q?", split="tune"),
        QuestionItem(id="b", type="local", question="q?", split="report"),
        QuestionItem(id="c", type="global", question="q?", split="tune"),
    ]
    assert [q.id for q in select_split(items, "tune")] == ["a", "c"]
    assert [q.id for q in select_split(items, "report")] == ["b"]
    assert select_split(items, "all") == items
    unsplit = [QuestionItem(id="a", type="local", question="q?")]
    assert select_split(unsplit, "all") == unsplit
    with pytest.raises(QuestionSetError, match="no question of the set is in the 'tune' split"):
        select_split(unsplit, "tune")
    assert '"split"' not in dump_questions(unsplit)  # sets without a split keep their digest
    assert parse_questions(dump_questions(items))[1].split == "report"
