"""The openai SDK's HTTP clients, all on one TLS context per process.

httpx makes a TLS context for every client, loading the CA bundle (about 40 ms of CPU), and llama-index
creates its openai client at a model's first call, inside the event loop: each new chat model and
embedder stalled every task of the run that long, right as its first requests were being sent. The
context is made once, as httpx makes it (certifi, or SSL_CERT_FILE / SSL_CERT_DIR), in the thread that
preloads the openai modules; each client still has its own connection pool.
"""

from __future__ import annotations

import functools
import ssl
import threading

import httpx
import openai

_LOCK = threading.Lock()


@functools.cache
def _make_context() -> ssl.SSLContext:
    return httpx.create_ssl_context()


def shared_tls_context() -> ssl.SSLContext:
    """The process's TLS context; a caller arriving while another thread makes it waits for that one."""
    with _LOCK:
        return _make_context()


def openai_http_client(*, is_async: bool) -> httpx.AsyncClient | httpx.Client:
    """A client with the openai SDK's defaults (limits, timeout, redirects) on the shared TLS context."""
    if is_async:
        return openai.DefaultAsyncHttpxClient(verify=shared_tls_context())
    return openai.DefaultHttpxClient(verify=shared_tls_context())
