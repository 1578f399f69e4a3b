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
from driftrag.providers.json_answer import InvalidModelOutput, ask_json, extract_json_object, json_example
from driftrag.providers.tokens import words_within
from driftrag.search.drift.models import IntermediateAnswer
from driftrag.search.models import AnswerPayload, ReducedAnswer, SearchContext
from driftrag.search.tasks import QueryTasks
from driftrag.settings import Settings

_MARKER = re.compile(r"<<<(?:END_)?[A-Z_]+>>>")
_NODE_ID = re.compile(r"\b(?:chunk|entity|relationship|community)-[A-Za-z0-9_-]*[A-Za-z0-9]")
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
_BRACKETED_ID = re.compile(r"\[((?:chunk|entity|relationship|community)-[A-Za-z0-9_-]*[A-Za-z0-9])\]")
_HANDLE = re.compile(r"\[(S\d+)\]", re.IGNORECASE)
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


class Handles:
    """Short citation handles (`S1`, `S2`…) shown to the model instead of 20-32 character ids, and
    mapped back here: the one place where the LLM answer path turns handles into ids."""

    def __init__(self, ids: Iterable[str]) -> None:
        self.ids = {f"S{n}": source_id for n, source_id in enumerate(dict.fromkeys(ids), start=1)}
        self._handles = {source_id: handle for handle, source_id in self.ids.items()}

    def show(self, text: str) -> str:
        """`text` with every `[id]` of a known source written as its `[Sn]` handle."""
        return _BRACKETED_ID.sub(lambda m: f"[{self._handles.get(m.group(1), m.group(1))}]", text)

    def resolve(self, answer: str, citations: Iterable[str]) -> tuple[str, list[str], int]:
        """The answer with inline handles written back as ids, the cited ids (list first, then inline),
        and how many cited handles or ids were not shown to the model (they are dropped)."""
        mentioned = [c.strip("[] ") for c in citations] + _HANDLE.findall(answer) + _NODE_ID.findall(answer)
        known, unknown = [], set()
        for ref in dict.fromkeys(mentioned):
            source_id = self.ids.get(ref.upper(), ref if ref in self._handles else None)
            if source_id is None:
                unknown.add(ref)
            else:
                known.append(source_id)
        text = _HANDLE.sub(lambda m: f"[{self.ids.get(m.group(1).upper(), m.group(1))}]", answer)
        return text, list(dict.fromkeys(known)), len(unknown)


def cited_ids(answer: str, citations: Iterable[str], citable: set[str]) -> list[str]:
    """Ids cited in the list or inline in the answer, in that order, kept only when citable."""
    mentioned = [*citations, *_NODE_ID.findall(answer)]
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

    async def ask(self, task: str, prompt: str, example: str, parse: Callable[[str], T]) -> T:
        answer = await ask_json(self.chat, self.prompts, prompt, parse, example, max_tokens=self.max_tokens)
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
    return await asker.ask(label, prompt, example, lambda raw: parse_answer(raw, handles, max_follow_ups))


class LLMContextAnswerer:
    def __init__(self, asker: _JsonAsker) -> None:
        self._asker = asker

    async def answer(
        self, question: str, context: SearchContext, *, max_follow_ups: int = 0, user_question: str | None = None
    ) -> AnswerPayload:
        # A DRIFT step shows the user's question above its own, so that the score and the follow-ups
        # are measured against what the user asked, not against the side question.
        shown = f"\n{delimit('USER_QUESTION', user_question)}\n" if user_question else ""
        return await _answer_over(
            self._asker, "answer", "local_answer", "context", question, context, max_follow_ups, user_question=shown
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

    async def reduce(self, question: str, answers: Sequence[IntermediateAnswer]) -> ReducedAnswer:
        example = json_example(ReducedAnswer.example())
        handles = Handles(source_id for item in answers for source_id in item.source_ids)
        prompt = self._asker.prompts.render(
            "drift_reduce",
            example=example,
            question=delimit("QUESTION", question),
            answers=delimit("ANSWERS", render_answers(answers, handles)),
        )
        return await self._asker.ask("reduce", prompt, example, lambda raw: parse_reduced(raw, handles))


def llm_query_tasks(chat: ChatModel, prompts: PromptRegistry, settings: Settings) -> QueryTasks:
    """The five query tasks asking `chat`; answers are capped at `answer_max_tokens`."""
    asker = _JsonAsker(chat, prompts, settings.answer_max_tokens)
    return QueryTasks(
        namer=LLMQueryEntityNamer(asker),
        answerer=LLMContextAnswerer(asker),
        hyde=LLMHydeWriter(asker),
        primer=LLMDriftPrimer(asker),
        reducer=LLMDriftReducer(asker),
        extractive=False,
    )
