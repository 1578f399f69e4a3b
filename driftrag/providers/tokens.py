"""The one tokenizer: tiktoken `cl100k_base`, loaded once, offline, without touching the environment.

The encoding ships with llama-index-core (`_static/tiktoken_cache`). When the user configured no
tiktoken cache, tiktoken is pointed at that folder for the duration of the load only, so nothing is
downloaded and the environment is left as it was.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import threading
from collections.abc import Callable
from pathlib import Path

import tiktoken

ENCODING_NAME = "cl100k_base"
# Texts whose token count is remembered (the most recently counted): a few thousand context blocks.
COUNT_CACHE_SIZE = 4096
# The first load sets an environment variable for its duration: a load in a thread (ingestion starts one
# early) and one on the event loop must not interleave, or the second could see it removed and download.
_LOAD_LOCK = threading.Lock()


@functools.cache
def get_encoding() -> tiktoken.Encoding:
    """The cl100k encoding (memoised: every caller shares one instance)."""
    with _LOAD_LOCK:
        return _load_encoding()


def _load_encoding() -> tiktoken.Encoding:
    if "TIKTOKEN_CACHE_DIR" in os.environ or "DATA_GYM_CACHE_DIR" in os.environ:
        return tiktoken.get_encoding(ENCODING_NAME)
    # Located without importing llama-index-core (its import costs over a second).
    spec = importlib.util.find_spec("llama_index.core")
    if spec is None or not spec.submodule_search_locations:
        return tiktoken.get_encoding(ENCODING_NAME)
    bundled = Path(next(iter(spec.submodule_search_locations))) / "_static" / "tiktoken_cache"
    # Pointed at the bundled file only for this load, as llama_index.core.utils does.
    os.environ["TIKTOKEN_CACHE_DIR"] = str(bundled)
    try:
        return tiktoken.get_encoding(ENCODING_NAME)
    finally:
        del os.environ["TIKTOKEN_CACHE_DIR"]


def encode(text: str) -> list[int]:
    """Token ids of `text`; special-token text is encoded as plain text, never refused."""
    return get_encoding().encode(text, disallowed_special=())


def decode(tokens: list[int]) -> str:
    return get_encoding().decode(tokens)


@functools.lru_cache(maxsize=COUNT_CACHE_SIZE)
def count_tokens(text: str) -> int:
    """Tokens of `text`, memoised: context building counts the same chunk and entity blocks again and
    again (every follow-up of a DRIFT query, every query of a session)."""
    return len(encode(text))


def tokenizer() -> Callable[[str], list[int]]:
    """`encode`, for code that takes a tokenizer as a value."""
    return encode


# Words that fit in a token budget, on the safe side for non-English text (Russian takes over two
# cl100k tokens a word) and for the JSON around the words.
WORDS_PER_TOKEN = 0.4


def words_within(max_tokens: int, *, cap: int, floor: int) -> int:
    """How many words a model may be asked to write under `max_tokens`, between `floor` and `cap`."""
    return max(floor, min(cap, int(max_tokens * WORDS_PER_TOKEN)))
