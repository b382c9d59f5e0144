"""One HTTP client for the suites that talk to a running local stack or gateway, and the one JSON
answer the suites' in-process fake servers write (stdlib only)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler
from typing import Any


def send(
    url: str,
    method: str = "GET",
    *,
    token: str | None = None,
    body: Any = None,
    headers: dict[str, str] | None = None,
    timeout: float = 60,
) -> tuple[int, bytes]:
    """(status, raw body) of one request; ``body`` is bytes as given, or JSON-encoded; 4xx/5xx answer too."""
    data = None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
    sent = {"Content-Type": "application/json", **(headers or {})}
    if token is not None:
        sent["Authorization"] = f"Bearer {token}"
    req = urllib.request.Request(url, data=data, method=method, headers=sent)  # noqa: S310 - local endpoints
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:  # noqa: S310 - local endpoints
            return resp.status, resp.read()
    except urllib.error.HTTPError as err:
        return err.code, err.read()


def send_json(url: str, method: str = "GET", **kwargs: Any) -> tuple[int, Any]:
    """:func:`send`, with the answer parsed as JSON (an empty body is ``None``)."""
    status, raw = send(url, method, **kwargs)
    return status, json.loads(raw) if raw else None


def answer_json(handler: BaseHTTPRequestHandler, status: int, body: Any) -> None:
    """Write ``status`` and ``body`` (bytes as given, else JSON-encoded) as a fake server's answer."""
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(raw)))
    handler.end_headers()
    handler.wfile.write(raw)
