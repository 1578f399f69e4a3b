"""Ingestion jobs over the HTTP API: wait for one to finish."""

from __future__ import annotations

import time

import httpx

FINAL = {"succeeded", "failed"}


def wait_for(client: httpx.Client, kb: str, job_id: str, timeout_s: float = 300) -> dict:
    """Poll the job until its state is final; return it."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        response = client.get(f"/knowledge-bases/{kb}/jobs/{job_id}")
        assert response.status_code == 200, response.text
        job = response.json()
        if job["state"] in FINAL:
            return job
        time.sleep(0.1)
    raise AssertionError(f"job {job_id} not finished within {timeout_s} s")
