"""TEST DOUBLE: a deterministic, scripted stand-in for the chat model API (unreachable from here).

`ScriptedChatModel` satisfies `driftrag.ingestion.tasks.ChatModel` and answers each ingestion task
by reading the prompt, never by a model:

- extraction: entities = capitalised multi-word spans of the chunk text (between the chunk markers),
  relationships = pairs of entities that share a sentence, with raw type "interacts with";
- gleaning: nothing new (or one new entity for the first `glean_new_rounds` rounds of a chunk);
- repair re-asks: a valid answer again (unless the chunk is scripted to stay invalid);
- description summaries: the listed descriptions joined with "; ";
- community reports: valid report JSON citing every id of the context (plus `extra_citations`).

It counts calls per task in `calls` and keeps every request in `requests`. `misbehave` maps a
substring of a chunk's text to a failure mode for that chunk: "truncated" (JSON cut short),
"prose" (prose and a code fence around the JSON), "wrong_types" (strings for numbers, out-of-range
strength, missing names and descriptions), "invalid" (never JSON), "invalid_once" (invalid first,
valid on the re-ask).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from driftrag.ingestion.extraction import CHUNK_CLOSE, CHUNK_OPEN

_SPAN = re.compile(r"\b[A-Z][a-z]+(?:[ \t]+[A-Z][a-z]+)+\b")
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
_ID = re.compile(r"\b(?:entity|relationship|chunk)-[0-9a-f]+\b")

# Phrases of the packaged templates that tell the tasks apart.
EXTRACT_MARK = "OUTPUT PROTOCOL (owned by the system"
GLEAN_MARK = "were MISSED in the last extraction"
REPAIR_MARK = "Your previous answer could not be used"
SUMMARY_MARK = "You write one comprehensive description"
REPORT_MARK = "You write a report on one community"
MODES = frozenset({"truncated", "prose", "wrong_types", "invalid", "invalid_once"})


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
    ) -> None:
        unknown = set((misbehave or {}).values()) - MODES
        if unknown:
            raise ValueError(f"unknown misbehaviour modes {sorted(unknown)}")
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
        if REPAIR_MARK in last:
            return "repair"
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
        rows = [line.split("|") for line in context.splitlines() if line.startswith("entity-")]
        names = [row[1] for row in rows]
        ids = list(dict.fromkeys(_ID.findall(context)))
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
