"""Fixed prompt cost of every packaged template: cl100k tokens of the prompt rendered with empty values
(so what is counted is the instructions and the answer's key description, not the question or the context).

    .venv/bin/python benchmarks/prompt_tokens.py
"""

from __future__ import annotations

from driftrag.eval.generate import PersonasPayload, QuestionsPayload
from driftrag.eval.judge import JudgeVerdict
from driftrag.ingestion.config_draft import ConfigDraftPayload
from driftrag.models.graph import ExtractionPayload, ReportPayload
from driftrag.prompts.registry import TASK_PLACEHOLDERS, PromptRegistry
from driftrag.providers.structured import describe_keys
from driftrag.providers.tokens import count_tokens
from driftrag.search.global_search.models import MapPayload
from driftrag.search.llm_tasks import EntityNames
from driftrag.search.models import AnswerPayload, ReducedAnswer

ANSWER_MODELS = {
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
    "suggest_extract_config": ConfigDraftPayload,
}


def main() -> None:
    registry = PromptRegistry.load()
    total = 0
    print(f"{'template':24} {'tokens':>7} {'shape':>8}")
    for task in sorted(TASK_PLACEHOLDERS):
        values = {slot: "" for slot in TASK_PLACEHOLDERS[task]}
        shape = describe_keys(ANSWER_MODELS[task]) if task in ANSWER_MODELS else ""
        if "answer_shape" in values:
            values["answer_shape"] = shape
        tokens = count_tokens(registry.render(task, **values))
        total += tokens
        print(f"{task:24} {tokens:7d} {count_tokens(shape):8d}")
    print(f"{'total':24} {total:7d}")


if __name__ == "__main__":
    main()
