"""`driftrag eval …`: the research evaluation harness."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from driftrag.cli.common import (
    DriftTyper,
    JsonOption,
    KbOption,
    _arun,
    _emit,
    _run,
    _valid_kb,
    app,
    err_console,
    load_settings,
)
from driftrag.search.modes import MODE_NAMES
from driftrag.wording import plural

# --- evaluation --------------------------------------------------------------------------------------

eval_app = DriftTyper(help="Research evaluation: run methods on a question set, judge answers, report.")
app.add_typer(eval_app, name="eval")

ResultsOption = Annotated[Path, typer.Option("--results", help="Results folder of `driftrag eval run`.")]


def _budgets_option(text: str | None) -> str | None:
    from driftrag.eval.runner import parse_budgets

    if text is None:
        return None
    try:
        return ",".join(map(str, parse_budgets(text)))
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None


BudgetOption = Annotated[
    str | None,
    typer.Option(
        "--budget",
        help="Context budgets in cl100k tokens, comma-separated (2000,4000,8000): run runs every method at the "
        "largest, the report cuts every method's ranked sources to each (default: the run's budgets, else "
        "DRIFTRAG_LOCAL_CONTEXT_TOKENS).",
        callback=_budgets_option,
    ),
]


def _methods_option(text: str | None) -> str | None:
    from driftrag.eval.methods import parse_methods

    if text is None:
        return None
    try:
        return ",".join(parse_methods(text))
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None


def _aa_option(text: str | None) -> str | None:
    if text is not None and text.strip().lower() == "none":
        return "none"
    return _methods_option(text)


def _split_option(text: str) -> str:
    from driftrag.eval.questions import SPLIT_CHOICES

    if text not in SPLIT_CHOICES:
        raise typer.BadParameter(f"one of {', '.join(SPLIT_CHOICES)}")
    return text


def _row_bar(bar, label: str):
    task = bar.add_task(label, total=None)

    def advance(_row, done: int, total: int) -> None:
        bar.update(task, completed=done, total=total)

    return advance


@eval_app.command(
    "run", examples=["driftrag eval run --kb alice --questions data/questions/alice.jsonl --out runs/alice"]
)
def eval_run(
    ctx: typer.Context,
    kb: KbOption,
    questions: Annotated[Path, typer.Option("--questions", help="Question set (JSONL).")],
    out: Annotated[Path, typer.Option("--out", help="Results folder; an existing run there is resumed.")],
    methods: Annotated[
        str,
        typer.Option(
            "--methods",
            help=f"Comma-separated, from: {', '.join(MODE_NAMES)} (default: all of them).",
            callback=_methods_option,
        ),
    ] = ",".join(MODE_NAMES),
    repeats: Annotated[int, typer.Option("--repeats", min=1, help="Runs of each question and method.")] = 1,
    budget: BudgetOption = None,
    retry_errors: Annotated[
        bool, typer.Option("--retry-errors/--keep-errors", help="Run again the rows that recorded an error.")
    ] = True,
    split: Annotated[
        str,
        typer.Option(
            "--split",
            help="The fixed half of the set to run: tune (choose settings on it), report (publish it) or all.",
            callback=_split_option,
        ),
    ] = "all",
    as_json: JsonOption = False,
) -> None:
    """Run each method on each question (one JSONL row each, resumable) and write a summary."""
    from rich.progress import Progress as Bar

    from driftrag.eval.bounds import kb_chunks
    from driftrag.eval.methods import parse_methods
    from driftrag.eval.runner import ensure_kb_has_chunks, parse_budgets, run_eval, summary_lines
    from driftrag.facade import DriftRAG

    budgets = parse_budgets(budget) if budget else None
    settings = load_settings()
    if budgets:  # the methods run at the largest budget, so that each fills every one
        settings = settings.model_copy(update={"local_context_tokens": budgets[-1]})

    async def action():
        async with DriftRAG(settings) as rag:
            await ensure_kb_has_chunks(rag.stores.kbs, kb)
            with Bar(console=err_console, transient=True, disable=as_json) as bar:
                return await run_eval(
                    rag.query_deps(),
                    kb,
                    questions,
                    parse_methods(methods),
                    out,
                    repeats=repeats,
                    mode=rag.mode,
                    mode_description=rag.describe(),
                    budgets=budgets,
                    retry_errors=retry_errors,
                    split=split,  # type: ignore[arg-type]
                    progress=_row_bar(bar, "questions x methods"),
                    corpus=lambda: kb_chunks(rag.stores.listing, kb),
                )

    summary = _arun(ctx, action)
    _emit(summary, as_json, "\n".join(summary_lines(summary, out)))


@eval_app.command("report", examples=["driftrag eval report --results runs/alice"])
def eval_report(
    ctx: typer.Context, results: ResultsOption, budget: BudgetOption = None, as_json: JsonOption = False
) -> None:
    """Write report.md (tables), metrics.json and plots/ into the results folder (no model needed)."""
    from driftrag.eval.report import build_report
    from driftrag.eval.runner import parse_budgets

    budgets = parse_budgets(budget) if budget else None
    outcome = _run(ctx, lambda: build_report(results, load_settings().local_context_tokens, budgets))
    text = f"wrote {outcome.report}, {outcome.metrics} and {plural(len(outcome.plots), 'plot')}"
    _emit(outcome, as_json, text + (f" ({outcome.plots_note})" if outcome.plots_note else ""))


@eval_app.command("judge", examples=["driftrag eval judge --results runs/alice --methods drift,basic"])
def eval_judge(
    ctx: typer.Context,
    results: ResultsOption,
    methods: Annotated[
        str | None, typer.Option("--methods", help="Methods to compare (default: the run's).", callback=_methods_option)
    ] = None,
    trials: Annotated[int, typer.Option("--trials", min=2, help="Judgments per question and pair (even).")] = 2,
    aa: Annotated[
        str | None,
        typer.Option(
            "--aa",
            help="Methods judged against themselves (A/A check of the judge); 'none' for none (default: the first).",
            callback=_aa_option,
        ),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """LLM-as-judge pairwise comparison of the answers, counterbalanced; needs a model (OPENAI_API_KEY)."""
    from rich.progress import Progress as Bar

    from driftrag.eval.judge_run import judge_results
    from driftrag.eval.methods import parse_methods
    from driftrag.prompts.registry import PromptRegistry
    from driftrag.providers import build_providers

    if trials % 2:
        err_console.print(
            "[red]error:[/red] --trials must be even: half the trials show each answer first", soft_wrap=True
        )
        raise typer.Exit(2)
    aa_methods = None if aa is None else [] if aa == "none" else parse_methods(aa)

    async def action():
        settings = load_settings()
        providers = build_providers(settings)
        with Bar(console=err_console, transient=True, disable=as_json) as bar:
            return await judge_results(
                providers.model_client,
                results,
                max_tokens=settings.answer_max_tokens,
                concurrency=settings.llm_concurrency,
                methods=parse_methods(methods) if methods else None,
                trials=trials,
                aa_methods=aa_methods,
                progress=_row_bar(bar, "judgments"),
                prompts=PromptRegistry.load(settings.prompts_dir),
            )

    summary = _arun(ctx, action)
    _emit(
        summary,
        as_json,
        f"{plural(summary.judgments, 'judgment')} ({summary.failed} failed); `driftrag eval report` shows them",
    )


@eval_app.command("generate", examples=["driftrag eval generate --kb alice --out questions.jsonl --type global"])
def eval_generate(
    ctx: typer.Context,
    out: Annotated[Path, typer.Option("--out", help="Question set to write (JSONL).")],
    kb: Annotated[
        str | None, typer.Option("--kb", help="Describe the corpus by this kb's top community reports.")
    ] = None,
    description: Annotated[str | None, typer.Option("--description", help="Describe the corpus yourself.")] = None,
    personas: Annotated[int, typer.Option("--personas", min=1)] = 5,
    tasks: Annotated[int, typer.Option("--tasks", min=1, help="Tasks per persona.")] = 5,
    questions: Annotated[int, typer.Option("--questions", min=1, help="Questions per task.")] = 5,
    question_type: Annotated[str, typer.Option("--type", help="local, multi-hop or global.")] = "global",
    id_prefix: Annotated[str, typer.Option("--id-prefix")] = "gen-",
    as_json: JsonOption = False,
) -> None:
    """Draft questions with a model (personas x tasks x questions); needs a model (OPENAI_API_KEY)."""
    from driftrag.eval.generate import generate_questions, kb_description
    from driftrag.eval.questions import QUESTION_TYPES, dump_questions
    from driftrag.facade import DriftRAG
    from driftrag.prompts.registry import PromptRegistry

    if (kb is None) == (description is None):
        err_console.print("[red]error:[/red] give either --kb or --description", soft_wrap=True)
        raise typer.Exit(2)
    if question_type not in QUESTION_TYPES:
        err_console.print(f"[red]error:[/red] --type must be one of {', '.join(QUESTION_TYPES)}", soft_wrap=True)
        raise typer.Exit(2)
    kb = _valid_kb(kb) if kb is not None else None

    async def action():
        settings = load_settings()
        rag = DriftRAG(settings)
        text = description or ""
        try:
            if kb is not None:
                await rag.connect()
                text = await kb_description(rag.stores.listing, kb, settings.local_context_tokens)
        finally:
            await rag.close()
        return await generate_questions(
            rag.providers.model_client,
            text,
            personas=personas,
            tasks=tasks,
            questions=questions,
            question_type=question_type,  # type: ignore[arg-type]
            id_prefix=id_prefix,
            max_tokens=settings.answer_max_tokens,
            concurrency=settings.llm_concurrency,
            prompts=PromptRegistry.load(settings.prompts_dir),
        )

    generated = _arun(ctx, action)
    out.write_text(dump_questions(generated.items), encoding="utf-8")
    origins = out.with_suffix(".origins.json")
    origins.write_text(generated.model_dump_json(indent=2, exclude={"items"}) + "\n", encoding="utf-8")
    text = f"wrote {plural(len(generated.items), 'draft question')} to {out} (personas and tasks in {origins})"
    failed = f"; {plural(len(generated.failures), 'failed call')}" if generated.failures else ""
    _emit(generated, as_json, text + failed)


def _format_argument(text: str) -> str:
    from driftrag.eval.importers import IMPORT_FORMATS

    if text not in IMPORT_FORMATS:
        raise typer.BadParameter(f"one of {', '.join(IMPORT_FORMATS)}")
    return text


@eval_app.command(
    "import",
    examples=[
        "driftrag eval import multihop-rag MultiHop-RAG/dataset --out sets/multihop-rag",
        "driftrag eval import fairytaleqa FairytaleQAData --out sets/fairytaleqa",
    ],
)
def eval_import(
    ctx: typer.Context,
    format_name: Annotated[
        str,
        typer.Argument(
            metavar="FORMAT", help="multihop-rag or fairytaleqa (data/README.md).", callback=_format_argument
        ),
    ],
    path: Annotated[Path, typer.Argument(metavar="PATH", help="The benchmark's folder (its files as published).")],
    out: Annotated[Path, typer.Option("--out", help="Folder to write corpus/, questions.jsonl, import.json.")],
    as_json: JsonOption = False,
) -> None:
    """Import a public benchmark: its corpus as Markdown files, its questions in the harness's format (no model needed).

    The source's ids and question types are kept in the ids; its types are mapped to local, multi-hop or
    global, and the questions get the tuning/reporting split. A file not in the format is refused, named.
    """
    from driftrag.eval.importers import import_benchmark

    summary = _run(ctx, lambda: import_benchmark(format_name, path, out))
    types = ", ".join(f"{count} {kind}" for kind, count in summary.by_type.items())
    lines = [
        f"wrote {plural(summary.questions, 'question')} ({types}) to {out / summary.questions_file} and "
        f"{plural(summary.documents, 'document')} to {out / summary.corpus}",
        f"evidence found verbatim in the corpus: {summary.evidence_verbatim} of {summary.evidence}",
    ]
    lines += [f"left out: {plural(count, 'question')} of type {kind}" for kind, count in summary.skipped.items()]
    lines += [
        f"note: {path / source.path} is not the release the importer was built on (SHA-256 {source.sha256})"
        for source in summary.sources
        if source.is_pinned_release is False
    ]
    _emit(summary, as_json, "\n".join(lines))
