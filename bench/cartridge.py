"""Cartridge export throughput and peak memory: build_cartridge + LocalEd25519Signer at two sizes.

Each size runs in its own subprocess so ru_maxrss is that export's peak, not the largest so far.
Seconds per 10,000 records should stay flat between the sizes (linear export).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _records(n: int):  # type: ignore[no-untyped-def]
    for i in range(n):
        yield {
            "id": f"mem-{i:07d}",
            "title": f"lesson {i} about retries",
            "sourceType": "review",
            "summary": f"when the deploy step {i % 97} times out, back off and retry with jitter",
            "portable": i % 10 != 0,
            "codebaseFingerprint": None if i % 10 else "cbf1_" + "ab" * 20,
            "repoId": None if i % 10 else "github.com/acme/api",
            "repoLabel": "api",
            "projectLabel": "Acme",
            "timestamp": "2026-01-02T03:04:05.000Z",
            "impact": "neutral",
            "xpAwarded": 1,
            "tags": ["deploy", "retry"],
        }


def child(n: int) -> None:
    """Export ``n`` records once; print seconds and peak RSS as JSON."""
    import resource

    from acx.core.export import build_cartridge
    from acx.core.signing import LocalEd25519Signer

    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        res = build_cartridge(
            Path(tmp) / "b.acx",
            _records(n),
            [("rom/knowledge/A.md", b"# a\n")],
            signer=LocalEd25519Signer(),
            publisher_id="com.example.bench",
            artifact_id="bench",
            artifact_version="1",
        )
        seconds = time.perf_counter() - start
        size = (Path(tmp) / "b.acx").stat().st_size
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(
        json.dumps(
            {
                "seconds": seconds,
                "peak_mib": peak_kib / 1024,
                "bytes": size,
                "rom": res.counts["rom"],
                "quarantined": res.quarantined,
            }
        )
    )


def _measure(n: int) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", f"import bench.cartridge as b; b.child({n})"],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parent.parent,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def run(quick: bool) -> list[dict]:
    """Rows for bench/run.py."""
    small, large = (1_000, 10_000) if quick else (10_000, 100_000)
    rows: list[dict] = []
    per: dict[int, float] = {}
    for n in (small, large):
        m = _measure(n)
        per[n] = m["seconds"] / n * 10_000
        rows += [
            {
                "name": f"export {n} records",
                "value": round(m["seconds"], 2),
                "unit": "s",
                "baseline": None,
                "ratio": None,
                "target": None,
            },
            {
                "name": f"export {n} records peak RSS",
                "value": round(m["peak_mib"], 1),
                "unit": "MiB",
                "baseline": None,
                "ratio": None,
                "target": "bounded (not proportional to records)",
            },
            {
                "name": f"export {n} records per 10k",
                "value": round(per[n], 2),
                "unit": "s/10k",
                "baseline": None,
                "ratio": None,
                "target": None,
            },
            {
                "name": f"export {n} records file size",
                "value": round(m["bytes"] / 2**20, 1),
                "unit": "MiB",
                "baseline": None,
                "ratio": None,
                "target": None,
            },
        ]
    rows.append(
        {
            "name": "export s/10k large vs small (linear = ~1)",
            "value": round(per[large] / per[small], 2),
            "unit": "x",
            "baseline": round(per[small], 2),
            "ratio": round(per[large] / per[small], 2),
            "target": "<= 1.5",
        }
    )
    return rows
