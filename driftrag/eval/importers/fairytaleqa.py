"""FairytaleQA (Xu et al., ACL 2022): public-domain fairy tales from Project Gutenberg, split into sections,
with questions written by trained annotators (licence Apache-2.0).

Source: the repository `uci-soe/FairytaleQAData`. PATH is its root (its `data-by-origin/` is read), or any
folder holding `questions/` and `section-stories/` (such as `data-by-origin/` or one split of
`data-by-train-split/`). Each `questions/…/NAME-questions.csv` is paired with
`section-stories/…/NAME-story.csv` (the same sub-folder):

- the story: CSV with the columns `section,text`, one row per section (numbered from 1);
- the questions: CSV with the columns `question_id, local-or-sum, cor_section, attribute1, attribute2,
  question, ex-or-im1, answer1, answer2, answer3, ex-or-im2, answer4, answer5, answer6`, of which
  `question_id`, `local-or-sum`, `cor_section`, `question` and `answer1` are read.

Each story becomes `corpus/<sub-folder>--NAME.md`: a heading made from NAME, then its sections in order
of their numbers, each verbatim (a number that repeats keeps both texts, in file order). A question's
id keeps the story and the source's id, `ftqa-NAME-7`; its reference answer is `answer1` (the first
annotator's first answer); its evidence is the text of each section named in `cor_section` ("5,6"), so
it is verbatim in the corpus. Types: `local` (answered within one section)
maps to `local`, `summary` (needs several sections) to `multi-hop`.
"""

from __future__ import annotations

import csv
from pathlib import Path

from driftrag.eval.importers import BenchmarkFormatError, ImportedSet, SourceDocument, source_file
from driftrag.eval.questions import QuestionItem

TYPE_MAPPING = {"local": "local", "summary": "multi-hop"}
STORY_COLUMNS = ("section", "text")
QUESTION_COLUMNS = ("question_id", "local-or-sum", "cor_section", "question", "answer1")
QUESTIONS_SUFFIX = "-questions.csv"
STORY_SUFFIX = "-story.csv"


def _root(path: Path) -> Path:
    for folder in (path, path / "data-by-origin"):
        if (folder / "questions").is_dir() and (folder / "section-stories").is_dir():
            return folder
    raise BenchmarkFormatError(f"{path}: neither it nor its data-by-origin/ holds questions/ and section-stories/")


def _rows(path: Path, columns: tuple[str, ...]) -> list[tuple[int, dict[str, str]]]:
    """(line number, row) of a CSV file that has at least `columns`, or `BenchmarkFormatError` naming it."""
    try:
        with path.open(encoding="utf-8-sig", newline="") as handle:
            reader = csv.DictReader(handle)
            missing = [column for column in columns if column not in (reader.fieldnames or ())]
            if missing:
                raise BenchmarkFormatError(f"{path}: not a FairytaleQA file, no column {', '.join(missing)}")
            rows = []
            for row in reader:
                if any(row.get(column) is None for column in columns):
                    raise BenchmarkFormatError(f"{path}:{reader.line_num}: the row has too few fields")
                rows.append((reader.line_num, row))
            return rows
    except OSError as exc:
        raise BenchmarkFormatError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    except UnicodeDecodeError as exc:
        raise BenchmarkFormatError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except csv.Error as exc:
        raise BenchmarkFormatError(f"{path}: not valid CSV ({exc})") from None


def _sections(path: Path) -> dict[int, list[str]]:
    """Section number -> its texts, in file order. A number may repeat (the published story of "The
    Remarkable Rocket" has two sections 5): both texts are kept, in the story and in the evidence."""
    sections: dict[int, list[str]] = {}
    for line, row in _rows(path, STORY_COLUMNS):
        number = row["section"].strip()
        if not number.isdigit():
            raise BenchmarkFormatError(f"{path}:{line}: section {number!r} is not a number")
        sections.setdefault(int(number), []).append(row["text"].strip())
    if not sections:
        raise BenchmarkFormatError(f"{path}: no section")
    return sections


def _story(name: str, sections: dict[int, list[str]]) -> str:
    title = name.replace("-", " ").strip().capitalize()
    texts = [text for number in sorted(sections) for text in sections[number]]
    return f"# {title}\n\n" + "\n\n".join(texts) + "\n"


def _questions(path: Path, name: str, sections: dict[int, list[str]]) -> list[QuestionItem]:
    items = []
    for line, row in _rows(path, QUESTION_COLUMNS):
        where = f"{path}:{line}"
        kind = row["local-or-sum"].strip()
        if kind not in TYPE_MAPPING:
            raise BenchmarkFormatError(f"{where}: local-or-sum is {kind!r}, not one of {', '.join(TYPE_MAPPING)}")
        cited = [part.strip() for part in row["cor_section"].split(",") if part.strip()]
        if not all(part.isdigit() and int(part) in sections for part in cited):
            raise BenchmarkFormatError(f"{where}: cor_section {row['cor_section']!r} names a section the story lacks")
        if not row["question_id"].strip() or not row["question"].strip():
            raise BenchmarkFormatError(f"{where}: empty question_id or question")
        items.append(
            QuestionItem(
                id=f"ftqa-{name}-{row['question_id'].strip()}",
                type=TYPE_MAPPING[kind],  # type: ignore[arg-type]
                question=row["question"].strip(),
                reference_answer=row["answer1"].strip(),
                evidence=[text for part in dict.fromkeys(cited) for text in sections[int(part)]],
            )
        )
    return items


def read_fairytaleqa(path: Path) -> ImportedSet:
    root = _root(path)
    question_files = sorted((root / "questions").rglob(f"*{QUESTIONS_SUFFIX}"))
    if not question_files:
        raise BenchmarkFormatError(f"{root / 'questions'}: no *{QUESTIONS_SUFFIX} file")
    documents, questions, sources = [], [], []
    for question_file in question_files:
        folder = question_file.parent.relative_to(root / "questions")
        name = question_file.name.removesuffix(QUESTIONS_SUFFIX)
        story_file = root / "section-stories" / folder / f"{name}{STORY_SUFFIX}"
        if not story_file.is_file():
            raise BenchmarkFormatError(f"{question_file}: its story {story_file} is missing")
        sections = _sections(story_file)
        prefix = "--".join(folder.parts)
        documents.append(SourceDocument(name=f"{prefix}--{name}" if prefix else name, text=_story(name, sections)))
        questions.extend(_questions(question_file, name, sections))
        sources += [source_file(p, path) for p in (story_file, question_file)]
    ids = [item.id for item in questions]
    if len(set(ids)) != len(ids):
        repeated = sorted({i for i in ids if ids.count(i) > 1})[:3]
        raise BenchmarkFormatError(f"{root}: two stories share a name, ids repeated: {', '.join(repeated)}")
    return ImportedSet(documents=documents, questions=questions, sources=sources, type_mapping=TYPE_MAPPING)
