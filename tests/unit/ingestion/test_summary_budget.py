from driftrag.ingestion.llm_tasks import LLMDescriptionSummarizer
from driftrag.prompts.registry import PromptRegistry
from tests.fakes.scripted_llm import ScriptedChatResult


class _Echo:
    def __init__(self) -> None:
        self.prompts: list[str] = []

    async def chat(self, messages, *, json_mode=False, max_tokens=None, temperature=None) -> ScriptedChatResult:
        self.prompts.append(messages[-1]["content"])
        return ScriptedChatResult(text="one summary", prompt_tokens=1, completion_tokens=1)


async def test_a_much_described_entity_is_summarised_from_the_descriptions_that_fit() -> None:
    chat = _Echo()
    summarizer = LLMDescriptionSummarizer(chat, PromptRegistry.load(None), max_input_tokens=60)
    descriptions = [f"Description number {i} of the Hatter, who keeps the tea-party going." for i in range(40)]
    assert await summarizer.summarize("Hatter", descriptions) == "one summary"
    [prompt] = chat.prompts
    assert "Description number 0 " in prompt and "Description number 39 " not in prompt
