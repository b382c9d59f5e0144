"""The local stack's presigned ingest against issue 17's target, and what its durability costs.

Runnable alone: ``.venv/bin/python -m bench.run --only stack_ingest`` (``--quick``: 10,000 records;
``ACX_BENCH_STACK_RECORDS=N`` for any other count). ``LocalStack(data_dir=<tmp>)``, durable as
``make serve`` runs it (the embedded backend: every commit fsynced). Rows:

- one presigned upload of 100,000 records (~93 MB, ``bench.common.generate_records(seed=3)``, the
  generator of ``bench/stack.py``): seconds from ``POST /uploads`` to ``ingested``, against the target
  (<= 120 s), with the CPU seconds of this process (handlers + backend) and the load average next to
  it, since the machine may be shared;
- the data directory's size after it, and a restart on it after a clean stop (the start checks every
  stored object's checksum);
- a restart after kill -9: ``python -m acx.local.serve`` on that directory, a stream of acknowledged
  inline writes and an acknowledged presigned upload, SIGKILL, a new start: its seconds, and how many
  acknowledged records are missing (target: 0) once the upload has finished.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

from bench.common import bundle_bytes, generate_records
from bench.stack import _Api, _expect, presigned_ingest

TARGET_N = 100_000
TARGET_S = 120.0
NOTE = "local stack on the embedded backend, durable data dir (SQLite WAL + fsync, objects fsynced)"


def _row(name: str, value: Any, unit: str, note: str, target: str = "report") -> dict[str, Any]:
    return {
        "name": name,
        "value": value,
        "unit": unit,
        "baseline": None,
        "ratio": None,
        "target": target,
        "note": note,
    }


def _load() -> str:
    return "load average " + " ".join(f"{x:.1f}" for x in os.getloadavg())


def _ingest(api: _Api, n: int, budget: float) -> tuple[float, float, dict[str, Any], int]:
    body = bundle_bytes(generate_records(n, seed=3, prefix="bulk"))
    cpu0 = time.process_time()
    seconds, _, doc = presigned_ingest(api, "bench-bulk", body, budget)
    return seconds, time.process_time() - cpu0, doc, len(body)


class _Serve:
    """``python -m acx.local.serve`` on a data directory, in its own process (so it can be killed)."""

    def __init__(self, data: Path) -> None:
        self.data = data
        self.proc: subprocess.Popen[str] | None = None
        self.endpoint = ""

    def start(self) -> float:
        started = time.perf_counter()
        argv = [sys.executable, "-m", "acx.local.serve", "--port", "0", "--data", str(self.data)]
        self.proc = subprocess.Popen(
            [*argv, "--verify-interval", "0"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
        )
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.strip().startswith("API endpoint"):
                self.endpoint = line.split()[-1]
                threading.Thread(target=self.proc.stdout.read, daemon=True).start()
                return time.perf_counter() - started
        raise RuntimeError("serve exited before printing its endpoint")

    def api(self) -> _Api:
        req = urllib.request.Request(  # noqa: S310 - the local gateway
            self.endpoint + "/local/token", data=json.dumps({"tenant": "bench"}).encode(), method="POST"
        )
        with urllib.request.urlopen(req, timeout=60) as resp:  # noqa: S310
            return _Api(self.endpoint, json.loads(resp.read())["token"])

    def stop(self, sig: int) -> None:
        assert self.proc is not None
        self.proc.send_signal(sig)
        self.proc.wait(120)


def _ids(api: _Api, pkg: str) -> set[str]:
    ids: set[str] = set()
    cursor = ""
    while True:
        status, doc = api.call("GET", f"/v1/packages/{pkg}/memories?limit=1000{cursor}")
        _expect(status, doc, (200,), "listing")
        ids.update(r["id"] for r in doc["records"])
        if not doc.get("nextCursor"):
            return ids
        cursor = f"&cursor={doc['nextCursor']}"


def kill_restart(data: Path, upload_n: int = 20_000) -> list[dict[str, Any]]:
    """Acknowledged writes and an acknowledged upload, SIGKILL, restart: seconds and losses."""
    s = _Serve(data)
    s.start()
    api = s.api()
    acked: set[str] = set()
    stop = threading.Event()

    def writer() -> None:
        i = 0
        while not stop.is_set():
            batch = generate_records(20, seed=500_000 + i, prefix=f"k{i}")
            try:
                status, _ = api.call("POST", "/v1/packages/bench-kill/bundles", bundle_bytes(batch))
            except OSError:
                return  # died mid-request: not acknowledged
            if status == 201:
                acked.update(r["id"] for r in batch if "alt-" not in r["id"])
            i += 1

    body = bundle_bytes(generate_records(upload_n, seed=4, prefix="killed-upload"))
    status, up = api.call(
        "POST", "/v1/packages/bench-kill-up/uploads", json.dumps({"size": len(body)}).encode()
    )
    _expect(status, up, (201,), "create upload")
    t = threading.Thread(target=writer)
    t.start()
    req = urllib.request.Request(up["url"], data=body, method="PUT", headers=up["headers"])  # noqa: S310
    with urllib.request.urlopen(req, timeout=600) as resp:  # noqa: S310
        assert resp.status == 200  # acknowledged: its S3 event is queued
    time.sleep(3.0)  # the ingest and the writer are mid-way
    s.stop(signal.SIGKILL)
    stop.set()
    t.join(60)
    s = _Serve(data)
    start_s = s.start()
    api = s.api()
    t0 = time.perf_counter()
    while True:
        status, job = api.call("GET", f"/v1/packages/bench-kill-up/uploads/{up['uploadId']}")
        if job.get("status") != "pending" or time.perf_counter() - t0 > 900:
            break
        time.sleep(0.5)
    finish_s = time.perf_counter() - t0
    missing = len(acked - _ids(api, "bench-kill"))
    uploaded = generate_records(upload_n, seed=4, prefix="killed-upload")
    missing_up = len({r["id"] for r in uploaded if "alt-" not in r["id"]} - _ids(api, "bench-kill-up"))
    status, verdict = api.call("GET", "/v1/packages/bench-kill/log/verify")
    s.stop(signal.SIGTERM)
    note = (
        f"{len(acked)} acknowledged inline records and a {upload_n // 1000}k-record upload acknowledged "
        f"(PUT 200) before SIGKILL; upload {job.get('status')} {finish_s:.1f} s after the restart; "
        f"log verify {verdict.get('status')}; {_load()}"
    )
    return [
        _row("restart after kill -9, start", round(start_s, 1), "s", note),
        _row(
            "restart after kill -9, acknowledged records missing",
            missing + missing_up,
            "records",
            note,
            "0: " + ("met" if missing + missing_up == 0 and job.get("status") == "ingested" else "NOT met"),
        ),
    ]


def run(quick: bool) -> list[dict[str, Any]]:
    from acx.local.stack import LocalStack

    n = int(os.environ.get("ACX_BENCH_STACK_RECORDS") or (10_000 if quick else TARGET_N))
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="acx-bench-ingest-") as tmp:
        data = Path(tmp) / "data"
        kw: dict[str, Any] = {"port": 0, "quiet": True, "verify_interval": None, "data_dir": data}
        with LocalStack(**kw) as stack:
            api = _Api(stack.endpoint, stack.token("bench"))
            load_before = _load()
            seconds, cpu, doc, size = _ingest(api, n, 900 if quick else 1800)
            load_after = _load()
            summary = doc.get("summary") or {}
            note = (
                f"{size / 1e6:.0f} MB, accepted {summary.get('accepted')}; CPU {cpu:.1f} s of this process "
                f"(handlers + backend); {load_before} before, {load_after} after; {NOTE}"
            )
            verdict = "met" if seconds <= TARGET_S else "NOT met"
            target = f"<= {TARGET_S:.0f} s: {verdict}" if n >= TARGET_N else "report (target is for 100k)"
            name = f"stack ingest {n // 1000}k records"
            rows.append(_row(f"{name} presigned, POST..ingested", round(seconds, 1), "s", note, target))
            rows.append(_row(f"{name}, CPU", round(cpu, 1), "s", note))
            rows.append(_row(f"{name} throughput", round(n / seconds), "records/s", note))
            errors = list(stack.errors)
        size_mb = sum(p.stat().st_size for p in data.rglob("*") if p.is_file()) / 1e6
        rows.append(_row(f"data directory after {n // 1000}k records", round(size_mb, 1), "MB", NOTE))
        started = time.perf_counter()
        with LocalStack(**kw) as stack:
            wall = time.perf_counter() - started
            api = _Api(stack.endpoint, stack.token("bench"))
            status, log = api.call("GET", "/v1/packages/bench-bulk/log")
            _expect(status, log, (200,), "log after restart")
        rows.append(
            _row(
                f"restart after a clean stop, {n // 1000}k records",
                round(wall, 1),
                "s",
                f"log size {log.get('size')}; every object's checksum checked; {_load()}",
            )
        )
        rows.extend(kill_restart(data, 2_000 if quick else 20_000))
        if errors:
            rows.append(_row("stack errors during the ingest", len(errors), "", "; ".join(errors[:5])))
    return rows


if __name__ == "__main__":
    for row in run("--quick" in sys.argv):
        print(json.dumps(row))
