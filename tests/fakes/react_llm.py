"""TEST DOUBLE: `ScriptedReActLLM`, a deterministic LlamaIndex `CustomLLM` that plays one ReAct agent turn.

It stands in for the agent's model (unreachable here): asked first, it calls the one tool it is given
with the user's question; shown the tool's observation, it answers with that observation word for
word. It never writes an answer of its own, so what the agent says is what the tool returned.
"""

from __future__ import annotations

import json
import re
from typing import Any

from llama_index.core.base.llms.types import CompletionResponse, CompletionResponseGen, LLMMetadata
from llama_index.core.llms import CustomLLM

_OBSERVATION = re.compile(r"Observation:\s*(.+?)\s*(?:assistant:\s*)?$", re.DOTALL)


class ScriptedReActLLM(CustomLLM):
    tool_name: str
    question: str

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(model_name="scripted-react", is_chat_model=False)

    def _reply(self, prompt: str) -> str:
        # The ReAct system prompt shows an example observation; only the conversation's own count.
        conversation = prompt.rsplit(self.question, 1)[-1]
        observed = _OBSERVATION.search(conversation)
        if observed:
            return f"Thought: I can answer without using any more tools.\nAnswer: {observed.group(1).strip()}"
        action_input = json.dumps({"input": self.question})
        return f"Thought: I need the knowledge base.\nAction: {self.tool_name}\nAction Input: {action_input}"

    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        return CompletionResponse(text=self._reply(prompt))

    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponseGen:
        text = self._reply(prompt)

        def gen() -> CompletionResponseGen:
            yield CompletionResponse(text=text, delta=text)

        return gen()
