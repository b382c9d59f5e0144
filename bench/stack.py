"""The local stack over HTTP: inline upload and recall latency, presigned bulk-upload throughput.

``acx.local.stack.LocalStack(port=0, quiet=True, verify_interval=None, data_dir=<tmp>)``: the unchanged
handlers behind the local gateway on the embedded backend (SQLite, a directory of objects, key files,
a SQLite queue; durable as ``make serve`` runs it) standing in for DynamoDB, S3, SQS and KMS, so
absolute numbers are the embedded backend's, not AWS's. Two more rows: the data directory's size
after the bench and the time to restart on it.
Requests use ``urllib`` with a dev token from ``stack.token("bench")``.

Rows: p50/p95 of ``POST /v1/packages/{pkg}/bundles`` with 100 distinct ~1 KB records each time (30
requests; quick: 10), p50/p95 of ``GET /v1/packages/{pkg}/memories?limit=50`` (50 requests) on that
package, and one presigned upload of 100,000 records (quick: 10,000): ``POST /uploads``, PUT to the
presigned URL, poll ``GET /uploads/{id}`` until ingested; seconds end to end and records/s. Then the
full listing of that package as a user runs it: ``acx recall --all -o FILE`` in its own process
(start-up, every page of up to 1,000 records, streamed to FILE), seconds and records/s (issue 14
target: <= 30 s for 100,000 records).
"""

from __future__ import annotations

import json
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from bench.common import bundle_bytes, generate_records, percentile

NOTE = "local stack: the embedded backend stands in for DynamoDB/S3/SQS/KMS (absolute numbers are not AWS's)"


class _Api:
    def __init__(self, endpoint: str, token: str) -> None:
        self.endpoint = endpoint.rstrip("/")
        self.token = token

    def call_retrying(self, method: str, path: str, body: bytes | None = None) -> tuple[int, Any, int]:
        """``call`` retried on 503 (as a client honouring Retry-After would); returns the retry count."""
        for attempt in range(10):
            status, doc = self.call(method, path, body)
            if status != 503:
                return status, doc, attempt
            time.sleep(0.5)
        return status, doc, 10

    def call(
        self, method: str, path: str, body: bytes | None = None, timeout: float = 600
    ) -> tuple[int, Any]:
        headers = {"Authorization": f"Bearer {self.token}", "Accept": "application/json"}
        if body is not None:
            headers["Content-Type"] = "application/json"
        req = urllib.request.Request(self.endpoint + path, data=body, method=method, headers=headers)  # noqa: S310
        try:
            with urllib.request.urlopen(req, timeout=timeout) as resp:  # noqa: S310 - local endpoint
                status, raw = resp.status, resp.read()
        except urllib.error.HTTPError as exc:
            status, raw = exc.code, exc.read()
        return status, json.loads(raw) if raw else None


def _expect(status: int, doc: Any, ok: tuple[int, ...], what: str) -> Any:
    if status not in ok:
        raise RuntimeError(f"{what}: HTTP {status}: {json.dumps(doc)[:500]}")
    return doc


def _latency_rows(api: _Api, quick: bool) -> list[dict[str, Any]]:
    pkg = "bench-inline"
    n_upload = 10 if quick else 30
    bodies = [bundle_bytes(generate_records(100, seed=1000 + i, prefix=f"b{i}")) for i in range(n_upload)]
    upload_ms: list[float] = []
    retries = {"upload": 0, "recall": 0}
    for body in bodies:
        started = time.perf_counter()
        status, doc, again = api.call_retrying("POST", f"/v1/packages/{pkg}/bundles", body)
        upload_ms.append((time.perf_counter() - started) * 1000)
        retries["upload"] += again
        _expect(status, doc, (200, 201), "inline upload")
    recall_ms: list[float] = []
    for _ in range(50):
        started = time.perf_counter()
        status, doc, again = api.call_retrying("GET", f"/v1/packages/{pkg}/memories?limit=50")
        recall_ms.append((time.perf_counter() - started) * 1000)
        retries["recall"] += again
        _expect(status, doc, (200,), "recall")
    kb = sum(map(len, bodies)) / len(bodies) / 1000
    rows = []
    for label, values, count, again in (
        (f"inline upload 100 records (~{kb:.0f} KB)", upload_ms, n_upload, retries["upload"]),
        ("recall page limit=50", recall_ms, 50, retries["recall"]),
    ):
        for q in (0.5, 0.95):
            rows.append(
                {
                    "name": f"stack {label} p{int(q * 100)}",
                    "value": round(percentile(values, q), 1),
                    "unit": "ms",
                    "baseline": None,
                    "ratio": None,
                    "target": "report",
                    "note": f"{count} requests, {again} 503 retries (0.5 s each, included); {NOTE}",
                }
            )
    return rows


def presigned_ingest(api: _Api, pkg: str, body: bytes, budget: float) -> tuple[float, float, dict[str, Any]]:
    """POST an upload, PUT ``body`` to its presigned URL, poll until it is no longer pending (backing off
    to 1 s: each poll is an API call taking CPU from the ingest it waits for). Returns (seconds from POST
    to ingested, seconds of the PUT, the upload document); raises unless it ended ``ingested`` within
    ``budget`` seconds (an ingest retried forever, e.g. LeaseExpired, fails the area)."""
    started = time.perf_counter()
    status, up = api.call("POST", f"/v1/packages/{pkg}/uploads", json.dumps({"size": len(body)}).encode())
    _expect(status, up, (200, 201), "create upload")
    req = urllib.request.Request(up["url"], data=body, method="PUT", headers=up.get("headers") or {})  # noqa: S310
    with urllib.request.urlopen(req, timeout=600) as resp:  # noqa: S310 - the local gateway
        if resp.status not in (200, 204):
            raise RuntimeError(f"presigned PUT: HTTP {resp.status}")
    put_seconds = time.perf_counter() - started
    doc: Any = None
    deadline = started + budget
    delay = 0.2
    while time.perf_counter() < deadline:
        status, doc = api.call("GET", f"/v1/packages/{pkg}/uploads/{up['uploadId']}")
        _expect(status, doc, (200,), "upload status")
        if doc.get("status") != "pending":
            break
        time.sleep(delay)
        delay = min(delay * 1.5, 1.0)
    seconds = time.perf_counter() - started
    if doc is None or doc.get("status") != "ingested":
        raise RuntimeError(f"presigned upload still {json.dumps(doc)[:300]} after {seconds:.0f} s")
    return seconds, put_seconds, doc


def _presigned_rows(api: _Api, quick: bool) -> list[dict[str, Any]]:
    pkg = "bench-bulk"
    n = 10_000 if quick else 100_000
    body = bundle_bytes(generate_records(n, seed=3, prefix="bulk"))
    seconds, put_seconds, doc = presigned_ingest(api, pkg, body, 600 if quick else 3600)
    summary = doc.get("summary") or {}
    note = (
        f"{len(body) / 1e6:.0f} MB; PUT {put_seconds:.1f} s, "
        f"ingest wait {seconds - put_seconds:.1f} s; "
        f"accepted {summary.get('accepted')}, merged {summary.get('merged')}; {NOTE}"
    )
    return [
        {
            "name": f"stack presigned upload {n // 1000}k records, POST..ingested",
            "value": round(seconds, 2),
            "unit": "s",
            "baseline": None,
            "ratio": None,
            "target": "report",
            "note": note,
        },
        {
            "name": f"stack presigned upload {n // 1000}k records throughput",
            "value": round(n / seconds),
            "unit": "records/s",
            "baseline": None,
            "ratio": None,
            "target": "report",
            "note": note,
        },
    ]


def _listing_rows(endpoint: str, token: str, n: int) -> list[dict[str, Any]]:
    import os
    import subprocess
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "pulled.json"
        env = {
            **os.environ,
            "ACX_ENDPOINT": endpoint,
            "ACX_TOKEN": token,
            "ACX_CONFIG": str(Path(tmp) / "config.json"),
        }
        cmd = [sys.executable, "-m", "acx.cli.main", "recall", "-p", "bench-bulk", "--all", "-o", str(out)]
        started = time.perf_counter()
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=3600, check=False)
        seconds = time.perf_counter() - started
        if done.returncode != 0:
            raise RuntimeError(f"acx recall --all: exit {done.returncode}: {done.stderr[-500:]}")
        got = len(json.loads(out.read_bytes()))
    note = f"{got} records streamed to a file, pages of up to 1000; {NOTE}"
    return [
        {
            "name": f"stack full listing {n // 1000}k records (acx recall --all -o FILE)",
            "value": round(seconds, 2),
            "unit": "s",
            "baseline": None,
            "ratio": None,
            "target": "<= 30 s" if n >= 100_000 else "report",
            "note": note,
        },
        {
            "name": f"stack full listing {n // 1000}k records throughput",
            "value": round(got / seconds),
            "unit": "records/s",
            "baseline": None,
            "ratio": None,
            "target": "report",
            "note": note,
        },
    ]


def _durability_rows(data: Path, stack_kw: dict[str, Any], n: int) -> list[dict[str, Any]]:
    """What the data directory holds after the bench, and how long a restart on it takes."""
    from acx.local.stack import LocalStack

    size = sum(p.stat().st_size for p in data.rglob("*") if p.is_file())
    started = time.perf_counter()
    with LocalStack(**stack_kw) as stack:
        seconds = time.perf_counter() - started
        api = _Api(stack.endpoint, stack.token("bench"))
        status, doc = api.call("GET", "/v1/packages/bench-bulk/log")
        _expect(status, doc, (200,), "log after restart")
    note = f"after the rows above ({n // 1000}k-record upload + inline uploads); log size {doc.get('size')}"
    return [
        {
            "name": "stack data directory size after the bench",
            "value": round(size / 1e6, 1),
            "unit": "MB",
            "baseline": None,
            "ratio": None,
            "target": "report",
            "note": note,
        },
        {
            "name": "stack restart after the bench",
            "value": round(seconds, 1),
            "unit": "s",
            "baseline": None,
            "ratio": None,
            "target": "report",
            "note": note,
        },
    ]


def run(quick: bool) -> list[dict[str, Any]]:
    import resource
    import tempfile

    from acx.local.stack import LocalStack

    tmp = tempfile.TemporaryDirectory(prefix="acx-bench-stack-")
    data = Path(tmp.name) / "data"
    # Durable, as `make serve` runs it: every commit fsynced.
    stack_kw: dict[str, Any] = {"port": 0, "quiet": True, "verify_interval": None, "data_dir": data}
    with tmp, LocalStack(**stack_kw) as stack:
        api = _Api(stack.endpoint, stack.token("bench"))
        status, doc = api.call("GET", "/v1/health")
        _expect(status, doc, (200,), "health")
        rows = _latency_rows(api, quick)
        before = resource.getrusage(resource.RUSAGE_SELF)
        presigned = _presigned_rows(api, quick)
        after = resource.getrusage(resource.RUSAGE_SELF)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        for row in presigned:
            row["note"] += (
                f"; CPU {cpu:.0f} s (this process: handlers and the embedded backend); durable data dir"
            )
        rows.extend(presigned)
        rows.extend(_listing_rows(stack.endpoint, stack.token("bench"), 10_000 if quick else 100_000))
        stack.close()
        rows.extend(_durability_rows(data, stack_kw, 10_000 if quick else 100_000))
        if stack.errors:
            rows.append(
                {
                    "name": "stack errors during the bench",
                    "value": len(stack.errors),
                    "unit": "",
                    "note": "; ".join(stack.errors[:5]),
                }
            )
    return rows


if __name__ == "__main__":
    for row in run("--quick" in sys.argv):
        print(json.dumps(row))
