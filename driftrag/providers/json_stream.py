"""The text of one string field of a JSON object, decoded while the object is still being written.

A streamed JSON answer (`{"answer": "…", "citations": […]}`) arrives a few characters at a time; the
reader of the answer wants the `answer` text as it grows, not the JSON. `JsonFieldStream.feed` takes
the raw pieces and returns the field's newly decoded characters (escapes resolved, an escape split
across pieces kept until it is whole). Prose or a code fence before the object are skipped. It is a
preview: the answer that counts is the one parsed (and repaired) once the whole text is there.
"""

from __future__ import annotations

import json
import re

_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


class JsonFieldStream:
    def __init__(self, field: str) -> None:
        self._opening = re.compile(r'"' + re.escape(field) + r'"\s*:\s*"')
        self._seen = ""
        self._state = "seek"  # seek → inside → done
        self._pending = ""  # an escape sequence not yet complete

    @property
    def done(self) -> bool:
        return self._state == "done"

    def feed(self, raw: str) -> str:
        """The field's characters that `raw` completes (empty before the field and after it)."""
        if self._state == "done" or not raw:
            return ""
        if self._state == "seek":
            self._seen += raw
            start = self._seen.find("{")
            match = self._opening.search(self._seen, start) if start >= 0 else None
            if match is None:
                return ""
            self._state = "inside"
            raw, self._seen = self._seen[match.end() :], ""
        return self._decode(raw)

    def _decode(self, raw: str) -> str:
        out: list[str] = []
        text = self._pending + raw
        self._pending = ""
        i = 0
        while i < len(text):
            char = text[i]
            if char == '"':
                self._state = "done"
                break
            if char != "\\":
                out.append(char)
                i += 1
                continue
            if i + 1 >= len(text):
                self._pending = text[i:]
                break
            code = text[i + 1]
            if code != "u":
                out.append(_ESCAPES.get(code, code))
                i += 2
                continue
            # A \u escape of four hex digits, and a surrogate pair as two of them.
            unit = text[i : i + 6]
            if len(unit) < 6:
                self._pending = text[i:]
                break
            if 0xD800 <= _hex(unit[2:]) <= 0xDBFF:
                pair = text[i : i + 12]
                if len(pair) < 12:
                    self._pending = text[i:]
                    break
                out.append(_unescape(pair))
                i += 12
            else:
                out.append(_unescape(unit))
                i += 6
        return "".join(out)


def _hex(digits: str) -> int:
    try:
        return int(digits, 16)
    except ValueError:
        return -1


def _unescape(sequence: str) -> str:
    try:
        return json.loads(f'"{sequence}"')
    except ValueError:
        return ""
