"""Short citation handles (`S1`, `S2`…) shown to a model instead of 20-32 character ids.

A model copies `[S3]` far more reliably than `[chunk-9f1c…]`. Every context a model sees (query
answers, the DRIFT primer and reduce, community reports at ingestion) shows handles, and this is
the one place that maps them back to ids. A handle or id the model cites without having been shown
it is counted, never silently turned into a citation.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

NODE_ID = re.compile(r"\b(?:chunk|entity|relationship|community)-[A-Za-z0-9_-]*[A-Za-z0-9]")
_BRACKETED_ID = re.compile(r"\[((?:chunk|entity|relationship|community)-[A-Za-z0-9_-]*[A-Za-z0-9])\]")
_HANDLE = re.compile(r"\[(S\d+)\]", re.IGNORECASE)
_BARE_HANDLE = re.compile(r"^\s*\[?\s*(S\d+)\s*\]?\s*$", re.IGNORECASE)


class Handles:
    """Handles numbered in the order the ids are given (duplicates keep their first handle)."""

    def __init__(self, ids: Iterable[str]) -> None:
        self.ids = {f"S{n}": source_id for n, source_id in enumerate(dict.fromkeys(ids), start=1)}
        self._handles = {source_id: handle for handle, source_id in self.ids.items()}

    def handle(self, source_id: str) -> str:
        """The handle shown for `source_id` (a KeyError for an id this set was not built with)."""
        return self._handles[source_id]

    def show(self, text: str) -> str:
        """`text` with every `[id]` of a known source written as its `[Sn]` handle."""
        return _BRACKETED_ID.sub(lambda m: f"[{self._handles.get(m.group(1), m.group(1))}]", text)

    def resolve(self, answer: str, citations: Iterable[str]) -> tuple[str, list[str], int]:
        """The answer with inline handles written back as ids, the cited ids (list first, then inline),
        and how many cited handles or ids were not shown to the model (they are dropped)."""
        listed = [_bare(c) for c in citations]
        mentioned = listed + _HANDLE.findall(answer) + NODE_ID.findall(answer)
        known, unknown = [], set()
        for ref in dict.fromkeys(mentioned):
            source_id = self.ids.get(ref.upper(), ref if ref in self._handles else None)
            if source_id is None:
                unknown.add(ref)
            else:
                known.append(source_id)
        text = _HANDLE.sub(lambda m: f"[{self.ids.get(m.group(1).upper(), m.group(1))}]", answer)
        return text, list(dict.fromkeys(known)), len(unknown)


def _bare(citation: str) -> str:
    match = _BARE_HANDLE.match(citation)
    return match.group(1) if match else citation.strip("[] ")
