"""`/v1/chat/completions` and `/v1/models` with the real `openai` client over real uvicorn and the corpus kb in
the test Neo4j (offline answers): the answer equals the query route's, streamed or not; models follow the
key's allow-list; errors come in OpenAI's shape with OpenAI's statuses."""

from __future__ import annotations

import httpx
import openai
import pytest

from driftrag.api.server import BackgroundServer
from driftrag.search.modes import DEFAULT_MODE, MODE_NAMES

QUESTION = "Who repaired the lamp of the Glass Lighthouse?"


def client(server: BackgroundServer, key: str) -> openai.OpenAI:
    # No retries: a test must see the first answer, not the third.
    return openai.OpenAI(base_url=f"{server.url}/v1", api_key=key, max_retries=0, timeout=300)


def ask(chat: openai.OpenAI, model: str, question: str = QUESTION, **kwargs):
    return chat.chat.completions.create(model=model, messages=[{"role": "user", "content": question}], **kwargs)


@pytest.fixture(scope="module")
def chat(server: BackgroundServer, keys) -> openai.OpenAI:
    return client(server, keys.reader)


def test_a_completion_is_the_query_answer_with_its_cited_sources(chat, reader: httpx.Client, corpus_kb: str) -> None:
    completion = ask(chat, f"{corpus_kb}:local")
    plain = reader.post(f"/knowledge-bases/{corpus_kb}/query", json={"question": QUESTION, "mode": "local"}).json()
    assert completion.object == "chat.completion" and completion.model == f"{corpus_kb}:local"
    assert completion.id.startswith("chatcmpl-")
    [choice] = completion.choices
    assert choice.finish_reason == "stop" and choice.message.role == "assistant"
    answer, _, listed = choice.message.content.partition("\n\nSources:\n")
    assert answer == plain["answer"] and plain["cited_source_ids"]
    # The compact list names each cited source once, in the order of the query's sources.
    assert [line.split("]")[0].removeprefix("- [") for line in listed.splitlines()] == [
        source["id"] for source in plain["sources"] if source["id"] in plain["cited_source_ids"]
    ]
    extra = completion.model_extra["sources"]
    assert {source["id"] for source in extra} == set(plain["cited_source_ids"])
    assert all(source["text"] for source in extra)
    # The answer's flags, as the query route's `degraded` says them.
    flags = completion.model_extra["driftrag"]
    assert flags["degradations"] == plain["degraded"] and flags["degraded"] == bool(plain["degraded"])
    assert flags["extractive"] and not flags["ungrounded"] and not flags["degenerate"]
    # Offline: no model call, so no tokens.
    assert (completion.usage.prompt_tokens, completion.usage.completion_tokens, completion.usage.total_tokens) == (
        0,
        0,
        0,
    )


def test_the_kb_alone_asks_in_the_default_mode(chat, corpus_kb: str) -> None:
    assert (
        ask(chat, corpus_kb).choices[0].message.content
        == ask(chat, f"{corpus_kb}:{DEFAULT_MODE}").choices[0].message.content
    )


def test_the_question_is_the_last_user_message(chat, corpus_kb: str) -> None:
    model = f"{corpus_kb}:basic"
    history = [
        {"role": "system", "content": "You are a pirate."},
        {"role": "user", "content": "Who counted the ships in the Grey Harbor?"},
        {"role": "assistant", "content": "Someone."},
        {"role": "user", "content": [{"type": "text", "text": QUESTION}]},
    ]
    with_history = chat.chat.completions.create(model=model, messages=history, temperature=0.2, max_tokens=50)
    assert with_history.choices[0].message.content == ask(chat, model).choices[0].message.content


@pytest.mark.parametrize("mode", MODE_NAMES)
def test_the_streamed_text_equals_the_completion(chat, corpus_kb: str, mode: str) -> None:
    model = f"{corpus_kb}:{mode}"
    chunks = list(ask(chat, model, stream=True, stream_options={"include_usage": True}))
    assert all(chunk.object == "chat.completion.chunk" and chunk.model == model for chunk in chunks)
    assert len({chunk.id for chunk in chunks}) == 1
    texts = [chunk.choices[0].delta.content for chunk in chunks if chunk.choices and chunk.choices[0].delta.content]
    assert len(texts) >= 2, "offline answers stream statement by statement"
    assert chunks[0].choices[0].delta.role == "assistant"
    finished = [chunk for chunk in chunks if chunk.choices and chunk.choices[0].finish_reason == "stop"]
    assert len(finished) == 1
    assert chunks[-1].choices == [] and chunks[-1].usage.total_tokens == 0
    assert "".join(texts) == ask(chat, model).choices[0].message.content
    cited = {source["id"] for source in finished[0].model_extra["sources"]}
    assert finished[0].model_extra["driftrag"]["extractive"]
    assert cited and all(f"[{source_id}]" in "".join(texts) for source_id in cited)


def test_the_stream_ends_with_done(server: BackgroundServer, keys, corpus_kb: str) -> None:
    body = {"model": f"{corpus_kb}:basic", "stream": True, "messages": [{"role": "user", "content": QUESTION}]}
    headers = {"Authorization": f"Bearer {keys.reader}"}
    with httpx.stream("POST", f"{server.url}/v1/chat/completions", json=body, headers=headers, timeout=300) as r:
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
        data = [line.removeprefix("data: ") for line in r.iter_lines() if line.startswith("data: ")]
    assert data[-1] == "[DONE]" and data.count("[DONE]") == 1
    assert all('"chat.completion.chunk"' in line for line in data[:-1])


def test_models_are_the_kbs_the_key_may_read_in_every_mode(server: BackgroundServer, keys, corpus_kb: str) -> None:
    reader_ids = [model.id for model in client(server, keys.reader).models.list()]
    assert reader_ids == [f"{corpus_kb}:{mode}" for mode in MODE_NAMES]
    admin_ids = {model.id for model in client(server, keys.manage_all).models.list()}
    assert set(reader_ids) <= admin_ids
    # The stranger may read only a kb that does not exist.
    assert list(client(server, keys.stranger).models.list()) == []
    card = client(server, keys.reader).models.retrieve(f"{corpus_kb}:global")
    assert (card.id, card.object, card.owned_by) == (f"{corpus_kb}:global", "model", "driftrag")


def test_a_bad_key_is_refused(server: BackgroundServer, corpus_kb: str) -> None:
    with pytest.raises(openai.AuthenticationError) as caught:
        ask(client(server, "drk_not_a_key"), f"{corpus_kb}:basic")
    assert caught.value.status_code == 401 and caught.value.body["type"] == "authentication_error"
    with pytest.raises(openai.AuthenticationError):
        client(server, "drk_not_a_key").models.list()


def test_unknown_or_forbidden_models_are_not_found(server: BackgroundServer, chat, keys, corpus_kb: str) -> None:
    admin = client(server, keys.manage_all)
    stranger = client(server, keys.stranger)
    for asker, model in (
        (admin, "no-such-kb:basic"),  # the key may use every kb, but this one does not exist
        (admin, "no-such-kb"),
        (stranger, f"{corpus_kb}:basic"),  # exists, but outside the key's allow-list
        (admin, "../etc:basic"),
        (admin, f"{corpus_kb}:basic\n"),
    ):
        with pytest.raises(openai.NotFoundError) as caught:
            ask(asker, model)
        assert caught.value.body["code"] == "model_not_found", model
    with pytest.raises(openai.NotFoundError) as caught:
        ask(admin, "no-such-kb:basic", stream=True)
    assert caught.value.body["code"] == "model_not_found"
    with pytest.raises(openai.NotFoundError) as caught:
        ask(chat, f"{corpus_kb}:telepathy")
    message = caught.value.body["message"]
    assert caught.value.body["code"] == "model_not_found" and "telepathy" in message
    assert all(mode in message for mode in MODE_NAMES)
    with pytest.raises(openai.NotFoundError):
        admin.models.retrieve("no-such-kb:basic")


def test_bad_requests_are_400_in_openai_shape(chat, corpus_kb: str) -> None:
    model = f"{corpus_kb}:basic"
    for messages in (
        [{"role": "system", "content": "Only a system prompt."}],
        [{"role": "user", "content": "   "}],
        [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}]}],
        [{"role": "user", "content": "x" * 100_000}],
    ):
        with pytest.raises(openai.BadRequestError) as caught:
            chat.chat.completions.create(model=model, messages=messages)
        assert caught.value.body["type"] == "invalid_request_error"
    with pytest.raises(openai.BadRequestError):
        chat.chat.completions.create(model=model, messages=[])
    with pytest.raises(openai.BadRequestError):
        ask(chat, model, n=2)
