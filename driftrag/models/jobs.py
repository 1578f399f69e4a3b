"""What the records of HTTP ingestion jobs hold as they cross the storage seam (`JobStorage`)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

# A submitted text, or a file read already: its text with its pages or sections (`TextInput`, as JSON).
JobText = str | dict[str, Any]


class JobKey(BaseModel):
    kb: str
    id: str


class SavedJob(BaseModel):
    """What a save found: `owned` False when another server took the job over; `texts_missing` when the
    record was made anew (its kb was deleted meanwhile) and has no texts to resume from."""

    owned: bool
    texts_missing: bool


class ClaimedJob(BaseModel):
    """An unfinished job this server now owns: its last record, and its texts if they were kept."""

    kb: str
    id: str
    record: str
    texts: dict[str, JobText] | None
