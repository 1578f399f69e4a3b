"""Summaries and community reports that repeat a prompt example's names are asked again once, then
stored as placeholders, so copied text never enters a knowledge base (issue 52)."""

from __future__ import annotations

import json
from collections import deque

from driftrag.ingestion.llm_tasks import LLMCommunityReporter, LLMDescriptionSummarizer
from driftrag.ingestion.merge import summarize_all
from driftrag.ingestion.reports import build_report_context
from driftrag.models.graph import Community, MergedEntity
from driftrag.prompts.examples import EXAMPLE_ORG, EXAMPLE_PERSON
from driftrag.prompts.registry import PromptRegistry
from tests.fakes.scripted_llm import ScriptedChatResult

PROMPTS = PromptRegistry.load()
COPIED = f"{EXAMPLE_PERSON} runs the {EXAMPLE_ORG}; she hired Yan Placeholder in 2019."
DESCRIPTIONS = ["A rabbit in a waistcoat.", "The White Rabbit hurries to the Duchess."]


class QueuedChat:
    """Answers with the queued texts in turn, recording every conversation it was sent."""

    def __init__(self, *answers: str) -> None:
        self.answers = deque(answers)
        self.sent: list[list[dict[str, str]]] = []

    async def chat(self, messages, *, json_mode=False, max_tokens=None, schema=None) -> ScriptedChatResult:
        self.sent.append([dict(m) for m in messages])
        return ScriptedChatResult(text=self.answers.popleft())


async def test_a_summary_copying_the_example_is_asked_again_with_the_copy_pointed_out() -> None:
    chat = QueuedChat(COPIED, "A hurried rabbit in a waistcoat, on his way to the Duchess.")
    summary = await LLMDescriptionSummarizer(chat, PROMPTS).summarize("White Rabbit", DESCRIPTIONS)
    assert summary == "A hurried rabbit in a waistcoat, on his way to the Duchess."
    first, second = chat.sent
    assert second[:2] == [*first, {"role": "assistant", "content": COPIED}]
    assert EXAMPLE_PERSON in second[-1]["content"] and "descriptions" in second[-1]["content"]


async def test_a_summary_copying_the_example_twice_is_a_placeholder() -> None:
    chat = QueuedChat(COPIED, COPIED)
    summaries, failed = await summarize_all(
        [("entity-1", "White Rabbit", DESCRIPTIONS)], LLMDescriptionSummarizer(chat, PROMPTS)
    )
    assert failed == {"entity-1"}
    assert summaries["entity-1"] == " ".join(DESCRIPTIONS)
    assert len(chat.sent) == 2


async def test_a_summary_may_name_what_its_own_descriptions_name() -> None:
    own = ["Placeholder is the village where the story starts.", "Placeholder lies on the river."]
    chat = QueuedChat("Placeholder, a river village where the story starts.")
    summary = await LLMDescriptionSummarizer(chat, PROMPTS).summarize("Placeholder", own)
    assert summary.startswith("Placeholder") and len(chat.sent) == 1


def _context():
    entities = [
        MergedEntity(
            id=f"entity-{i}",
            name=name,
            normalised_name=name.lower(),
            type="PERSON",
            descriptions=[f"{name} is late for the Duchess."],
            source_chunk_ids=["chunk-1"],
        )
        for i, name in enumerate(["White Rabbit", "Duchess"])
    ]
    community = Community(id="community-0-0", level=0, entity_ids=[e.id for e in entities], chunk_ids=["chunk-1"])
    return build_report_context(community, {e.id: e for e in entities}, {}, {}, {}, 4000)


def _report(title: str, summary: str) -> str:
    return json.dumps(
        {
            "title": title,
            "summary": summary,
            "rating": 4,
            "rating_explanation": "A small group.",
            "findings": [{"summary": summary, "explanation": summary}],
            "citations": ["S1"],
        }
    )


async def test_a_report_copying_the_example_is_asked_again_then_stored_as_a_placeholder() -> None:
    copied = _report(f"{EXAMPLE_ORG} and its staff", COPIED)
    chat = QueuedChat(copied, _report("The White Rabbit and the Duchess", "The Rabbit serves the Duchess [S1]."))
    report = await LLMCommunityReporter(chat, PROMPTS).report(_context())
    assert not report.failed and report.title == "The White Rabbit and the Duchess"
    # The re-ask says why.
    assert EXAMPLE_PERSON in chat.sent[1][-1]["content"]

    chat = QueuedChat(copied, copied)
    report = await LLMCommunityReporter(chat, PROMPTS).report(_context())
    assert report.failed and report.rating == 0
    assert "Placeholder" not in report.title + report.summary
    assert "prompt example" in report.rating_explanation
