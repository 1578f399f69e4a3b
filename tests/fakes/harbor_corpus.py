"""TEST DATA and DOUBLES for ingestion tests: a small original corpus and two ScriptedChatModel variants.

The three documents share capitalised multi-word names ("Captain Mirela Voss", "Harbor Town",
"Amber Lantern") so their entities merge across documents; each also has names of its own.
`DescriptiveChatModel` describes each entity/relationship by the sentence it appears in, so an entity
seen in several sentences gets several distinct descriptions (and a summary call);
`SlowChatModel` waits before every answer (used to kill a run in the middle of extraction).
"""

from __future__ import annotations

import asyncio
import json
import re

from tests.fakes.scripted_llm import ScriptedChatModel, scripted_graph

VOYAGE = (
    "Captain Mirela Voss sailed the Amber Lantern out of Harbor Town before dawn. "
    "Her first mate, Jonas Pell, kept the charts dry beneath an oilskin while the tide turned. "
    "by noon the Amber Lantern had passed the Grey Reef, where gulls circled the broken masts of older ships. "
    "Captain Mirela Voss told Jonas Pell that the Grey Reef had swallowed her uncle's schooner forty years ago. "
    "that evening the crew sang quietly, and the lamp at the bow burned a steady orange. "
    "Jonas Pell wrote in the log that the wind came from the south and smelled of cedar smoke."
)

MARKET = (
    "the fish market of Harbor Town opens when the bells of the Salt Chapel ring six times. "
    "merchants say that Captain Mirela Voss pays in silver and never haggles over the price of rope. "
    "old Widow Brannoch sells lamp oil to the Amber Lantern and to every other ship that docks at the long pier. "
    "she remembers when Harbor Town had only four houses and a single well. "
    "children gather at her stall to hear stories about the Salt Chapel and the drowned bell in its tower. "
    "rain fell on the awnings all afternoon, yet the market stayed crowded until dusk."
)

MONASTERY = (
    "far above the cliffs stands the Glass Monastery, where Brother Anselm Hale keeps a library of tide tables. "
    "once a year he walks down to Harbor Town to trade copied charts for candles and salt. "
    "Brother Anselm Hale believes that the Grey Reef moves a few feet every winter. "
    "the monks grow bitter herbs in terraces cut into the rock, and they speak little. "
    "visitors who climb the stair count nine hundred steps before they reach the Glass Monastery gate."
)

CORPUS = {"voyage.txt": VOYAGE, "market.txt": MARKET, "monastery.txt": MONASTERY}

_SENTENCE = re.compile(r"(?<=[.!?])\s+")


class DescriptiveChatModel(ScriptedChatModel):
    """Scripted extraction whose descriptions quote the sentence an entity or relationship is in."""

    def _answer_extract(self, messages: list[dict[str, str]]) -> str:
        text = self._chunk_text(messages)
        if self._mode(text) is not None:
            return super()._answer_extract(messages)
        return json.dumps(descriptive_graph(text))

    def _answer_repair(self, messages: list[dict[str, str]]) -> str:
        answer = super()._answer_repair(messages)
        if '"entities"' in answer and self._mode(self._chunk_text(messages)) is None:
            return json.dumps(descriptive_graph(self._chunk_text(messages)))
        return answer


def descriptive_graph(text: str) -> dict:
    graph = scripted_graph(text)
    sentences = [s.strip() for s in _SENTENCE.split(text) if s.strip()]

    def sentence_of(*names: str) -> str:
        return next((s for s in sentences if all(n in s for n in names)), text[:80])

    for entity in graph["entities"]:
        entity["description"] = f"{entity['name']} appears where: {sentence_of(entity['name'])}"
    for rel in graph["relationships"]:
        rel["description"] = f"Together in: {sentence_of(rel['source'], rel['target'])}"
    return graph


class SlowChatModel(DescriptiveChatModel):
    """A DescriptiveChatModel that sleeps before every answer."""

    def __init__(self, *, delay_s: float = 0.3, **kwargs) -> None:
        super().__init__(**kwargs)
        self.delay_s = delay_s

    async def chat(self, messages, **kwargs):
        await asyncio.sleep(self.delay_s)
        return await super().chat(messages, **kwargs)
