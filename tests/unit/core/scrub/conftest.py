"""What the scrub tests share: the verdict a client sees as (rule, offset) pairs, planted values, and
the linear-time measure of a hostile megabyte against a clean one.

Imported by name (``from tests.unit.core.scrub.conftest import named``); planted values are fake.
"""

from __future__ import annotations

import random
import time

from acx.core.scrub import engine, scan_text

# A GitHub personal access token of the right shape (its checksum is not valid, so only the rule's
# pattern names it, never the checksum path).
GITHUB_PAT = "ghp_Zq8Lm3Xv9Rt2Wp7Ny4Kb9Rt2Wp7Qa5Hc0d12"
# 27 token characters with no word, sequence or pattern in them: random to every judgement.
RANDOM_RUN_27 = "Zq8Lm3Xv9Rt2Wp7Ny4Kb9Rt2Wp7"


def named(text: str) -> list[tuple[str, int]]:
    """Each finding ``scan_text`` reports for ``text`` as its rule and byte offset, in report order."""
    return [(f.rule, f.offset) for f in scan_text(text)]


MIB = 1 << 20


def repeated_mib(piece: str) -> bytes:
    """``piece`` repeated to exactly one MiB of UTF-8."""
    raw = piece.encode()
    return (raw * (MIB // len(raw) + 1))[:MIB]


def _clean_mib() -> bytes:
    r = random.Random(3)
    words = "retry jitter deploy rollback the a of lease shard token bucket password reset flow".split()
    out = " ".join(r.choice(words) for _ in range(MIB // 5)).encode()
    return out[:MIB]


def _cost(buf: bytes) -> float:
    best = float("inf")
    for _ in range(3):
        started = time.perf_counter()
        engine.scan_bytes(buf)
        best = min(best, time.perf_counter() - started)
    return best


def assert_costs_a_few_clean_megabytes(name: str, hostile: bytes) -> None:
    """Scanning ``hostile`` (one MiB) costs at most six times a clean MiB of prose, plus 50 ms: the
    gate stays linear whatever the input (best of three runs each, after the rules are compiled)."""
    engine.scan_bytes(b"warm up the compiled rules")
    clean = _cost(_clean_mib())
    spent = _cost(hostile)
    assert spent <= 6 * clean + 0.05, (name, spent, clean)
