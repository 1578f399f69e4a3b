"""The one length limit of a question, in tokens, for every entry point (Python API, CLI, HTTP).

A question is embedded and then written into every prompt of its query, so its length multiplies
into the cost of the whole query; past `settings.max_question_tokens` it is refused before any
embedding, Neo4j read or model call.
"""

from __future__ import annotations

from driftrag.errors import InvalidQueryError
from driftrag.providers.tokens import count_tokens
from driftrag.settings import Settings

# No cl100k token is longer than this many characters in practice, so a longer text is over any
# limit without being tokenised (a 50 MB string would otherwise cost seconds just to count).
_MAX_CHARS_PER_TOKEN = 64


def question_tokens(text: str) -> int:
    return count_tokens(text)


def check_question(text: str, settings: Settings) -> str:
    """Return `text` if it is a non-blank question of at most `max_question_tokens` cl100k tokens."""
    if not isinstance(text, str) or not text.strip():
        raise InvalidQueryError("the question is empty")
    limit = settings.max_question_tokens
    if len(text) > limit * _MAX_CHARS_PER_TOKEN:
        raise InvalidQueryError(
            f"the question is too long: {len(text)} characters, more than the limit of {limit} tokens "
            "(DRIFTRAG_MAX_QUESTION_TOKENS); ask a shorter question"
        )
    tokens = question_tokens(text)
    if tokens > limit:
        raise InvalidQueryError(
            f"the question is too long: {tokens} tokens, above the limit of {limit} "
            "(DRIFTRAG_MAX_QUESTION_TOKENS); ask a shorter question"
        )
    return text
