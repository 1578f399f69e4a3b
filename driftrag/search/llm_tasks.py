"""LLM implementations of the query tasks (`driftrag.search.tasks`), on top of any `ChatModel`.

Each JSON task shows a filled-in example of its pydantic model in the prompt (every field present),
parses the answer with `json_repair` (`extract_json_object`), coerces what is easy to coerce, and
validates with the same model. An answer that cannot be used is re-asked once by the one JSON-answer
helper (`driftrag.providers.json_answer`); a second unusable answer raises `InvalidModelOutput` (a
`ModelError`). Citations are kept only when the cited id was shown to the model (in the `citations`
list or inline as `[id]` in the answer).

Question, context and template travel between `<<<NAME>>>` / `<<<END_NAME>>>` lines; those markers
are removed from the values first, so a hostile question cannot close its section early.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Self, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from driftrag.models.search import Source
from driftrag.prompts.registry import PromptRegistry
from driftrag.providers.chat import ChatModel, turn
from driftrag.providers.handles import NODE_ID, Handles
from driftrag.providers.json_answer import (
    AnswerPreview,
    InvalidModelOutput,
    ask_json,
    extract_json_object,
    json_example,
)
from driftrag.providers.tokens import words_within
from driftrag.search.drift.models import IntermediateAnswer
from driftrag.search.global_search.models import GlobalPoint, KeyPoint, MapPayload, ReportBatch
from driftrag.search.models import AnswerPayload, ReducedAnswer, SearchContext
from driftrag.search.streaming import AnswerStream
from driftrag.search.tasks import QueryTasks
from driftrag.settings import Settings

_MARKER = re.compile(r"<<<(?:END_)?[A-Z_]+>>>")
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
T = TypeVar("T")
HYDE_MIN_WORDS = 50


class EntityNames(BaseModel):
    """The JSON protocol of the query-entity namer."""

    model_config = ConfigDict(extra="forbid")

    names: list[str] = Field(description="Entity names as written in the source text.")

    @classmethod
    def example(cls) -> Self:
        return cls(names=["Anna Petrova", "Harbour Lab"])


def delimit(name: str, text: str) -> str:
    """`text` between `<<<NAME>>>` and `<<<END_NAME>>>` lines, with any such marker removed from it."""
    return f"<<<{name}>>>\n{_MARKER.sub('', text).strip()}\n<<<END_{name}>>>"


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    return value if isinstance(value, list) else [value]


def _strings(values: Iterable[Any]) -> list[str]:
    out = []
    for value in values:
        if isinstance(value, dict):
            value = value.get("name") or value.get("query") or value.get("id")
        if isinstance(value, str | int | float) and not isinstance(value, bool) and str(value).strip():
            out.append(str(value).strip())
    return list(dict.fromkeys(out))


def _score(value: Any) -> int:
    if value is None:
        raise InvalidModelOutput('the JSON object has no "score" (an integer from 0 to 100)')
    match = _NUMBER.search(str(value))
    if isinstance(value, bool) or match is None:
        raise InvalidModelOutput(f"score {value!r} is not a number")
    return min(100, max(0, round(float(match.group()))))


def _text(value: Any) -> str:
    if isinstance(value, list):
        return "\n".join(_text(v) for v in value)
    return "" if value is None else str(value).strip()


def cited_ids(answer: str, citations: Iterable[str], citable: set[str]) -> list[str]:
    """Ids cited in the list or inline in the answer, in that order, kept only when citable."""
    mentioned = [*citations, *NODE_ID.findall(answer)]
    return [i for i in dict.fromkeys(mentioned) if i in citable]


def parse_answer(raw: str, citable: set[str] | Handles, max_follow_ups: int) -> AnswerPayload:
    obj = extract_json_object(raw)
    answer = _text(obj.get("answer"))
    if not answer:
        raise InvalidModelOutput('the JSON object has no "answer" text')
    handles = citable if isinstance(citable, Handles) else Handles(sorted(citable))
    answer, citations, unknown = handles.resolve(answer, _strings(_as_list(obj.get("citations"))))
    try:
        return AnswerPayload(
            answer=answer,
            score=_score(obj.get("score")),
            follow_up_queries=_strings(_as_list(obj.get("follow_up_queries")))[: max(max_follow_ups, 0)],
            citations=citations,
            unknown_citations=unknown,
        )
    except ValidationError as exc:
        raise InvalidModelOutput(f"the answer does not match the schema: {exc.errors()[:3]}") from exc


def parse_reduced(raw: str, citable: set[str] | Handles) -> ReducedAnswer:
    obj = extract_json_object(raw)
    answer = _text(obj.get("answer"))
    if not answer:
        raise InvalidModelOutput('the JSON object has no "answer" text')
    handles = citable if isinstance(citable, Handles) else Handles(sorted(citable))
    answer, citations, unknown = handles.resolve(answer, _strings(_as_list(obj.get("citations"))))
    return ReducedAnswer(answer=answer, citations=citations, unknown_citations=unknown)


def parse_map(raw: str, handles: Handles, max_points: int) -> MapPayload:
    """Key points with their handles resolved to report ids; an empty list is a valid "nothing here"."""
    obj = extract_json_object(raw)
    value = obj.get("points", obj.get("key_points"))
    if value is None:
        raise InvalidModelOutput('the JSON object has no "points" list')
    points: list[KeyPoint] = []
    unknown = 0
    for item in _as_list(value):
        if not isinstance(item, dict):
            continue
        description = _text(item.get("description", item.get("point")))
        if not description:
            continue
        text, citations, missing = handles.resolve(description, _strings(_as_list(item.get("citations"))))
        unknown += missing
        points.append(KeyPoint(description=text, score=_score(item.get("score")), citations=citations))
    return MapPayload(points=points[: max(max_points, 0)], unknown_citations=unknown)


def render_points(points: Sequence[GlobalPoint], handles: Handles) -> str:
    """Key points for the global reduce, each headed by its id and score, with its reports as handles."""
    blocks = []
    for point in points:
        sources = ", ".join(handles.show(f"[{report_id}]") for report_id in point.report_ids) or "none"
        text = handles.show(point.description.strip())
        blocks.append(f"[{point.id}] (score {point.score})\n{text}\nSources: {sources}")
    return "\n\n".join(blocks)


def parse_names(raw: str) -> list[str]:
    obj = extract_json_object(raw)
    value = obj.get("names", obj.get("entities"))
    if value is None:
        raise InvalidModelOutput('the JSON object has no "names"')
    try:
        return EntityNames(names=_strings(_as_list(value))).names
    except ValidationError as exc:
        raise InvalidModelOutput(f"the names do not match the schema: {exc.errors()[:3]}") from exc


def render_answers(answers: Sequence[IntermediateAnswer], handles: Handles | None = None) -> str:
    """Intermediate answers for the reduce, each headed by its id, with the sources it cites (as
    handles when `handles` is given)."""
    show = handles.show if handles is not None else (lambda text: text)
    blocks = []
    for item in answers:
        sources = ", ".join(show(f"[{source_id}]") for source_id in item.source_ids) or "none"
        blocks.append(
            f"[{item.id}] (score {item.score}) Query: {item.query}\n{show(item.answer.strip())}\nSources: {sources}"
        )
    return "\n\n".join(blocks)


class _JsonAsker:
    """The tasks' shared chat, prompts and answer cap; `ask` raises when the answer stays unusable."""

    def __init__(self, chat: ChatModel, prompts: PromptRegistry, max_tokens: int) -> None:
        self.chat = chat
        self.prompts = prompts
        self.max_tokens = max_tokens

    async def ask(
        self, task: str, prompt: str, example: str, parse: Callable[[str], T], stream: AnswerPreview | None = None
    ) -> T:
        answer = await ask_json(
            self.chat, self.prompts, prompt, parse, example, max_tokens=self.max_tokens, stream=stream
        )
        return answer.unwrap(task)


class LLMQueryEntityNamer:
    def __init__(self, asker: _JsonAsker) -> None:
        self._asker = asker

    async def entity_names(self, question: str) -> list[str]:
        example = json_example(EntityNames.example())
        prompt = self._asker.prompts.render("query_entities", example=example, question=delimit("QUESTION", question))
        return await self._asker.ask("query entities", prompt, example, parse_names)


async def _answer_over(
    asker: _JsonAsker,
    label: str,
    template: str,
    context_slot: str,
    question: str,
    context: SearchContext,
    max_follow_ups: int,
    stream: AnswerStream | None = None,
    **extra: str,
) -> AnswerPayload:
    """An `AnswerPayload` from a context; answers and the DRIFT primer differ only in their template."""
    handles = Handles(source.id for source in context.sources)
    example = json_example(AnswerPayload.example())
    prompt = asker.prompts.render(
        template,
        example=example,
        question=delimit("QUESTION", question),
        max_follow_ups=str(max(max_follow_ups, 0)),
        **{context_slot: delimit("CONTEXT", handles.show(context.text))},
        **extra,
    )
    preview = stream.json_answer(handles.written_back) if stream is not None else None
    return await asker.ask(label, prompt, example, lambda raw: parse_answer(raw, handles, max_follow_ups), preview)


class LLMContextAnswerer:
    def __init__(self, asker: _JsonAsker) -> None:
        self._asker = asker

    async def answer(
        self,
        question: str,
        context: SearchContext,
        *,
        max_follow_ups: int = 0,
        user_question: str | None = None,
        stream: AnswerStream | None = None,
    ) -> AnswerPayload:
        # A DRIFT step shows the user's question above its own, so that the score and the follow-ups
        # are measured against what the user asked, not against the side question.
        shown = f"\n{delimit('USER_QUESTION', user_question)}\n" if user_question else ""
        return await _answer_over(
            self._asker,
            "answer",
            "local_answer",
            "context",
            question,
            context,
            max_follow_ups,
            stream,
            user_question=shown,
        )


class LLMHydeWriter:
    def __init__(self, asker: _JsonAsker) -> None:
        self._asker = asker

    async def hypothetical_report(self, question: str, template: str) -> str:
        # As long as the template, within the answer cap: a longer probe only dilutes the embedding.
        words = words_within(
            self._asker.max_tokens, cap=max(len(template.split()), HYDE_MIN_WORDS), floor=HYDE_MIN_WORDS
        )
        prompt = self._asker.prompts.render(
            "drift_hyde",
            question=delimit("QUESTION", question),
            template=delimit("TEMPLATE", template),
            max_words=str(words),
        )
        result = await self._asker.chat.chat([turn("user", prompt)], max_tokens=self._asker.max_tokens)
        # An empty report would search with nothing: the question itself is the better probe.
        return result.text.strip() or question


class LLMDriftPrimer:
    def __init__(self, asker: _JsonAsker) -> None:
        self._asker = asker

    async def prime(
        self, question: str, reports: SearchContext, *, max_follow_ups: int, entities: Sequence[Source] = ()
    ) -> AnswerPayload:
        # The model writes its follow-ups from the reports; the neighbourhood's names still decide, in
        # DRIFT, which entities each follow-up targets (dedup), and listing them would grow every prompt.
        del entities
        return await _answer_over(self._asker, "primer", "drift_primer", "reports", question, reports, max_follow_ups)


class LLMDriftReducer:
    def __init__(self, asker: _JsonAsker) -> None:
        self._asker = asker

    async def reduce(
        self, question: str, answers: Sequence[IntermediateAnswer], *, stream: AnswerStream | None = None
    ) -> ReducedAnswer:
        example = json_example(ReducedAnswer.example())
        handles = Handles(source_id for item in answers for source_id in item.source_ids)
        prompt = self._asker.prompts.render(
            "drift_reduce",
            example=example,
            question=delimit("QUESTION", question),
            answers=delimit("ANSWERS", render_answers(answers, handles)),
        )
        preview = stream.json_answer(handles.written_back) if stream is not None else None
        return await self._asker.ask("reduce", prompt, example, lambda raw: parse_reduced(raw, handles), preview)


class LLMGlobalMapper:
    def __init__(self, asker: _JsonAsker) -> None:
        self._asker = asker

    async def map(self, question: str, batch: ReportBatch, *, max_points: int) -> MapPayload:
        handles = Handles(source.id for source in batch.context.sources)
        example = json_example(MapPayload.example())
        prompt = self._asker.prompts.render(
            "global_map",
            example=example,
            question=delimit("QUESTION", question),
            reports=delimit("REPORTS", handles.show(batch.context.text)),
            max_points=str(max(max_points, 0)),
        )
        return await self._asker.ask("global map", prompt, example, lambda raw: parse_map(raw, handles, max_points))


class LLMGlobalReducer:
    def __init__(self, asker: _JsonAsker) -> None:
        self._asker = asker

    async def reduce(
        self, question: str, points: Sequence[GlobalPoint], *, stream: AnswerStream | None = None
    ) -> ReducedAnswer:
        example = json_example(ReducedAnswer.example())
        handles = Handles(report_id for point in points for report_id in point.report_ids)
        preview = stream.json_answer(handles.written_back) if stream is not None else None
        prompt = self._asker.prompts.render(
            "global_reduce",
            example=example,
            question=delimit("QUESTION", question),
            points=delimit("POINTS", render_points(points, handles)),
        )
        return await self._asker.ask(
            "global reduce", prompt, example, lambda raw: parse_reduced(raw, handles), stream=preview
        )


def llm_query_tasks(chat: ChatModel, prompts: PromptRegistry, settings: Settings) -> QueryTasks:
    """The query tasks asking `chat`; answers are capped at `answer_max_tokens`."""
    asker = _JsonAsker(chat, prompts, settings.answer_max_tokens)
    return QueryTasks(
        namer=LLMQueryEntityNamer(asker),
        answerer=LLMContextAnswerer(asker),
        hyde=LLMHydeWriter(asker),
        primer=LLMDriftPrimer(asker),
        reducer=LLMDriftReducer(asker),
        global_mapper=LLMGlobalMapper(asker),
        global_reducer=LLMGlobalReducer(asker),
        extractive=False,
    )
