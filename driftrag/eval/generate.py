"""Draft evaluation questions with a model, as the GraphRAG paper does: personas x tasks x questions.

From a description of the corpus, the model imagines `personas` users, each with `tasks` tasks (one
call); then, for each (persona, task), it writes `questions` questions (one call each, in parallel).
The drafts come out in the question-set schema (type `global` by default, no reference answer or
evidence): a researcher reviews them before they become a set. Needs a model.

The description is the user's, or the kb's highest-rated community reports (titles and summaries).
"""

from __future__ import annotations

import asyncio
from typing import Annotated

import json_repair
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from driftrag.errors import ConfigurationError
from driftrag.eval.questions import QuestionItem, QuestionType, normalise
from driftrag.models.bounds import Cap
from driftrag.models.storage import GraphListing
from driftrag.prompts.registry import PromptRegistry
from driftrag.providers.chat import ChatModel
from driftrag.providers.json_answer import InvalidModelOutput, ask_json
from driftrag.providers.structured import describe_keys
from driftrag.providers.tokens import tokenizer


class Persona(BaseModel):
    model_config = ConfigDict(extra="ignore")

    name: Annotated[str, Cap(200)] = Field(min_length=1, description="A role, such as 'a literature teacher'.")
    description: Annotated[str, Cap(1000)] = ""
    tasks: Annotated[list[Annotated[str, Cap(500)]], Cap(20)] = Field(min_length=1)


class PersonasPayload(BaseModel):
    model_config = ConfigDict(extra="ignore")

    personas: Annotated[list[Persona], Cap(20)] = Field(min_length=1)


class QuestionsPayload(BaseModel):
    model_config = ConfigDict(extra="ignore")

    questions: Annotated[list[Annotated[str, Cap(500)]], Cap(50)] = Field(min_length=1)


class GeneratedQuestions(BaseModel):
    """The drafts, where each came from, and what generating them cost."""

    model_config = ConfigDict(extra="forbid")

    items: list[QuestionItem]
    origins: dict[str, str] = Field(description="Question id -> 'persona / task'.")
    personas: list[Persona]
    failures: list[str]
    llm_calls: int
    prompt_tokens: int
    completion_tokens: int


def _parser(model: type[BaseModel]):
    def parse(raw: str):
        data = json_repair.loads(raw) if raw.strip() else None
        if isinstance(data, list) and model is QuestionsPayload:
            data = {"questions": data}
        try:
            return model.model_validate(data)
        except ValidationError as exc:
            raise InvalidModelOutput(f"invalid answer: {exc.errors()[0]['msg']}") from None

    return parse


async def kb_description(graph: GraphListing, kb: str, max_tokens: int) -> str:
    """The kb's community reports, highest-rated (then broadest) first, as 'title: summary' lines."""
    communities = await graph.communities(kb)
    reports = [c for c in communities if c.get("title")]
    if not reports:
        raise ConfigurationError(f"kb {kb} has no community reports to describe it: give --description")
    reports.sort(key=lambda c: (-(c.get("rating") or 0), c.get("level") or 0, c["id"]))
    count = tokenizer()
    lines: list[str] = []
    used = 0
    for report in reports:
        line = f"- {report['title']}: {report.get('summary') or ''}".strip()
        used += len(count(line))
        if used > max_tokens and lines:
            break
        lines.append(line)
    return "\n".join(lines)


async def generate_questions(
    chat: ChatModel | None,
    description: str,
    *,
    personas: int = 5,
    tasks: int = 5,
    questions: int = 5,
    question_type: QuestionType = "global",
    id_prefix: str = "gen-",
    max_tokens: int = 2000,
    concurrency: int = 8,
    prompts: PromptRegistry | None = None,
) -> GeneratedQuestions:
    if chat is None:
        raise ConfigurationError(
            "generating questions needs a model: set OPENAI_API_KEY (and OPENAI_BASE_URL for an "
            "OpenAI-compatible server); the offline mode cannot draft questions"
        )
    if not description.strip():
        raise ConfigurationError("the corpus description is empty")
    prompts = prompts or PromptRegistry.load()
    calls = prompt_tokens = completion_tokens = 0
    prompt = prompts.render(
        "generate_personas",
        answer_shape=describe_keys(PersonasPayload),
        summary=description,
        n_personas=str(personas),
        n_tasks=str(tasks),
    )
    first = await ask_json(chat, prompts, prompt, _parser(PersonasPayload), PersonasPayload, max_tokens=max_tokens)
    calls, prompt_tokens, completion_tokens = first.attempts, first.prompt_tokens, first.completion_tokens
    if first.value is None:
        raise InvalidModelOutput(f"the model gave no usable personas: {first.error}")
    cast = first.value.personas[:personas]
    pairs = [(persona, task) for persona in cast for task in persona.tasks[:tasks]]
    limit = asyncio.Semaphore(concurrency)
    shape = describe_keys(QuestionsPayload)

    async def ask(persona: Persona, task: str):
        text = prompts.render(
            "generate_questions",
            answer_shape=shape,
            summary=description,
            persona=f"{persona.name}: {persona.description}".strip(": "),
            task=task,
            n_questions=str(questions),
        )
        async with limit:
            return await ask_json(
                chat, prompts, text, _parser(QuestionsPayload), QuestionsPayload, max_tokens=max_tokens
            )

    answers = await asyncio.gather(*(ask(persona, task) for persona, task in pairs))
    items: list[QuestionItem] = []
    origins: dict[str, str] = {}
    failures: list[str] = []
    seen: set[str] = set()
    for (persona, task), answer in zip(pairs, answers, strict=True):
        calls += answer.attempts
        prompt_tokens += answer.prompt_tokens
        completion_tokens += answer.completion_tokens
        if answer.value is None:
            failures.append(f"{persona.name} / {task}: {answer.error}")
            continue
        for text in answer.value.questions[:questions]:
            key = normalise(text).lower()
            if not key or key in seen:
                continue
            seen.add(key)
            item = QuestionItem(id=f"{id_prefix}{len(items) + 1:03d}", type=question_type, question=normalise(text))
            items.append(item)
            origins[item.id] = f"{persona.name} / {task}"
    return GeneratedQuestions(
        items=items,
        origins=origins,
        personas=cast,
        failures=failures,
        llm_calls=calls,
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens,
    )
