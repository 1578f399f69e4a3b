"""`driftrag serve`, `api …` and `api-key …`: the HTTP API."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from driftrag.cli.common import (
    DriftTyper,
    JsonOption,
    _run,
    app,
    err_console,
    load_settings,
)

# --- HTTP API ------------------------------------------------------------------------------------------

api_app = DriftTyper(help="The HTTP API's OpenAPI document.")
api_key_app = DriftTyper(help="API keys of the HTTP API; the keys file stores only their SHA-256.")
app.add_typer(api_app, name="api")
app.add_typer(api_key_app, name="api-key")

KeysFileOption = Annotated[Path | None, typer.Option("--file", help="The keys file (default: DRIFTRAG_API_KEYS_FILE).")]


@app.command("serve", examples=["driftrag serve", "driftrag serve --port 8080 --workers 2"])
def serve(
    ctx: typer.Context,
    host: Annotated[
        str | None, typer.Option("--host", help="Address to bind (default: DRIFTRAG_API_HOST, 127.0.0.1).")
    ] = None,
    port: Annotated[
        int | None,
        typer.Option("--port", min=1, max=65535, help="Port to listen on (default: DRIFTRAG_API_PORT, 8000)."),
    ] = None,
    insecure_no_auth: Annotated[
        bool,
        typer.Option(
            "--insecure-no-auth",
            help="Accept every request without a key (local experiments); only on 127.0.0.1 or another loopback.",
        ),
    ] = False,
    workers: Annotated[
        int | None,
        typer.Option(
            "--workers", min=1, max=64, help="Server processes sharing the port (default: DRIFTRAG_API_WORKERS, 1)."
        ),
    ] = None,
) -> None:
    """Serve the HTTP API with uvicorn (docs at /api/v1/docs; OpenAI-compatible chat at /v1); refuses to start
    without API keys."""
    from driftrag.api.server import serve as run_server

    settings = load_settings()
    debug = ctx.obj is not None and ctx.obj.debug
    _run(
        ctx,
        lambda: run_server(
            settings,
            host=host or settings.api_host,
            port=port or settings.api_port,
            insecure_no_auth=insecure_no_auth,
            workers=workers,
            log_level="debug" if debug else "info",
        ),
    )


@api_app.command("openapi", examples=["driftrag api openapi > docs/openapi.json"])
def api_openapi() -> None:
    """Print the OpenAPI document of the HTTP API (`driftrag api openapi > docs/openapi.json`)."""
    from driftrag.api.app import render_openapi

    typer.echo(render_openapi(), nl=False)


def _keys_file(file: Path | None) -> Path:
    chosen = file or load_settings().api_keys_file
    if chosen is None:
        err_console.print(
            "[red]error:[/red] give --file or set DRIFTRAG_API_KEYS_FILE", highlight=False, soft_wrap=True
        )
        raise typer.Exit(2)
    return chosen


@api_key_app.command("create", examples=["driftrag api-key create --name notebook --scopes read --kbs alice"])
def api_key_create(
    ctx: typer.Context,
    name: Annotated[str, typer.Option("--name", help="Who or what uses the key (unique in the file).")],
    scopes: Annotated[str, typer.Option("--scopes", help="read, manage or read,manage (manage implies read).")],
    kbs: Annotated[str, typer.Option("--kbs", help="Comma-separated kb ids the key may use, or '*' for all.")],
    file: KeysFileOption = None,
) -> None:
    """Create a key, store its SHA-256 in the keys file, and print the key once on stdout."""
    from driftrag.api.auth import create_key, parse_kbs, parse_scopes

    try:
        scope_list, kb_list = parse_scopes(scopes), parse_kbs(kbs)
    except ValueError as exc:
        err_console.print(f"[red]error:[/red] {exc}", highlight=False, soft_wrap=True)
        raise typer.Exit(2) from None
    path = _keys_file(file)
    key, entry = _run(ctx, lambda: create_key(path, name=name, scopes=scope_list, kbs=kb_list))
    err_console.print(
        f"created key {entry.name!r} (scopes {', '.join(entry.scopes)}; kbs {', '.join(entry.kbs)}) in {path}; "
        "it is shown only now, keep it somewhere safe",
        highlight=False,
        soft_wrap=True,
        markup=False,
    )
    typer.echo(key)


@api_key_app.command("list", examples=["driftrag api-key list --json"])
def api_key_list(ctx: typer.Context, file: KeysFileOption = None, as_json: JsonOption = False) -> None:
    """Show the keys of the file: name, scopes, kbs (never the hashes)."""

    from driftrag.api.auth import read_keys_file

    path = _keys_file(file)
    content = _run(ctx, lambda: read_keys_file(path))
    if as_json:
        typer.echo(json.dumps([entry.model_dump(exclude={"key_sha256"}) for entry in content.keys]))
        return
    for entry in content.keys:
        typer.echo(f"{entry.name}\tscopes {','.join(entry.scopes)}\tkbs {','.join(entry.kbs)}")


@api_key_app.command("revoke", examples=["driftrag api-key revoke --name notebook"])
def api_key_revoke(
    ctx: typer.Context,
    name: Annotated[str, typer.Option("--name", help="The key to remove.")],
    file: KeysFileOption = None,
) -> None:
    """Remove a key from the file; running servers refuse it within DRIFTRAG_API_KEYS_RELOAD_S (no restart)."""
    from driftrag.api.auth import revoke_key

    path = _keys_file(file)
    _run(ctx, lambda: revoke_key(path, name))
    err_console.print(
        f"revoked key {name!r} in {path}; running servers refuse it once they see the change "
        "(DRIFTRAG_API_KEYS_RELOAD_S, 2 s by default)",
        highlight=False,
        soft_wrap=True,
        markup=False,
    )
