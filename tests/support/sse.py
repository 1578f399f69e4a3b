"""Read a query's Server-Sent Events stream over HTTP: each event's name and its JSON data."""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Iterator

import httpx


def events_of(lines: Iterable[str]) -> Iterator[tuple[str | None, dict]]:
    """(event name, data) of every `data:` line, named by the `event:` line before it; as lines arrive."""
    name = None
    for line in lines:
        if line.startswith("event: "):
            name = line.removeprefix("event: ")
        elif line.startswith("data: "):
            yield name, json.loads(line.removeprefix("data: "))


def read_events(client: httpx.Client, kb: str, body: dict) -> tuple[httpx.Response, list[tuple[str, dict, float]]]:
    """(event name, data, seconds since the request) of every event, read as they arrive."""
    events = []
    started = time.monotonic()
    with client.stream("POST", f"/knowledge-bases/{kb}/query/stream", json=body) as response:
        if response.status_code != 200:
            response.read()
            return response, []
        for name, data in events_of(response.iter_lines()):
            events.append((name, data, time.monotonic() - started))
    return response, events
