"""Peak memory of the ingest function on one large presigned upload (issue: "a 100 MiB bundle must not
need 1 GiB of memory").

The parent writes a bundle of 100,000 records of ~1 KB (quick: 10,000) to a file and starts a fresh
child process, so nothing the parent allocated hides in the figure. The child runs the local stack on
its embedded backend: what it holds is what a Lambda function holds, the ingest handler (queue pump)
plus the gateway, whose object path streams the PUT to disk in 1 MiB chunks. The child creates the
upload, resets the kernel's peak-RSS counter (``/proc/self/clear_refs``, Linux), streams the file to
the presigned URL, waits for ``ingested`` and reads ``VmHWM``.
Linux only; elsewhere the row says so.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from bench.common import bundle_bytes, generate_records

LIMIT_MIB = 1024


def _status_kib(field: str) -> int:
    with open("/proc/self/status", encoding="ascii") as handle:
        for line in handle:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"{field} not in /proc/self/status")


def _child(path: str) -> dict[str, Any]:
    from acx.local.stack import LocalStack
    from bench.stack import _Api, _expect

    size = os.path.getsize(path)
    with LocalStack(port=0, quiet=True, verify_interval=None) as stack:
        api = _Api(stack.endpoint, stack.token("bench"))
        pkg = "bench-memory"
        status, up = api.call("POST", f"/v1/packages/{pkg}/uploads", json.dumps({"size": size}).encode())
        _expect(status, up, (200, 201), "create upload")
        baseline = _status_kib("VmRSS")
        with open("/proc/self/clear_refs", "w", encoding="ascii") as handle:
            handle.write("5")  # reset VmHWM to the current RSS
        started = time.perf_counter()
        headers = {**(up.get("headers") or {}), "Content-Length": str(size)}
        with open(path, "rb") as body:
            req = urllib.request.Request(up["url"], data=body, method="PUT", headers=headers)  # noqa: S310
            with urllib.request.urlopen(req, timeout=600) as resp:  # noqa: S310 - the local gateway
                if resp.status not in (200, 204):
                    raise RuntimeError(f"presigned PUT: HTTP {resp.status}")
        doc: Any = None
        while time.perf_counter() - started < 3600:
            status, doc = api.call("GET", f"/v1/packages/{pkg}/uploads/{up['uploadId']}")
            if doc.get("status") != "pending":
                break
            time.sleep(0.5)
        seconds = time.perf_counter() - started
        peak = _status_kib("VmHWM")
        if doc is None or doc.get("status") != "ingested":
            raise RuntimeError(f"upload ended as {json.dumps(doc)[:300]}")
    return {
        "bytes": size,
        "baseline_mib": baseline / 1024,
        "peak_mib": peak / 1024,
        "seconds": seconds,
        "accepted": doc["summary"]["accepted"],
    }


def run(quick: bool) -> list[dict[str, Any]]:
    if not os.path.exists("/proc/self/clear_refs"):
        return [{"name": "ingest peak memory", "value": "skipped: needs Linux /proc", "unit": ""}]
    n = 10_000 if quick else 100_000
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bundle.json"
        path.write_bytes(bundle_bytes(generate_records(n, seed=5, prefix="mem")))
        proc = subprocess.run(
            [sys.executable, "-m", "bench.ingest_memory", str(path)],
            capture_output=True,
            text=True,
            check=False,
        )
    if proc.returncode != 0:
        raise RuntimeError(f"child failed: {proc.stderr[-800:]}")
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    mib = out["bytes"] / 2**20
    note = (
        f"{n:,} records, {mib:.1f} MiB upload; process RSS {out['baseline_mib']:.0f} MiB before the PUT "
        f"(stack idle), ingested in {out['seconds']:.0f} s (moto)"
    )
    return [
        {
            "name": f"ingest peak RSS, {mib:.0f} MiB presigned upload",
            "value": round(out["peak_mib"]),
            "unit": "MiB",
            "baseline": f"{LIMIT_MIB} MiB",
            "ratio": out["peak_mib"] / LIMIT_MIB,
            "target": "< 1.0",
            "note": note,
        },
        {
            "name": "ingest memory growth per MiB uploaded",
            "value": round((out["peak_mib"] - out["baseline_mib"]) / mib, 2),
            "unit": "MiB/MiB",
            "baseline": None,
            "ratio": None,
            "target": "report",
            "note": note,
        },
    ]


if __name__ == "__main__":
    if len(sys.argv) == 2 and sys.argv[1] != "--quick":
        print(json.dumps(_child(sys.argv[1])))
    else:
        for row in run("--quick" in sys.argv):
            print(json.dumps(row))
