"""LLM implementations of the query tasks (`driftrag.search.tasks`), on top of any `ChatModel`.

Each JSON task shows a filled-in example of its pydantic model in the prompt (every field present),
parses the answer with `json_repair` (`extract_json_object`), coerces what is easy to coerce, and
validates with the same model. An answer that cannot be used is re-asked once by the one JSON-answer
helper (`driftrag.providers.json_answer`). Citations are kept only when the cited id was shown to the
model (in the `citations` list or inline as `[id]` in the answer).

Weak and local models (issue 34): parsing is tolerant and every tolerance is accounted for in the
query's `DegradedLog` (the result's `degraded`): `<think>` blocks and code fences are stripped, a
missing or malformed score becomes `NEUTRAL_SCORE`, an answer under another common key ("response",
"text", "Answer"…) is the answer, and a re-asked model that still writes prose, not JSON, has that prose
taken as its answer. An answer that stays unusable then falls back, when the tasks were built with
`fallback` (the offline extractive tasks, as the composition root wires them): the extractive answer,
map or reduce over the same input; the DRIFT primer gives no answer (DRIFT then runs the question's own
local search); a DRIFT follow-up is dropped (`InvalidModelOutput`, which DRIFT records as a failed
follow-up). Without `fallback`, an unusable answer raises `InvalidModelOutput` (a `ModelError`). A failed
call (backend down, time-out, budget) is never replaced: it raises as before.

Question, context and template travel between `<<<NAME>>>` / `<<<END_NAME>>>` lines; those markers
are removed from the values first, so a hostile question cannot close its section early.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from typing import Annotated, Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from driftrag.models.bounds import Cap
from driftrag.models.search import Source
from driftrag.prompts.registry import PromptRegistry
from driftrag.providers.chat import ChatModel, turn
from driftrag.providers.handles import NODE_ID, Handles
from driftrag.providers.json_answer import (
    AnswerPreview,
    InvalidModelOutput,
    ask_json,
    extract_json_object,
    strip_wrappers,
)
from driftrag.providers.structured import describe_keys
from driftrag.providers.tokens import words_within
from driftrag.search.drift.models import IntermediateAnswer
from driftrag.search.global_search.models import GlobalPoint, KeyPoint, MapPayload, ReportBatch
from driftrag.search.models import (
    NEUTRAL_SCORE,
    AnswerPayload,
    DegradedLog,
    DegradedReason,
    ReducedAnswer,
    SearchContext,
    cited_answer_payload,
)
from driftrag.search.streaming import AnswerStream
from driftrag.search.tasks import (
    ContextAnswerer,
    DriftReducer,
    GlobalMapper,
    GlobalReducer,
    QueryEntityNamer,
    QueryTasks,
)
from driftrag.settings import Settings

_MARKER = re.compile(r"<<<(?:END_)?[A-Z_]+>>>")
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
T = TypeVar("T")
HYDE_MIN_WORDS = 50
# Where models put an answer's text besides "answer" (matched in any case: "Answer", "RESPONSE"…).
ANSWER_KEYS = ("answer", "response", "text", "content", "result", "final_answer", "output", "reply", "summary")


class EntityNames(BaseModel):
    """The JSON protocol of the query-entity namer."""

    model_config = ConfigDict(extra="forbid")

    names: Annotated[list[Annotated[str, Cap(200)]], Cap(20)] = Field(
        description="Entity names as written in the source text."
    )


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


def _tolerant_score(value: Any, tolerated: list[DegradedReason]) -> int:
    """The score, or `NEUTRAL_SCORE` (counted in `tolerated`) when it is missing or not a number: a good
    answer is worth more than its self-assessment."""
    if value is None:
        tolerated.append("missing_score")
        return NEUTRAL_SCORE
    try:
        return _score(value)
    except InvalidModelOutput:
        tolerated.append("malformed_score")
        return NEUTRAL_SCORE


def _text(value: Any) -> str:
    if isinstance(value, list):
        return "\n".join(_text(v) for v in value)
    return "" if value is None else str(value).strip()


def _plain_text(value: Any) -> str:
    """Text, a number ("how many…?"), or a list of texts; an object is not an answer (`{"answer": {…}}` is
    a wrong shape, not text to show)."""
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return "\n".join(v.strip() for v in value if v.strip())
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    return value.strip() if isinstance(value, str) else ""


def answer_field(obj: dict[str, Any]) -> tuple[str, bool]:
    """The answer text of a JSON answer and whether it was found under another key than "answer"."""
    exact = _plain_text(obj.get("answer"))
    if exact:
        return exact, False
    by_key = {str(key).casefold(): value for key, value in obj.items()}
    for key in ANSWER_KEYS:
        text = _plain_text(by_key.get(key))
        if text:
            return text, True
    return "", False


def _unwrapped(raw: str) -> tuple[dict[str, Any], list[DegradedReason]]:
    text, removed = strip_wrappers(raw)
    return extract_json_object(text), list(removed)  # type: ignore[arg-type]


def cited_ids(answer: str, citations: Iterable[str], citable: set[str]) -> list[str]:
    """Ids cited in the list or inline in the answer, in that order, kept only when citable."""
    mentioned = [*citations, *NODE_ID.findall(answer)]
    return [i for i in dict.fromkeys(mentioned) if i in citable]


def _handles(citable: set[str] | Handles) -> Handles:
    return citable if isinstance(citable, Handles) else Handles(sorted(citable))


def parse_answer(raw: str, citable: set[str] | Handles, max_follow_ups: int) -> AnswerPayload:
    """An `AnswerPayload` from a JSON answer, tolerating what weak models get wrong (module docstring)."""
    obj, tolerated = _unwrapped(raw)
    answer, elsewhere = answer_field(obj)
    if not answer:
        raise InvalidModelOutput('the JSON object has no "answer" text')
    if elsewhere:
        tolerated.append("answer_key")
    handles = _handles(citable)
    answer, citations, unknown = handles.resolve(answer, _strings(_as_list(obj.get("citations"))))
    try:
        return AnswerPayload(
            answer=answer,
            score=_tolerant_score(obj.get("score"), tolerated),
            follow_up_queries=_strings(_as_list(obj.get("follow_up_queries")))[: max(max_follow_ups, 0)],
            citations=citations,
            unknown_citations=unknown,
            tolerated=tolerated or None,
        )
    except ValidationError as exc:
        raise InvalidModelOutput(f"the answer does not match the schema: {exc.errors()[:3]}") from exc


def prose_text(raw: str) -> tuple[str, list[DegradedReason]]:
    """The answer of a model that wrote prose instead of JSON (think blocks and fences stripped), or ""
    when it holds a JSON object after all (a wrong object is not an answer) or nothing."""
    text, removed = strip_wrappers(raw)
    if not text or "{" in text:
        return "", []
    return text, [*removed, "prose_answer"]  # type: ignore[list-item]


def prose_answer(raw: str, citable: set[str] | Handles) -> AnswerPayload | None:
    """A prose answer as an `AnswerPayload`: its inline `[S1]` citations resolved, the neutral score."""
    text, tolerated = prose_text(raw)
    if not text:
        return None
    answer, citations, unknown = _handles(citable).resolve(text, [])
    return AnswerPayload(
        answer=answer,
        score=NEUTRAL_SCORE,
        follow_up_queries=[],
        citations=citations,
        unknown_citations=unknown,
        tolerated=tolerated,
    )


def parse_reduced(raw: str, citable: set[str] | Handles) -> ReducedAnswer:
    obj, tolerated = _unwrapped(raw)
    answer, elsewhere = answer_field(obj)
    if not answer:
        raise InvalidModelOutput('the JSON object has no "answer" text')
    if elsewhere:
        tolerated.append("answer_key")
    answer, citations, unknown = _handles(citable).resolve(answer, _strings(_as_list(obj.get("citations"))))
    return ReducedAnswer(answer=answer, citations=citations, unknown_citations=unknown, tolerated=tolerated or None)


def prose_reduced(raw: str, citable: set[str] | Handles) -> ReducedAnswer | None:
    text, tolerated = prose_text(raw)
    if not text:
        return None
    answer, citations, unknown = _handles(citable).resolve(text, [])
    return ReducedAnswer(answer=answer, citations=citations, unknown_citations=unknown, tolerated=tolerated)


def parse_map(raw: str, handles: Handles, max_points: int) -> MapPayload:
    """Key points with their handles resolved to report ids; an empty list is a valid "nothing here"."""
    obj, tolerated = _unwrapped(raw)
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
        score = _tolerant_score(item.get("score"), tolerated)
        points.append(KeyPoint(description=text, score=score, citations=citations))
    # One entry per kind of tolerance: a batch of ten unscored points is one missing score, not ten.
    return MapPayload(
        points=points[: max(max_points, 0)],
        unknown_citations=unknown,
        tolerated=list(dict.fromkeys(tolerated)) or None,
    )


def render_points(points: Sequence[GlobalPoint], handles: Handles) -> str:
    """Key points for the global reduce, each headed by its id and score, with its reports as handles."""
    blocks = []
    for point in points:
        sources = ", ".join(handles.show(f"[{report_id}]") for report_id in point.report_ids) or "none"
        text = handles.show(point.description.strip())
        blocks.append(f"[{point.id}] (score {point.score})\n{text}\nSources: {sources}")
    return "\n\n".join(blocks)


def parse_names(raw: str) -> list[str]:
    obj, _ = _unwrapped(raw)
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
    """The tasks' shared chat, prompts, answer cap and degradation log; `ask` raises `InvalidModelOutput`
    when the answer stays unusable (a failed call raises its own error)."""

    def __init__(
        self, chat: ChatModel, prompts: PromptRegistry, max_tokens: int, log: DegradedLog | None = None
    ) -> None:
        self.chat = chat
        self.prompts = prompts
        self.max_tokens = max_tokens
        self.log = log if log is not None else DegradedLog()

    async def ask(
        self,
        step: str,
        prompt: str,
        schema: type[BaseModel],
        parse: Callable[[str], T],
        stream: AnswerPreview | None = None,
        prose: Callable[[str], T | None] | None = None,
    ) -> T:
        """The parsed answer; with `prose`, a last answer without JSON is read as prose (after the re-ask
        only: the re-ask gives the model its chance at the protocol first)."""
        answer = await ask_json(
            self.chat, self.prompts, prompt, parse, schema, max_tokens=self.max_tokens, stream=stream
        )
        value = answer.value
        if value is None and answer.failure is None and prose is not None and answer.raw:
            value = prose(answer.raw)
        if value is None:
            answer.unwrap(step)  # raises: the call's own error, else InvalidModelOutput
            raise AssertionError("unreachable")
        for reason in getattr(value, "tolerated", None) or ():
            self.log.add(step, reason)
        return value

    def fell_back(self, step: str, error: InvalidModelOutput, instead: str) -> None:
        self.log.add(step, "fallback", f"{instead}: {error}")


class LLMQueryEntityNamer:
    def __init__(self, asker: _JsonAsker, fallback: QueryEntityNamer | None = None) -> None:
        self._asker = asker
        self._fallback = fallback

    async def entity_names(self, question: str) -> list[str]:
        prompt = self._asker.prompts.render(
            "query_entities", answer_shape=describe_keys(EntityNames), question=delimit("QUESTION", question)
        )
        try:
            return await self._asker.ask("query entities", prompt, EntityNames, parse_names)
        except InvalidModelOutput as exc:
            if self._fallback is None:
                raise
            self._asker.fell_back("query entities", exc, "the question's capitalised names")
            return await self._fallback.entity_names(question)


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
    prompt = asker.prompts.render(
        template,
        answer_shape=describe_keys(AnswerPayload),
        question=delimit("QUESTION", question),
        max_follow_ups=str(max(max_follow_ups, 0)),
        **{context_slot: delimit("CONTEXT", handles.show(context.text))},
        **extra,
    )
    preview = stream.json_answer(handles.written_back) if stream is not None else None
    return await asker.ask(
        label,
        prompt,
        cited_answer_payload(tuple(handles.ids)),
        lambda raw: parse_answer(raw, handles, max_follow_ups),
        preview,
        prose=lambda raw: prose_answer(raw, handles),
    )


class LLMContextAnswerer:
    def __init__(self, asker: _JsonAsker, fallback: ContextAnswerer | None = None) -> None:
        self._asker = asker
        self._fallback = fallback

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
        step = "follow-up" if user_question else "answer"
        try:
            return await _answer_over(
                self._asker,
                step,
                "local_answer",
                "context",
                question,
                context,
                max_follow_ups,
                stream,
                user_question=shown,
            )
        except InvalidModelOutput as exc:
            if self._fallback is None:
                raise
            if user_question:
                # A DRIFT follow-up is one of many: dropped (DRIFT records it as failed), the others answer.
                self._asker.log.add(step, "dropped", f"{question[:120]}: {exc}")
                raise
            self._asker.fell_back(step, exc, "the offline extractive answer over the same context")
            if stream is not None:
                await stream.reset("the model's answer could not be used: an extractive answer follows")
            return await self._fallback.answer(
                question, context, max_follow_ups=max_follow_ups, user_question=user_question, stream=stream
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
        # A reasoning model's think block would only blur the probe's embedding.
        text, removed = strip_wrappers(result.text)
        if "think_block" in removed:
            self._asker.log.add("hyde", "think_block")
        # An empty report would search with nothing: the question itself is the better probe.
        return text or question


class LLMDriftPrimer:
    def __init__(self, asker: _JsonAsker, fallback: bool = False) -> None:
        self._asker = asker
        self._fallback = fallback

    async def prime(
        self, question: str, reports: SearchContext, *, max_follow_ups: int, entities: Sequence[Source] = ()
    ) -> AnswerPayload:
        # The model writes its follow-ups from the reports; the neighbourhood's names still decide, in
        # DRIFT, which entities each follow-up targets (dedup), and listing them would grow every prompt.
        del entities
        try:
            return await _answer_over(
                self._asker, "primer", "drift_primer", "reports", question, reports, max_follow_ups
            )
        except InvalidModelOutput as exc:
            if not self._fallback:
                raise
            # No answer and no follow-ups: DRIFT then searches the question itself, locally.
            self._asker.fell_back("primer", exc, "the question's own local search")
            return AnswerPayload(answer="", score=0, follow_up_queries=[], citations=[])


class LLMDriftReducer:
    def __init__(self, asker: _JsonAsker, fallback: DriftReducer | None = None) -> None:
        self._asker = asker
        self._fallback = fallback

    async def reduce(
        self, question: str, answers: Sequence[IntermediateAnswer], *, stream: AnswerStream | None = None
    ) -> ReducedAnswer:
        handles = Handles(source_id for item in answers for source_id in item.source_ids)
        prompt = self._asker.prompts.render(
            "drift_reduce",
            answer_shape=describe_keys(ReducedAnswer),
            question=delimit("QUESTION", question),
            answers=delimit("ANSWERS", render_answers(answers, handles)),
        )
        preview = stream.json_answer(handles.written_back) if stream is not None else None
        try:
            return await self._asker.ask(
                "reduce",
                prompt,
                ReducedAnswer,
                lambda raw: parse_reduced(raw, handles),
                preview,
                prose=lambda raw: prose_reduced(raw, handles),
            )
        except InvalidModelOutput as exc:
            if self._fallback is None:
                raise
            self._asker.fell_back("reduce", exc, "the offline extractive reduce of the same answers")
            if stream is not None:
                await stream.reset("the model's answer could not be used: an extractive answer follows")
            return await self._fallback.reduce(question, answers, stream=stream)


class LLMGlobalMapper:
    def __init__(self, asker: _JsonAsker, fallback: GlobalMapper | None = None) -> None:
        self._asker = asker
        self._fallback = fallback

    async def map(self, question: str, batch: ReportBatch, *, max_points: int) -> MapPayload:
        handles = Handles(source.id for source in batch.context.sources)
        prompt = self._asker.prompts.render(
            "global_map",
            answer_shape=describe_keys(MapPayload),
            question=delimit("QUESTION", question),
            reports=delimit("REPORTS", handles.show(batch.context.text)),
            max_points=str(max(max_points, 0)),
        )
        try:
            return await self._asker.ask(
                "global map", prompt, MapPayload, lambda raw: parse_map(raw, handles, max_points)
            )
        except InvalidModelOutput as exc:
            if self._fallback is None:
                raise
            self._asker.fell_back("global map", exc, f"the offline key sentences of batch {batch.index + 1}")
            return await self._fallback.map(question, batch, max_points=max_points)


class LLMGlobalReducer:
    def __init__(self, asker: _JsonAsker, fallback: GlobalReducer | None = None) -> None:
        self._asker = asker
        self._fallback = fallback

    async def reduce(
        self, question: str, points: Sequence[GlobalPoint], *, stream: AnswerStream | None = None
    ) -> ReducedAnswer:
        handles = Handles(report_id for point in points for report_id in point.report_ids)
        preview = stream.json_answer(handles.written_back) if stream is not None else None
        prompt = self._asker.prompts.render(
            "global_reduce",
            answer_shape=describe_keys(ReducedAnswer),
            question=delimit("QUESTION", question),
            points=delimit("POINTS", render_points(points, handles)),
        )
        try:
            return await self._asker.ask(
                "global reduce",
                prompt,
                ReducedAnswer,
                lambda raw: parse_reduced(raw, handles),
                stream=preview,
                prose=lambda raw: prose_reduced(raw, handles),
            )
        except InvalidModelOutput as exc:
            if self._fallback is None:
                raise
            self._asker.fell_back("global reduce", exc, "the offline extractive reduce of the same key points")
            if stream is not None:
                await stream.reset("the model's answer could not be used: an extractive answer follows")
            return await self._fallback.reduce(question, points, stream=stream)


def llm_query_tasks(
    chat: ChatModel, prompts: PromptRegistry, settings: Settings, fallback: QueryTasks | None = None
) -> QueryTasks:
    """The query tasks asking `chat`; answers are capped at `answer_max_tokens`. With `fallback` (the
    offline extractive tasks), a step whose answer stays unusable falls back (module docstring)."""
    log = DegradedLog()
    asker = _JsonAsker(chat, prompts, settings.answer_max_tokens, log)
    spare = fallback
    return QueryTasks(
        namer=LLMQueryEntityNamer(asker, spare.namer if spare else None),
        answerer=LLMContextAnswerer(asker, spare.answerer if spare else None),
        hyde=LLMHydeWriter(asker),
        primer=LLMDriftPrimer(asker, fallback=spare is not None),
        reducer=LLMDriftReducer(asker, spare.reducer if spare else None),
        global_mapper=LLMGlobalMapper(asker, spare.global_mapper if spare else None),
        global_reducer=LLMGlobalReducer(asker, spare.global_reducer if spare else None),
        extractive=False,
        degraded=log,
    )
