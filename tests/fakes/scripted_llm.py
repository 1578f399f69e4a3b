"""TEST DOUBLE: a deterministic, scripted stand-in for the chat model API (unreachable from here).

`ScriptedChatModel` satisfies `driftrag.ingestion.tasks.ChatModel` and answers each ingestion task
by reading the prompt, never by a model:

- extraction: entities = capitalised multi-word spans of the chunk text (between the chunk markers),
  relationships = pairs of entities that share a sentence, with raw type "interacts with";
- gleaning: nothing new (or one new entity for the first `glean_new_rounds` rounds of a chunk);
- repair re-asks: a valid answer again (unless the chunk is scripted to stay invalid);
- description summaries: the listed descriptions joined with "; ";
- community reports: valid report JSON citing every handle of the context (plus `extra_citations`).

It also answers the five query tasks (`driftrag.search.llm_tasks`), again only from the prompt:

- query entities: capitalised multi-word spans of the question, then single capitalised words that
  do not start a sentence;
- answer and DRIFT primer: the first sentence of each of the (at most 3) context items sharing the
  most words with the question, citing their ids (plus `extra_citations`); score = 100 x shared words
  / question words; follow-ups "What is the role of <name>?" for capitalised spans of the context
  absent from the question, as many as the prompt's "at most N follow-up queries" allows;
- HyDE: the template report with the question prepended;
- reduce: the intermediate answers joined, citing the ids of their "Sources" lines (plus `extra_citations`);
- global map: one key point per report sharing words with the question (its first sentence, citing its
  handle), scored 100 x shared words / question words, best first, as many as "at most N key points"
  allows;
- global reduce: the key points joined, best first, citing the handles of their "Sources" lines.

It counts calls per task in `calls` ("names", "answer", "hyde", "primer", "reduce", "global_map",
"global_reduce" for the query tasks) and keeps every request in `requests`. `misbehave` maps a
substring of a chunk's text to a failure mode for that chunk: "truncated" (JSON cut short), "prose"
(prose and a code fence around the JSON), "wrong_types" (strings for numbers, out-of-range strength,
missing names and descriptions), "invalid" (never JSON), "invalid_once" (invalid first, valid on the
re-ask), "empty" (valid JSON naming nothing, as a model that finds no entity).
`query_misbehave` maps a query task name to "invalid", "invalid_once" or "prose" likewise.
"""

from __future__ import annotations

import json
import re
import threading
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from driftrag.ingestion.extraction import CHUNK_CLOSE, CHUNK_OPEN
from tests.fakes.openai_server import message_text

_SPAN = re.compile(r"\b[A-Z][a-z]+(?:[ \t]+[A-Z][a-z]+)+\b")
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
_ROW_HANDLE = re.compile(r"^(S\d+)\|")

# Phrases of the packaged templates that tell the tasks apart.
EXTRACT_MARK = "OUTPUT PROTOCOL (owned by the system"
GLEAN_MARK = "were MISSED in the last extraction"
REPAIR_MARK = "Your previous answer could not be used"
SUMMARY_MARK = "You write one comprehensive description"
REPORT_MARK = "You write a report on one community"
MODES = frozenset({"truncated", "prose", "wrong_types", "invalid", "invalid_once", "empty"})
# First lines of the query templates.
QUERY_MARKS = {
    "names": "You list the entities a question names",
    "answer": "You answer a question from a context of sources",
    "hyde": "You write a hypothetical community report",
    "primer": "You give a first answer to a question from the top community reports",
    "reduce": "You combine intermediate answers into one final answer",
    "global_map": "You pick the key points of community reports",
    "global_reduce": "You write the final answer to a question from key points",
}
QUERY_MODES = frozenset({"invalid", "invalid_once", "prose"})
_WORD = re.compile(r"[A-Za-z0-9]+")
_CAPITALISED = re.compile(r"\b[A-Z][a-z]+\b")
_SENTENCE_START = re.compile(r"(?:^|[.!?]\s+)([A-Z][a-z]+)\b")
_ITEM_HEAD = re.compile(r"^\[([A-Za-z0-9_-]+)\]")
_FOLLOW_UP_CAP = re.compile(r"at most (\d+) follow-up quer")
_POINTS_CAP = re.compile(r"at most (\d+) key points")
_NODE_ID = re.compile(r"\b(?:chunk|entity|relationship|community)-[A-Za-z0-9_-]*[A-Za-z0-9]|\bS\d+\b")


@dataclass(frozen=True)
class ScriptedChatResult:
    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached: bool = False


def scripted_graph(text: str) -> dict:
    """The extraction answer for a passage: capitalised spans and same-sentence pairs."""
    entities = list(dict.fromkeys(_SPAN.findall(text)))
    relationships = []
    for sentence in _SENTENCE.split(text):
        names = list(dict.fromkeys(_SPAN.findall(sentence)))
        for i, source in enumerate(names):
            for target in names[i + 1 :]:
                relationships.append(
                    {
                        "source": source,
                        "target": target,
                        "type": "interacts with",
                        "description": f"{source} and {target} appear in the same sentence.",
                        "strength": 5,
                    }
                )
    return {
        "entities": [
            {"name": n, "type": "CONCEPT", "description": f"{n} is mentioned in the passage."} for n in entities
        ],
        "relationships": relationships,
    }


class ScriptedChatModel:
    """Deterministic test double of the chat model (see module docstring)."""

    def __init__(
        self,
        *,
        misbehave: Mapping[str, str] | None = None,
        glean_new_rounds: int = 0,
        extra_citations: Sequence[str] = (),
        invalid_reports: bool = False,
        query_misbehave: Mapping[str, str] | None = None,
    ) -> None:
        unknown = set((misbehave or {}).values()) - MODES
        unknown |= set((query_misbehave or {}).values()) - QUERY_MODES
        unknown |= {f"task {task}" for task in query_misbehave or {} if task not in QUERY_MARKS}
        if unknown:
            raise ValueError(f"unknown misbehaviour modes {sorted(unknown)}")
        self.query_misbehave = dict(query_misbehave or {})
        self.misbehave = dict(misbehave or {})
        self.glean_new_rounds = glean_new_rounds
        self.extra_citations = list(extra_citations)
        self.invalid_reports = invalid_reports
        self.calls: Counter[str] = Counter()
        self.requests: list[list[dict[str, str]]] = []
        self._glean_rounds: Counter[str] = Counter()

    async def chat(
        self,
        messages: list[dict[str, str]],
        *,
        json_mode: bool = False,
        max_tokens: int | None = None,
        temperature: float | None = None,
        schema: type | None = None,
    ) -> ScriptedChatResult:
        self.requests.append([dict(m) for m in messages])
        task = self._task(messages)
        self.calls[task] += 1
        text = getattr(self, f"_answer_{task}")(messages)
        prompt_tokens = sum(len(m["content"]) for m in messages) // 4
        return ScriptedChatResult(text=text, prompt_tokens=prompt_tokens, completion_tokens=len(text) // 4)

    @staticmethod
    def _task(messages: list[dict[str, str]]) -> str:
        last, first = messages[-1]["content"], messages[0]["content"]
        # A question may quote any phrase: query prompts are told apart by their first line only.
        query_task = next((task for task, mark in QUERY_MARKS.items() if first.startswith(mark)), None)
        if len(messages) > 1 and REPAIR_MARK in last:
            return "repair"
        if query_task is not None:
            return query_task
        if GLEAN_MARK in last:
            return "glean"
        if CHUNK_OPEN in last and EXTRACT_MARK in first:
            return "extract"
        if SUMMARY_MARK in last:
            return "summarize"
        if REPORT_MARK in last:
            return "report"
        raise AssertionError(f"ScriptedChatModel does not recognise this prompt: {last[:200]!r}")

    # --- extraction ------------------------------------------------------------------------------

    @staticmethod
    def _chunk_text(messages: list[dict[str, str]]) -> str:
        user = next(m["content"] for m in messages if m["role"] == "user" and CHUNK_OPEN in m["content"])
        return user.split(CHUNK_OPEN, 1)[1].rsplit(CHUNK_CLOSE, 1)[0].strip()

    def _mode(self, text: str) -> str | None:
        return next((mode for key, mode in self.misbehave.items() if key in text), None)

    def _answer_extract(self, messages: list[dict[str, str]]) -> str:
        text = self._chunk_text(messages)
        graph = scripted_graph(text)
        mode = self._mode(text)
        if mode in ("invalid", "invalid_once"):
            return "I am sorry, I cannot produce a graph for this passage."
        if mode == "empty":
            return json.dumps({"entities": [], "relationships": []})
        if mode == "truncated":
            full = json.dumps(graph)
            return full[: int(len(full) * 0.7)]
        if mode == "prose":
            return (
                f"Sure! Here is the graph you asked for:\n```json\n{json.dumps(graph, indent=2)}\n```\nAnything else?"
            )
        if mode == "wrong_types":
            for i, rel in enumerate(graph["relationships"]):
                rel["strength"] = ["8", 15, "high", 7.6][i % 4]
            for entity in graph["entities"]:
                del entity["description"]
            graph["entities"].append({"type": "PERSON", "description": "an entity without a name"})
        return json.dumps(graph)

    def _answer_repair(self, messages: list[dict[str, str]]) -> str:
        query_task = self._task(messages[:1])
        if query_task in QUERY_MARKS:
            if self.query_misbehave.get(query_task) == "invalid":
                return "Still no JSON, sorry."
            return getattr(self, f"_query_{query_task}")(messages[0]["content"])
        if REPORT_MARK in messages[0]["content"]:
            return self._answer_report(messages)
        text = self._chunk_text(messages)
        if self._mode(text) == "invalid":
            return "Still no JSON, sorry."
        return json.dumps(scripted_graph(text))

    def _answer_glean(self, messages: list[dict[str, str]]) -> str:
        text = self._chunk_text(messages)
        self._glean_rounds[text] += 1
        n = self._glean_rounds[text]
        if n <= self.glean_new_rounds:
            entity = {"name": f"Gleaned Item{'x' * n}", "type": "CONCEPT", "description": f"found in round {n}"}
            return json.dumps({"entities": [entity], "relationships": []})
        return json.dumps({"entities": [], "relationships": []})

    # --- summaries and reports -------------------------------------------------------------------

    @staticmethod
    def _answer_summarize(messages: list[dict[str, str]]) -> str:
        listed = messages[-1]["content"].split("DESCRIPTIONS", 1)[1]
        return "; ".join(line[2:].strip() for line in listed.splitlines() if line.startswith("- "))

    def _answer_report(self, messages: list[dict[str, str]]) -> str:
        if self.invalid_reports:
            return "This community is interesting, but I will not write JSON."
        context = messages[0]["content"].split("CONTEXT", 1)[1]
        # Rows start with their citation handle; the entity rows are those of the "## Entities" section.
        entity_section = context.split("## Entities", 1)[1].split("\n## ", 1)[0] if "## Entities" in context else ""
        rows = [line.split("|") for line in entity_section.splitlines() if _ROW_HANDLE.match(line)]
        names = [row[1] for row in rows]
        ids = [m.group(1) for m in map(_ROW_HANDLE.match, context.splitlines()) if m]
        title = f"{names[0]} and {len(names) - 1} others" if names else "Community of sub-communities"
        report = {
            "title": title,
            "summary": f"A community of {len(names)} listed entities.",
            "rating": float(min(10, len(names))),
            "rating_explanation": "Scripted: the rating is the number of listed entities, at most 10.",
            "findings": [{"summary": row[1], "explanation": row[3]} for row in rows[:3]],
            "citations": ids + self.extra_citations,
        }
        return json.dumps(report)

    # --- query tasks -------------------------------------------------------------------------------

    def _misbehaving(self, messages: list[dict[str, str]], task: str) -> str:
        mode = self.query_misbehave.get(task)
        if mode in ("invalid", "invalid_once"):
            return "I would rather answer in prose."
        text = getattr(self, f"_query_{task}")(messages[0]["content"])
        if mode == "prose":
            return f"Here is my answer:\n```json\n{text}\n```\nHope it helps."
        return text

    def _answer_names(self, messages: list[dict[str, str]]) -> str:
        return self._misbehaving(messages, "names")

    def _answer_answer(self, messages: list[dict[str, str]]) -> str:
        return self._misbehaving(messages, "answer")

    def _answer_primer(self, messages: list[dict[str, str]]) -> str:
        return self._misbehaving(messages, "primer")

    def _answer_reduce(self, messages: list[dict[str, str]]) -> str:
        return self._misbehaving(messages, "reduce")

    def _answer_global_map(self, messages: list[dict[str, str]]) -> str:
        return self._misbehaving(messages, "global_map")

    def _answer_global_reduce(self, messages: list[dict[str, str]]) -> str:
        return self._misbehaving(messages, "global_reduce")

    def _answer_hyde(self, messages: list[dict[str, str]]) -> str:
        prompt = messages[0]["content"]
        return f"{_between(prompt, 'QUESTION')}\n\n{_between(prompt, 'TEMPLATE')}"

    @staticmethod
    def _query_names(prompt: str) -> str:
        return json.dumps({"names": question_entity_names(_between(prompt, "QUESTION"))})

    def _query_answer_like(self, prompt: str) -> str:
        question, context = _between(prompt, "QUESTION"), _between(prompt, "CONTEXT")
        cap = _FOLLOW_UP_CAP.search(prompt)
        payload = scripted_answer(question, context, int(cap.group(1)) if cap else 0)
        payload["citations"] += self.extra_citations
        return json.dumps(payload)

    def _query_answer(self, prompt: str) -> str:
        return self._query_answer_like(prompt)

    def _query_primer(self, prompt: str) -> str:
        return self._query_answer_like(prompt)

    def _query_reduce(self, prompt: str) -> str:
        answers = _between(prompt, "ANSWERS")
        texts, ids = [], []
        for block in answers.split("\n\n"):
            lines = block.strip().splitlines()
            if not lines or not _ITEM_HEAD.match(lines[0]):
                continue
            body = [line for line in lines[1:] if not line.startswith("Sources:")]
            texts.append(" ".join(body).strip())
            for line in lines[1:]:
                if line.startswith("Sources:"):
                    ids += _NODE_ID.findall(line)
        answer = "\n\n".join(t for t in texts if t) or "No intermediate answer."
        return json.dumps({"answer": answer, "citations": list(dict.fromkeys(ids)) + self.extra_citations})

    @staticmethod
    def _query_global_map(prompt: str) -> str:
        question, reports = _between(prompt, "QUESTION"), _between(prompt, "REPORTS")
        cap = _POINTS_CAP.search(prompt)
        wanted = _words(question)
        points = []
        for item_id, title, body in context_items(reports):
            shared = len(wanted & _words(f"{title} {body}"))
            if shared and wanted:
                flat = " ".join(line.strip() for line in body.splitlines() if line.strip() and not line.startswith("#"))
                sentence = _SENTENCE.split(flat, 1)[0].strip() or title
                points.append(
                    {
                        "description": f"{sentence} [{item_id}]",
                        "score": min(100, round(100 * shared / len(wanted))),
                        "citations": [item_id],
                    }
                )
        points.sort(key=lambda p: -p["score"])
        return json.dumps({"points": points[: int(cap.group(1)) if cap else len(points)]})

    def _query_global_reduce(self, prompt: str) -> str:
        texts, ids = [], []
        for block in _between(prompt, "POINTS").split("\n\n"):
            lines = block.strip().splitlines()
            if not lines or not _ITEM_HEAD.match(lines[0]):
                continue
            texts += [line for line in lines[1:] if not line.startswith("Sources:")]
            ids += [i for line in lines[1:] if line.startswith("Sources:") for i in _NODE_ID.findall(line)]
        answer = "\n\n".join(t for t in texts if t) or "No key point."
        return json.dumps({"answer": answer, "citations": list(dict.fromkeys(ids)) + self.extra_citations})


def _between(prompt: str, name: str) -> str:
    opening, closing = f"<<<{name}>>>", f"<<<END_{name}>>>"
    if opening not in prompt:
        return ""
    return prompt.split(opening, 1)[1].split(closing, 1)[0].strip()


def question_entity_names(question: str) -> list[str]:
    """Capitalised multi-word spans, then single capitalised words that do not start a sentence."""
    spans = list(dict.fromkeys(_SPAN.findall(question)))
    starts = {m.start(1) for m in _SENTENCE_START.finditer(question)}
    covered = [(m.start(), m.end()) for m in _SPAN.finditer(question)]
    singles = [
        m.group()
        for m in _CAPITALISED.finditer(question)
        if m.start() not in starts and not any(a <= m.start() < b for a, b in covered)
    ]
    return list(dict.fromkeys(spans + singles))


def context_items(context: str) -> list[tuple[str, str, str]]:
    """(id, title, body) of each item of a rendered context: a `[id] title` line and the lines under it."""
    items: list[tuple[str, str, list[str]]] = []
    for line in context.splitlines():
        head = _ITEM_HEAD.match(line)
        if head:
            items.append((head.group(1), line[head.end() :].strip(), []))
        elif line.startswith("## "):
            items.append(("", "", []))
        elif items:
            items[-1][2].append(line)
    return [(item_id, title, "\n".join(lines).strip()) for item_id, title, lines in items if item_id]


def _words(text: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(text) if len(w) > 2}


def scripted_answer(question: str, context: str, max_follow_ups: int) -> dict:
    """Answer payload from the items sharing the most words with the question (see module docstring)."""
    wanted = _words(question)
    scored = [
        (len(wanted & _words(f"{title} {body}")), i, item_id, body)
        for i, (item_id, title, body) in enumerate(context_items(context))
    ]
    best = sorted((s for s in scored if s[0] > 0), key=lambda s: (-s[0], s[1]))[:3]
    if best:
        sentences = []
        for _, _, item_id, body in best:
            flat = " ".join(line.strip() for line in body.splitlines() if line.strip() and not line.startswith("#"))
            sentences.append(f"{_SENTENCE.split(flat, 1)[0].strip()} [{item_id}]")
        answer = " ".join(sentences)
    else:
        answer = "The context does not answer the question."
    score = round(100 * best[0][0] / len(wanted)) if best and wanted else 0
    asked = set(_SPAN.findall(question))
    names = [n for n in dict.fromkeys(_SPAN.findall(context)) if n not in asked and n not in question]
    return {
        "answer": answer,
        "score": min(score, 100),
        "follow_up_queries": [f"What is the role of {name}?" for name in names][: max(max_follow_ups, 0)],
        "citations": [item_id for _, _, item_id, _ in best],
    }


class ScriptedResponder:
    """`ScriptedChatModel`'s answer to each request, on the OpenAI-compatible test server's side (or that of
    a variant of it, e.g. `tests.fakes.harbor_corpus.DescriptiveChatModel`)."""

    def __init__(self, model: ScriptedChatModel | None = None) -> None:
        self.model = model or ScriptedChatModel()
        self._lock = threading.Lock()

    def __call__(self, request: dict) -> str:
        messages = [{"role": m["role"], "content": message_text(m)} for m in request.get("messages", [])]
        with self._lock:
            task = self.model._task(messages)
            return getattr(self.model, f"_answer_{task}")(messages)
