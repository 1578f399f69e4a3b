"""MultiHop-RAG (Tang & Yang, COLM 2024): news articles and multi-document queries with evidence lists.

Source: the repository `yixuantt/MultiHop-RAG`, folder `dataset/` (licence ODC-BY 1.0):

- `corpus.json`: a JSON list of articles, each `{"title", "author", "source", "published_at",
  "category", "url", "body"}` (`title` and `body` required here, the others optional strings);
- `MultiHopRAG.json`: a JSON list of queries, each `{"query", "answer", "question_type",
  "evidence_list": [{"title", "author", "source", "published_at", "category", "url", "fact"}, …]}`.

PATH is that `dataset/` folder, or the repository's root. Each article becomes `corpus/NNNN.md` (its
index in `corpus.json`): its title as a heading, a line with its source, author, date and category (the
queries ask about them: "the TechCrunch article published after …"), then its body.

The queries have no ids: a query's id is its index in `MultiHopRAG.json`, with its source type kept,
`mhr-0042-comparison`. Every MultiHop-RAG query is built from 2 to 4 articles, so the answering types map
to `multi-hop`; a `null_query` (no answer in the corpus, empty evidence, reference "Insufficient
information.") is left out and counted in `import.json`, since the harness scores retrieval of evidence
and answer words, which such a query has none of. The reference answer is `answer`; the evidence is each
`fact` (claims taken from the articles; `import.json` counts how many occur verbatim in the corpus).
"""

from __future__ import annotations

from pathlib import Path

from driftrag.eval.importers import (
    BenchmarkFormatError,
    ImportedSet,
    SourceDocument,
    read_json,
    source_file,
)
from driftrag.eval.questions import QuestionItem

CORPUS_FILE = "corpus.json"
QUERIES_FILE = "MultiHopRAG.json"
# SHA-256 of the files of the published release (the Git LFS objects of the repository's dataset/ at
# commit 3dd4d4e): corpus.json 6,785,567 bytes, MultiHopRAG.json 5,171,312 bytes.
PINNED_SHA256 = {
    CORPUS_FILE: "20b61b5ab84de84a927420c5d265b7ec8d859ae49980699958a787ade9e4d28f",
    QUERIES_FILE: "03cfb4926461f868684903aadc8024447bdda5bb3f6804741424cce338515bff",
}
TYPE_MAPPING = {
    "inference_query": "multi-hop",
    "comparison_query": "multi-hop",
    "temporal_query": "multi-hop",
    "null_query": "left out",
}
_METADATA = ("source", "author", "published_at", "category")


def _folder(path: Path) -> Path:
    for folder in (path, path / "dataset"):
        if (folder / QUERIES_FILE).is_file() or (folder / CORPUS_FILE).is_file():
            return folder
    raise BenchmarkFormatError(f"{path}: neither it nor its dataset/ holds {CORPUS_FILE} and {QUERIES_FILE}")


def _records(path: Path, required: tuple[str, ...]) -> list[dict]:
    if not path.is_file():
        raise BenchmarkFormatError(f"{path}: missing (MultiHop-RAG's dataset/ holds {CORPUS_FILE} and {QUERIES_FILE})")
    data = read_json(path)
    if not isinstance(data, list):
        raise BenchmarkFormatError(f"{path}: expected a JSON list of objects, found {type(data).__name__}")
    for index, record in enumerate(data):
        if not isinstance(record, dict):
            raise BenchmarkFormatError(f"{path}: item {index} is not an object")
        for key in required:
            if not isinstance(record.get(key), str):
                raise BenchmarkFormatError(f"{path}: item {index} has no text field {key!r}")
    return data


def _article(record: dict) -> str:
    metadata = "; ".join(
        f"{key.replace('_', ' ')}: {value}" for key in _METADATA if isinstance(value := record.get(key), str) and value
    )
    head = f"# {record['title'].strip()}\n\n" + (f"{metadata}\n\n" if metadata else "")
    return head + record["body"].strip() + "\n"


def _evidence(path: Path, index: int, record: dict) -> list[str]:
    evidence = record.get("evidence_list")
    if not isinstance(evidence, list) or not all(
        isinstance(item, dict) and isinstance(item.get("fact"), str) for item in evidence
    ):
        raise BenchmarkFormatError(f"{path}: item {index}: 'evidence_list' must be a list of objects with a 'fact'")
    return [item["fact"] for item in evidence if item["fact"].strip()]


def read_multihop_rag(path: Path) -> ImportedSet:
    folder = _folder(path)
    corpus_path, queries_path = folder / CORPUS_FILE, folder / QUERIES_FILE
    articles = _records(corpus_path, ("title", "body"))
    queries = _records(queries_path, ("query", "answer", "question_type"))
    documents = [SourceDocument(name=f"{index:04d}", text=_article(record)) for index, record in enumerate(articles)]
    questions: list[QuestionItem] = []
    skipped = 0
    for index, record in enumerate(queries):
        kind = record["question_type"]
        if kind not in TYPE_MAPPING:
            known = ", ".join(TYPE_MAPPING)
            raise BenchmarkFormatError(f"{queries_path}: item {index}: unknown question_type {kind!r} (known: {known})")
        evidence = _evidence(queries_path, index, record)
        if TYPE_MAPPING[kind] == "left out":
            skipped += 1
            continue
        if not record["query"].strip():
            raise BenchmarkFormatError(f"{queries_path}: item {index}: empty 'query'")
        questions.append(
            QuestionItem(
                id=f"mhr-{index:04d}-{kind.removesuffix('_query')}",
                type=TYPE_MAPPING[kind],  # type: ignore[arg-type]
                question=record["query"].strip(),
                reference_answer=record["answer"].strip(),
                evidence=evidence,
            )
        )
    sources = [source_file(p, path, PINNED_SHA256[p.name]) for p in (corpus_path, queries_path)]
    return ImportedSet(
        documents=documents,
        questions=questions,
        sources=sources,
        skipped={"null_query": skipped} if skipped else {},
        type_mapping=TYPE_MAPPING,
    )
