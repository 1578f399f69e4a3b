"""What the HTTP API tests share: the corpus ingested once for the package, its texts as a request body,
the kinds of API key, and the check of an error body."""

from __future__ import annotations

from dataclasses import dataclass

import httpx

# Multi-word names recur across chunks, so the offline extractor keeps them and links them.
CORPUS = {
    "The lighthouse": (
        "Captain Mara Vell kept the Glass Lighthouse on the northern cape. Every night Captain Mara Vell climbed "
        "the stairs of the Glass Lighthouse to light the great lamp.\n\n"
        "Harbor Master Tobias Quill sent a letter to Captain Mara Vell. Harbor Master Tobias Quill warned that "
        "the Salt Wind would bring storms to the Glass Lighthouse.\n\n"
        "The Salt Wind struck the northern cape in winter. Captain Mara Vell and Harbor Master Tobias Quill "
        "repaired the lamp of the Glass Lighthouse together.\n\n"
        "Old Brother Anselm kept the tide tables in the Stone Chapel. Captain Mara Vell read the tide tables "
        "with Old Brother Anselm in the Stone Chapel.\n\n"
    ),
    "The harbor": (
        "Harbor Master Tobias Quill counted the ships in the Grey Harbor. The Grey Harbor lay below the Glass "
        "Lighthouse, and Harbor Master Tobias Quill watched its light every evening.\n\n"
        "Old Brother Anselm walked from the Stone Chapel to the Grey Harbor. Old Brother Anselm blessed the "
        "ships of Harbor Master Tobias Quill before the Salt Wind came.\n\n"
    ),
}

TEXTS = [{"title": title, "text": text} for title, text in CORPUS.items()]


@dataclass(frozen=True)
class Keys:
    manage_all: str  # manage, every kb
    reader: str  # read, the corpus kb only
    stranger: str  # read, another kb only
    manage_one: str  # manage, the corpus kb only


def error_body(response: httpx.Response, status: int, code: str) -> dict:
    """The body of an error response, checked: its status, its `code`, a `detail`."""
    assert response.status_code == status, response.text
    body = response.json()
    assert body["code"] == code and body["detail"], body
    return body
