"""`driftrag neo4j …`, `schema …` and `info`: the local Neo4j, the graph schema, the active mode."""

from __future__ import annotations

from typing import Annotated

import typer

from driftrag.cli.common import (
    DriftTyper,
    JsonOption,
    PortOption,
    _arun,
    _emit,
    _run,
    app,
    console,
    err_console,
    load_settings,
)
from driftrag.wording import plural

neo4j_app = DriftTyper(help="The project's local Neo4j Community server (Bolt on 127.0.0.1).")
schema_app = DriftTyper(help="Graph schema: constraints and vector indexes.")
app.add_typer(neo4j_app, name="neo4j")
app.add_typer(schema_app, name="schema")


# --- neo4j --------------------------------------------------------------------------------------


def _local(port: int | None):
    from driftrag.local_neo4j import LocalNeo4j

    return LocalNeo4j(load_settings(), port=port)


def _describe(status) -> str:
    lines = [f"Neo4j {status.state}: {status.bolt_uri}"]
    if status.pid:
        lines.append(f"  pid {status.pid}, version {status.version}, resident {status.resident_mib:.0f} MiB")
    lines.append(f"  log {status.log_file}")
    if status.message:
        lines.append(f"  {status.message}")
    return "\n".join(lines)


def _progress(message: str) -> None:
    err_console.print(message, highlight=False, soft_wrap=True)


@neo4j_app.command("start", examples=["driftrag neo4j start"])
def neo4j_start(ctx: typer.Context, port: PortOption = None, as_json: JsonOption = False) -> None:
    """Start the local Neo4j and wait until Bolt answers (resolves its jars first if not cached).

    Exit codes: 0 running (started, or already running), 1 it could not start, 5 java, mvn or the
    Maven repository is missing (message says which and how to fix it).
    """
    status = _run(ctx, lambda: _local(port).start(report=_progress))
    _emit(status, as_json, _describe(status))


@neo4j_app.command("fetch", examples=["driftrag neo4j fetch"])
def neo4j_fetch(ctx: typer.Context, as_json: JsonOption = False) -> None:
    """Resolve and cache the Neo4j jars (DRIFTRAG_NEO4J_VERSION) without starting anything.

    Run it on a machine with network, then copy `<DRIFTRAG_HOME>/neo4j/runtime` to an offline one.
    Exit codes: 0 cached, 1 resolution failed, 5 mvn or the Maven repository is missing.
    """
    from driftrag.local_neo4j import resolve_runtime

    runtime = _run(ctx, lambda: resolve_runtime(load_settings(), report=_progress))
    _emit(
        runtime,
        as_json,
        f"Neo4j {runtime.version}: {plural(runtime.jar_count, 'jar')} in {runtime.lib_dir}\n"
        f"  manifest {runtime.manifest_file}",
    )


@neo4j_app.command("stop", examples=["driftrag neo4j stop"])
def neo4j_stop(ctx: typer.Context, port: PortOption = None, as_json: JsonOption = False) -> None:
    """Stop the local Neo4j cleanly (SIGTERM; SIGKILL after 60 s)."""
    status = _run(ctx, lambda: _local(port).stop())
    _emit(status, as_json, _describe(status))


@neo4j_app.command("status", examples=["driftrag neo4j status --json"])
def neo4j_status(ctx: typer.Context, port: PortOption = None, as_json: JsonOption = False) -> None:
    """Say whether the local Neo4j runs, with its Bolt URI. Exit code 3 when stopped."""
    status = _run(ctx, lambda: _local(port).status())
    _emit(status, as_json, _describe(status))
    if status.state != "running":
        raise typer.Exit(3)


# --- schema -------------------------------------------------------------------------------------


@schema_app.command("init", examples=["driftrag schema init"])
def schema_init(ctx: typer.Context, as_json: JsonOption = False) -> None:
    """Connect, check the server version, and create constraints and indexes (idempotent); list the
    vector indexes (each embedder's are created with its first kb)."""
    from pydantic import BaseModel

    from driftrag.facade import DriftRAG

    class SchemaReport(BaseModel):
        server_version: str
        mode: str
        vector_indexes: dict[str, int]

    async def action() -> SchemaReport:
        async with DriftRAG(load_settings()) as rag:
            info = await rag.connect()
            indexes = await rag.vector_indexes()
        return SchemaReport(
            server_version=info.version,
            mode=rag.describe(),
            vector_indexes={index.name: index.dimensions for index in indexes},
        )

    report = _arun(ctx, action)
    text = "\n".join(
        [f"Neo4j {report.server_version}; {report.mode}"]
        + [f"  {name}: {dims} dimensions, cosine" for name, dims in report.vector_indexes.items()]
    )
    _emit(report, as_json, text)


@schema_app.command("reset-vectors", examples=["driftrag schema reset-vectors --kb alice --yes"])
def schema_reset_vectors(
    ctx: typer.Context,
    kb: Annotated[
        list[str] | None, typer.Option("--kb", help="A knowledge base whose embeddings go (repeat for several).")
    ] = None,
    every: Annotated[bool, typer.Option("--all", help="Every knowledge base on the server (each is named).")] = False,
    yes: Annotated[bool, typer.Option("--yes", help="Confirm: the named kbs' embeddings go.")] = False,
) -> None:
    """Drop the embeddings of the named kbs (to change their embedder); their graphs are kept.

    Each kb's vectors live in its embedder's indexes; those go too when no other kb uses them. Ingest
    the kb again to embed it with the embedder configured then."""
    from driftrag.facade import DriftRAG

    if bool(kb) == every:
        err_console.print("name the knowledge bases with --kb (repeatable), or --all for every one", soft_wrap=True)
        raise typer.Exit(2)

    async def action() -> list[str]:
        async with DriftRAG(load_settings()) as rag:
            names = sorted(await rag.vector_spaces()) if every else list(dict.fromkeys(kb or []))
            if not yes:
                return names
            for name in names:
                space = await rag.reset_vectors(name)
                console.print(
                    f"{name}: embeddings of {space.embedder or 'its embedder'} removed ({space.property})",
                    soft_wrap=True,
                )
        return names

    names = _arun(ctx, action)
    if not yes:
        listed = ", ".join(names) or "none"
        err_console.print(
            f"refusing without --yes: this removes the embeddings of {plural(len(names), 'kb')}: {listed}",
            soft_wrap=True,
        )
        raise typer.Exit(2)
    console.print(f"{plural(len(names), 'knowledge base')} without embeddings; ingest again to embed", soft_wrap=True)


# --- info -----------------------------------------------------------------------------------------


@app.command("info", examples=["driftrag info --json"])
def info(ctx: typer.Context, as_json: JsonOption = False) -> None:
    """Show the chat model and the embedder the engine uses (a local model's file, size, quantisation and
    context from its GGUF header), how many model calls run at once and each call's time-out, with where
    each comes from, and where the graph lives (no model loaded; a compatible server is asked for its
    slots, 3 s at most)."""
    from pydantic import BaseModel

    from driftrag.providers.model_info import ModelInfo, model_info, server_report
    from driftrag.providers.structured import structured_outputs

    class Info(BaseModel):
        mode: str
        description: str
        models: ModelInfo
        structured_outputs: str
        neo4j_uri: str
        local_neo4j: bool

    async def action() -> Info:
        settings = load_settings()
        # What the models are, without loading them; the slots of a server the concurrency follows.
        models = model_info(settings, server=await server_report(settings))
        return Info(
            mode=models.mode,
            description=models.description,
            models=models,
            structured_outputs=structured_outputs(settings, models.mode),
            neo4j_uri=settings.bolt_uri,
            local_neo4j=settings.neo4j_uri is None,
        )

    result = _arun(ctx, action)
    _emit(
        result,
        as_json,
        f"{result.models.describe()}\nStructured outputs: {result.structured_outputs}\nNeo4j: {result.neo4j_uri}",
    )
