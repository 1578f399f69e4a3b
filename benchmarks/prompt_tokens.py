"""Fixed prompt cost of every packaged template: cl100k tokens of the prompt rendered with empty values
(so what is counted is the instructions and the embedded example, not the question or the context).

    .venv/bin/python benchmarks/prompt_tokens.py
"""

from __future__ import annotations

from driftrag.eval.generate import PersonasPayload, QuestionsPayload
from driftrag.eval.judge import JudgeVerdict
from driftrag.models.graph import EXTRACTION_EXAMPLE_PASSAGE, ExtractionPayload, ReportPayload
from driftrag.prompts.registry import TASK_PLACEHOLDERS, PromptRegistry
from driftrag.providers.json_answer import json_example
from driftrag.providers.tokens import count_tokens
from driftrag.search.global_search.models import MapPayload
from driftrag.search.llm_tasks import EntityNames
from driftrag.search.models import AnswerPayload, ReducedAnswer

EXAMPLES = {
    "extract_graph": ExtractionPayload,
    "repair_json": ExtractionPayload,
    "community_report": ReportPayload,
    "query_entities": EntityNames,
    "local_answer": AnswerPayload,
    "drift_primer": AnswerPayload,
    "drift_reduce": ReducedAnswer,
    "global_map": MapPayload,
    "global_reduce": ReducedAnswer,
    "judge_pairwise": JudgeVerdict,
    "generate_personas": PersonasPayload,
    "generate_questions": QuestionsPayload,
}


def main() -> None:
    registry = PromptRegistry.load()
    total = 0
    print(f"{'template':24} {'tokens':>7} {'example':>8}")
    for task in sorted(TASK_PLACEHOLDERS):
        values = {slot: "" for slot in TASK_PLACEHOLDERS[task]}
        example = json_example(EXAMPLES[task].example()) if task in EXAMPLES else ""
        if "example" in values:
            values["example"] = example
        if "example_passage" in values:
            values["example_passage"] = EXTRACTION_EXAMPLE_PASSAGE
        tokens = count_tokens(registry.render(task, **values))
        total += tokens
        print(f"{task:24} {tokens:7d} {count_tokens(example):8d}")
    print(f"{'total':24} {total:7d}")


if __name__ == "__main__":
    main()
