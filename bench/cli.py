"""Whole-process timings of the offline CLI (`acx merge`, `acx scrub`) over one 50k-record bundle.

The numbers include Python start-up and imports, because that is what a user waits for; the
baseline is an optimized Node implementation of the same commands on the same machine.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

WORDS = (
    "cache await async backoff config release merge batch lint table lock coroutine deploy schema "
    "deadlock stream migration dashboard log encoder partition replica disk index p95 latency review "
    "leak metric mutex parser timezone alarm timeout handler unicode pool bucket quota renewal type "
    "trace cron tag rotate socket check locale emoji flaky span retry cert shard worker queue"
).split()
SOURCE_TYPES = ("incident", "memory", "review", "test_fix", "Agent_Hired")
IMPACTS = ("positive", "neutral", "negative")
PROJECTS = ("api", "Company Standby", "portable-core", "billing")
XP = (0, 1, 2.5, 5, 10, 25, 50, 100)

MERGE_BASELINE_S = 1.7
SCRUB_BASELINE_S = 1.2


def _sentence(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def _record(rng: random.Random, index: int) -> dict[str, Any]:
    portable = rng.random() >= 0.25
    codebase = None
    if not portable:
        codebase = "cbf1_" + hashlib.sha256(f"repo-{rng.randrange(8)}".encode()).hexdigest()[:40]
    ts = f"2026-{rng.randrange(1, 13):02d}-{rng.randrange(1, 29):02d}T{rng.randrange(24):02d}:"
    ts += f"{rng.randrange(60):02d}:00.{rng.randrange(1000):03d}Z"
    summary = _sentence(rng, 150)
    if rng.random() < 0.2:
        summary += " é ü 日本 🚀"
    return {
        "id": f"mem-{index // 1000:03d}-{index:06d}",
        "title": _sentence(rng, rng.randrange(3, 9)),
        "summary": summary,
        "sourceType": rng.choice(SOURCE_TYPES),
        "portable": portable,
        "codebaseFingerprint": codebase,
        "repoId": None,
        "repoLabel": "portable-core" if portable else "field-learned",
        "projectLabel": rng.choice(PROJECTS),
        "markdownPath": f"memories/{index:06d}.md",
        "timestamp": ts,
        "impact": rng.choice(IMPACTS),
        "xpAwarded": rng.choice(XP),
        "tags": sorted({rng.choice(WORDS) for _ in range(rng.randrange(0, 6))}),
    }


def generate_records(n: int, seed: int = 1) -> list[dict[str, Any]]:
    """``n`` valid records (~1.4 KB each, 25% field-learned) with ~4% same-id edits and ~4% same-content
    copies under another id, deterministic for a given ``seed`` (so every run benches the same input)."""
    rng = random.Random(seed)
    records: list[dict[str, Any]] = []
    index = 0
    while len(records) < n:
        roll = rng.random()
        if records and roll < 0.04:
            # An edit of an earlier memory: same id, longer summary, later timestamp, one more tag.
            base = dict(rng.choice(records))
            base["summary"] = base["summary"] + " " + _sentence(rng, 3)
            base["timestamp"] = "2027" + base["timestamp"][4:]
            base["tags"] = [*base["tags"], rng.choice(WORDS)]
            base["xpAwarded"] = rng.choice(XP)
            records.append(base)
        elif records and roll < 0.08:
            # The same memory uploaded by another agent under its own id (same content slot).
            base = dict(rng.choice(records))
            base["id"] = f"alt-{index // 1000:03d}-{index:06d}"
            base["title"] = "  " + base["title"].upper() + " "
            base["tags"] = list(reversed(base["tags"]))
            records.append(base)
            index += 1
        else:
            records.append(_record(rng, index))
            index += 1
    return records


def write_bundle(path: Path, n: int, seed: int = 1) -> int:
    """Write ``generate_records(n, seed)`` as one JSON array; returns the byte size."""
    data = json.dumps(generate_records(n, seed), ensure_ascii=False).encode("utf-8")
    path.write_bytes(data)
    return len(data)


def _acx() -> list[str]:
    exe = shutil.which("acx", path=str(Path(sys.executable).parent))
    return [exe] if exe else [sys.executable, "-m", "acx.cli.main"]


def time_command(argv: list[str], repeat: int) -> tuple[float, int]:
    """Median wall time of ``repeat`` runs of ``argv`` (output discarded) and the last exit code."""
    times: list[float] = []
    code = 0
    for _ in range(repeat):
        started = time.perf_counter()
        proc = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False)
        times.append(time.perf_counter() - started)
        code = proc.returncode
    return statistics.median(times), code


def _has_command(name: str) -> bool:
    proc = subprocess.run([*_acx(), name, "--help"], capture_output=True, check=False)
    return proc.returncode == 0


def run(quick: bool) -> list[dict]:
    """Bench rows for `acx merge` (and `acx scrub` when that command exists) over 50k records."""
    n = 5_000 if quick else 50_000
    repeat = 1 if quick else 5
    rows: list[dict] = []
    with tempfile.TemporaryDirectory() as tmp:
        bundle = Path(tmp) / "bundle.json"
        size = write_bundle(bundle, n)
        env_note = f"{n:,} records, {size / 1e6:.1f} MB"
        seconds, code = time_command([*_acx(), "merge", str(bundle)], repeat)
        if code != 0:
            raise RuntimeError(f"acx merge exited {code}")
        rows.append(
            {
                "name": f"acx merge {n // 1000}k records (whole process)",
                "value": round(seconds, 3),
                "unit": "s",
                "baseline": f"Node reference {MERGE_BASELINE_S} s",
                "ratio": seconds / MERGE_BASELINE_S,
                "target": "<= 1.0",
                "note": env_note,
            }
        )
        if _has_command("scrub"):
            seconds, code = time_command([*_acx(), "scrub", str(bundle)], repeat)
            rows.append(
                {
                    "name": f"acx scrub {n // 1000}k records (whole process)",
                    "value": round(seconds, 3),
                    "unit": "s",
                    "baseline": f"Node reference {SCRUB_BASELINE_S} s",
                    "ratio": seconds / SCRUB_BASELINE_S,
                    "target": "<= 1.0",
                    "note": f"{env_note}, exit {code}",
                }
            )
    return rows


if __name__ == "__main__":
    for row in run("--quick" in sys.argv):
        print(json.dumps(row))
    if os.environ.get("ACX_BENCH_KEEP"):
        write_bundle(Path(os.environ["ACX_BENCH_KEEP"]), 50_000)
