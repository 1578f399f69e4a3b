"""`driftrag eval import`: each format on a small hand-made fixture in the source's layout, and the refusal of a
malformed file, named, with exit code 1 and no traceback."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from driftrag.cli import app
from driftrag.eval.importers import BenchmarkFormatError, import_benchmark
from driftrag.eval.questions import load_questions, missing_evidence, read_corpus

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
MULTIHOP = FIXTURES / "multihop_rag"
FAIRYTALE = FIXTURES / "fairytaleqa"


def invoke(*args: str):
    return CliRunner().invoke(app, ["eval", "import", *args])


def test_multihop_rag_keeps_ids_and_types_and_leaves_out_null_queries(tmp_path: Path) -> None:
    summary = import_benchmark("multihop-rag", MULTIHOP, tmp_path / "out")
    items = load_questions(tmp_path / "out" / "questions.jsonl")
    assert [q.id for q in items] == ["mhr-0000-inference", "mhr-0001-temporal", "mhr-0003-comparison"]
    assert {q.type for q in items} == {"multi-hop"}
    assert [q.split for q in items] == ["tune", "report", "tune"]
    assert items[1].reference_answer == "before" and len(items[0].evidence) == 2
    assert summary.skipped == {"null_query": 1}
    assert sorted(p.name for p in (tmp_path / "out" / "corpus").iterdir()) == ["0000.md", "0001.md", "0002.md"]
    article = (tmp_path / "out" / "corpus" / "0002.md").read_text(encoding="utf-8")
    assert article.startswith("# Storm closes Blackwater Quay for two days\n\nsource: The Coastal Ledger; published at")
    assert summary.evidence == summary.evidence_verbatim == 6
    assert missing_evidence(items, read_corpus([tmp_path / "out" / "corpus"])) == []
    # The fixture is not the published release: its checksums are recorded, and differ from the pinned ones.
    assert [source.is_pinned_release for source in summary.sources] == [False, False]
    assert [source.path for source in summary.sources] == ["corpus.json", "MultiHopRAG.json"]
    assert json.loads((tmp_path / "out" / "import.json").read_text(encoding="utf-8"))["questions"] == 3


def test_multihop_rag_is_found_under_the_repository_root(tmp_path: Path) -> None:
    shutil.copytree(MULTIHOP, tmp_path / "MultiHop-RAG" / "dataset")
    summary = import_benchmark("multihop-rag", tmp_path / "MultiHop-RAG", tmp_path / "out")
    assert summary.questions == 3 and summary.sources[1].path == "dataset/MultiHopRAG.json"


def test_fairytaleqa_maps_local_and_summary_and_quotes_the_sections(tmp_path: Path) -> None:
    summary = import_benchmark("fairytaleqa", FAIRYTALE, tmp_path / "out")
    items = load_questions(tmp_path / "out" / "questions.jsonl")
    assert [(q.id, q.type, q.split) for q in items] == [
        ("ftqa-the-copper-kettle-1", "local", "tune"),
        ("ftqa-the-copper-kettle-2", "local", "report"),
        ("ftqa-the-copper-kettle-3", "multi-hop", "tune"),
        ("ftqa-the-copper-kettle-4", "multi-hop", "report"),
    ]
    assert items[2].reference_answer == "gold coins" and len(items[3].evidence) == 3
    assert items[1].evidence[0].startswith("An old woman stood in the snow.")
    story = tmp_path / "out" / "corpus" / "sample-fairybook--the-copper-kettle.md"
    assert story.read_text(encoding="utf-8").startswith("# The copper kettle\n\nOnce there was a poor tinker")
    assert missing_evidence(items, read_corpus([tmp_path / "out" / "corpus"])) == []
    assert summary.evidence == summary.evidence_verbatim == 7 and summary.by_type == {"local": 2, "multi-hop": 2}


def test_fairytaleqa_keeps_both_texts_of_a_repeated_section_number(tmp_path: Path) -> None:
    # The published story of "The Remarkable Rocket" numbers two sections 5.
    story = 'section,text\n1,"The kettle was copper."\n2,"An old woman came."\n2,"She tapped it thrice."\n'
    questions = HEADER + '1,summary,"1,2",action,,What happened?,explicit,she tapped it\n'
    root = _broken_fairytale(tmp_path, story, questions)
    import_benchmark("fairytaleqa", root, tmp_path / "out")
    (item,) = load_questions(tmp_path / "out" / "questions.jsonl")
    assert item.evidence == ["The kettle was copper.", "An old woman came.", "She tapped it thrice."]
    text = (tmp_path / "out" / "corpus" / "sample-fairybook--the-copper-kettle.md").read_text(encoding="utf-8")
    assert text.endswith("An old woman came.\n\nShe tapped it thrice.\n")


def test_the_command_writes_the_set_and_says_what_it_did(tmp_path: Path) -> None:
    result = invoke("multihop-rag", str(MULTIHOP), "--out", str(tmp_path / "out"))
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "wrote 3 questions (3 multi-hop)" in text and "left out: 1 question of type null_query" in text
    assert "not the release the importer was built on" in text


def _broken_multihop(tmp_path: Path, queries: str) -> Path:
    folder = tmp_path / "dataset"
    shutil.copytree(MULTIHOP, folder)
    (folder / "MultiHopRAG.json").write_text(queries, encoding="utf-8")
    return folder


@pytest.mark.parametrize(
    ("queries", "says"),
    [
        ('[{"query": "q", "answer": ', "not valid JSON"),
        ('{"query": "q"}', "expected a JSON list"),
        ('[{"query": "q", "answer": "a", "question_type": "inference_query"}]', "'evidence_list' must be a list"),
        ('[{"query": "q", "answer": "a", "question_type": "guess", "evidence_list": []}]', "unknown question_type"),
        ('[{"answer": "a", "question_type": "inference_query", "evidence_list": []}]', "no text field 'query'"),
    ],
)
def test_a_malformed_multihop_file_is_refused_named(tmp_path: Path, queries: str, says: str) -> None:
    folder = _broken_multihop(tmp_path, queries)
    with pytest.raises(BenchmarkFormatError, match=says) as refused:
        import_benchmark("multihop-rag", folder, tmp_path / "out")
    assert str(folder / "MultiHopRAG.json") in str(refused.value)
    result = invoke("multihop-rag", str(folder), "--out", str(tmp_path / "out"))
    # Rich wraps long lines: compare without whitespace.
    assert result.exit_code == 1 and "MultiHopRAG.json" in "".join(result.output.split())
    assert "Traceback" not in result.output


def _broken_fairytale(tmp_path: Path, story: str | None = None, questions: str | None = None) -> Path:
    root = tmp_path / "ftqa"
    shutil.copytree(FAIRYTALE, root)
    folder = "sample-fairybook/the-copper-kettle"
    if story is not None:
        (root / "section-stories" / f"{folder}-story.csv").write_text(story, encoding="utf-8")
    if questions is not None:
        (root / "questions" / f"{folder}-questions.csv").write_text(questions, encoding="utf-8")
    return root


HEADER = "question_id,local-or-sum,cor_section,attribute1,attribute2,question,ex-or-im1,answer1\n"


@pytest.mark.parametrize(
    ("story", "questions", "says", "named"),
    [
        ("part,words\n1,Once.\n", None, "no column section, text", "-story.csv"),
        ("section,text\none,Once.\n", None, "section 'one' is not a number", "-story.csv:2"),
        (None, HEADER + "1,local,9,character,,Who?,explicit,him\n", "names a section the story", "questions.csv:2"),
        (None, HEADER + "1,global,1,character,,Who?,explicit,him\n", "local-or-sum is 'global'", "questions.csv:2"),
        (None, "question,answer\nWho?,him\n", "no column question_id", "-questions.csv"),
    ],
)
def test_a_malformed_fairytaleqa_file_is_refused_named(
    tmp_path: Path, story: str | None, questions: str | None, says: str, named: str
) -> None:
    root = _broken_fairytale(tmp_path, story, questions)
    with pytest.raises(BenchmarkFormatError, match=says) as refused:
        import_benchmark("fairytaleqa", root, tmp_path / "out")
    assert named in str(refused.value)
    result = invoke("fairytaleqa", str(root), "--out", str(tmp_path / "out"))
    assert result.exit_code == 1 and named in "".join(result.output.split())
    assert "Traceback" not in result.output


def test_a_missing_story_or_folder_is_refused(tmp_path: Path) -> None:
    root = _broken_fairytale(tmp_path)
    (root / "section-stories" / "sample-fairybook" / "the-copper-kettle-story.csv").unlink()
    with pytest.raises(BenchmarkFormatError, match=r"its story .* is missing"):
        import_benchmark("fairytaleqa", root, tmp_path / "out")
    with pytest.raises(BenchmarkFormatError, match="neither it nor its dataset/ holds"):
        import_benchmark("multihop-rag", tmp_path, tmp_path / "out")


def test_an_unknown_format_or_a_used_folder_is_refused(tmp_path: Path) -> None:
    assert invoke("narrative", str(MULTIHOP), "--out", str(tmp_path)).exit_code == 2
    import_benchmark("multihop-rag", MULTIHOP, tmp_path / "out")
    with pytest.raises(BenchmarkFormatError, match="is not empty"):
        import_benchmark("multihop-rag", MULTIHOP, tmp_path / "out")
