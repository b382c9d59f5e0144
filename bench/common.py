"""Shared helpers of the benchmarks (the runner skips this module).

``generate_records`` is the one record generator: 25% field-learned, ~4% same-id edits and ~4%
same-content copies under another id. The default 90-word summary makes a record ~1 KB of JSON (a
100,000-record bundle stays under the 100 MiB presigned-upload limit); bench/cli.py asks for 150 words
(~1.4 KB records, the CLI figure's input).
"""

from __future__ import annotations

import hashlib
import json
import random
import statistics
import time
from collections.abc import Callable
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


def _sentence(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def _record(rng: random.Random, index: int, prefix: str, summary_words: int) -> dict[str, Any]:
    portable = rng.random() >= 0.25
    codebase = None
    if not portable:
        codebase = "cbf1_" + hashlib.sha256(f"repo-{rng.randrange(8)}".encode()).hexdigest()[:40]
    ts = f"2026-{rng.randrange(1, 13):02d}-{rng.randrange(1, 29):02d}T{rng.randrange(24):02d}:"
    ts += f"{rng.randrange(60):02d}:00.{rng.randrange(1000):03d}Z"
    summary = _sentence(rng, summary_words)
    if rng.random() < 0.2:
        summary += " é ü 日本 🚀"
    return {
        "id": f"{prefix}-{index // 1000:03d}-{index:06d}",
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


def portable_record(rid: str, title: str, summary: str, xp: int, tags: list[str]) -> dict[str, Any]:
    """One transferable record of the benches that choose their own text (log, forget)."""
    return {
        "id": rid,
        "title": title,
        "summary": summary,
        "sourceType": "incident",
        "repoId": None,
        "repoLabel": "portable-core",
        "projectLabel": "portable-core",
        "timestamp": "2025-06-01T12:00:00Z",
        "impact": "neutral",
        "xpAwarded": xp,
        "tags": tags,
        "portable": True,
        "codebaseFingerprint": None,
    }


def generate_records(
    n: int, seed: int = 1, prefix: str = "mem", summary_words: int = 90, start: int = 0
) -> list[dict[str, Any]]:
    """``n`` valid records (~1 KB each with the default 90-word summary), deterministic per ``seed``.

    ~4% are edits of an earlier record (same id, longer summary, later timestamp, one more tag) and ~4%
    the same memory under another id (``alt-`` prefix); ids of fresh records start at ``start``.
    """
    rng = random.Random(seed)
    records: list[dict[str, Any]] = []
    index = start
    alt = "alt" if prefix == "mem" else f"{prefix}alt"
    while len(records) < n:
        roll = rng.random()
        if records and roll < 0.04:
            base = dict(rng.choice(records))
            base["summary"] = base["summary"] + " " + _sentence(rng, 3)
            base["timestamp"] = "2027" + base["timestamp"][4:]
            base["tags"] = [*base["tags"], rng.choice(WORDS)]
            base["xpAwarded"] = rng.choice(XP)
            records.append(base)
        elif records and roll < 0.08:
            base = dict(rng.choice(records))
            base["id"] = f"{alt}-{index // 1000:03d}-{index:06d}"
            base["title"] = "  " + base["title"].upper() + " "
            base["tags"] = list(reversed(base["tags"]))
            records.append(base)
            index += 1
        else:
            records.append(_record(rng, index, prefix, summary_words))
            index += 1
    return records


def bundle_bytes(records: list[dict[str, Any]]) -> bytes:
    """An upload bundle (``{"schemaVersion", "records"}``) as compact UTF-8 JSON."""
    from acx.core.bundle import SCHEMA_VERSION

    doc = {"schemaVersion": SCHEMA_VERSION, "records": records}
    return json.dumps(doc, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def percentile(values: list[float], q: float) -> float:
    """The ``q`` quantile (0..1) with linear interpolation (``statistics.quantiles`` inclusive)."""
    ordered = sorted(values)
    if len(ordered) == 1:
        return ordered[0]
    pos = q * (len(ordered) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def median(values: list[float]) -> float:
    return statistics.median(values)


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    """(seconds, result) of one call."""
    started = time.perf_counter()
    result = fn()
    return time.perf_counter() - started, result


#: What a filter may add to the read it filters: the trust filter's target (issue 29: listing and
#: search with the filter within 10% of without, at 100,000 memories).
FILTER_TARGET = 1.10


def alternating(variants: dict[str, Callable[[], Any]], rounds: int) -> dict[str, tuple[float, float]]:
    """Each variant's best CPU and wall seconds over ``rounds`` runs, the variants' order alternating
    from round to round (a load that drifts during the run weighs on both). CPU is this process's
    (every thread: client, gateway, handler and moto where they share it); best, not mean: on a
    shared machine the extra time is other processes', not the code's."""
    names = list(variants)
    best = {n: (float("inf"), float("inf")) for n in names}
    for r in range(rounds):
        for name in names if r % 2 == 0 else reversed(names):
            c0, t0 = time.process_time(), time.perf_counter()
            variants[name]()
            cpu, wall = time.process_time() - c0, time.perf_counter() - t0
            best[name] = (min(best[name][0], cpu), min(best[name][1], wall))
    return best


def filter_row(
    name: str, filtered: tuple[float, float], baseline: tuple[float, float], note: str
) -> dict[str, Any]:
    """A figure of a filtered read against the same read without the filter, measured in the same run:
    the ratio of their CPU seconds against :data:`FILTER_TARGET`."""
    ratio = filtered[0] / baseline[0] if baseline[0] else None
    met = "met" if ratio is not None and ratio <= FILTER_TARGET else "NOT met"
    return {
        "name": name,
        "value": round(filtered[0], 3),
        "unit": "s CPU",
        "baseline": f"{baseline[0]:.3f} s CPU without the filter (trust=any), same run",
        "ratio": ratio,
        "target": f"<= {FILTER_TARGET:.2f}: {met}",
        "note": f"wall {filtered[1]:.2f} s with, {baseline[1]:.2f} s without; " + note,
    }
