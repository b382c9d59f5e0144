"""The local stack's presigned ingest against issue 17's target, and what durability costs.

Runnable alone: ``.venv/bin/python -m bench.run --only stack_ingest`` (``--quick``: 10,000 records;
``ACX_BENCH_STACK_RECORDS=N`` for any other count, then the 100k figure is also projected from the
CPU per record).
``LocalStack(data_dir=<tmp>)``, durable as ``make serve`` runs it (every mutating moto request
journaled and fdatasync'ed), moto in this process. Rows:

- one presigned upload of 100,000 records (~93 MB, ``bench.common.generate_records(seed=3)``, the
  generator of ``bench/stack.py``): seconds from ``POST /uploads`` to ``ingested``, against the target
  (<= 120 s), with the CPU seconds of this process (handlers + moto) and the load average next to it,
  since the machine may be shared;
- the journal: requests journaled, bytes per request, and fdatasync of one small append;
- a restart that replays the whole journal (no snapshot: what a ``kill -9`` before any compaction
  leaves), the compaction itself (snapshot size, CPU), and a restart after it (snapshot load).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import bundle_bytes, generate_records
from bench.stack import _Api, _expect, presigned_ingest

TARGET_N = 100_000
TARGET_S = 120.0
NOTE = "local stack, moto in-process, durable data dir (journal + fdatasync)"


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


def _fsync_ms(directory: Path, count: int = 200) -> float:
    from acx.local.journal import Entry, Journal

    journal = Journal(directory / "fsync-probe.journal", fsync=True)
    entry = Entry("POST", "/", "", [("x-amz-target", "DynamoDB_20120810.PutItem")], b"x" * 1000, 1)
    started = time.perf_counter()
    for _ in range(count):
        journal.append(entry)
    journal.close()
    (directory / "fsync-probe.journal").unlink()
    return (time.perf_counter() - started) / count * 1000


def run(quick: bool) -> list[dict[str, Any]]:
    from acx.local.stack import LocalStack

    n = int(os.environ.get("ACX_BENCH_STACK_RECORDS") or (10_000 if quick else TARGET_N))
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="acx-bench-ingest-") as tmp:
        data = Path(tmp) / "data"
        kw: dict[str, Any] = {"port": 0, "quiet": True, "verify_interval": None, "data_dir": data}
        with LocalStack(**kw) as stack:
            app = stack._moto.journal_app
            api = _Api(stack.endpoint, stack.token("bench"))
            applied0, bytes0 = app.applied, app.tail_bytes
            load_before = _load()
            seconds, cpu, doc, size = _ingest(api, n, 900 if quick else 1800)
            load_after = _load()
            requests, journal_bytes = app.applied - applied0, app.tail_bytes - bytes0
            summary = doc.get("summary") or {}
            note = (
                f"{size / 1e6:.0f} MB, accepted {summary.get('accepted')}; CPU {cpu:.1f} s of this process "
                f"(handlers + moto); {load_before} before, {load_after} after; {NOTE}"
            )
            verdict = "met" if seconds <= TARGET_S else "NOT met"
            target = f"<= {TARGET_S:.0f} s: {verdict}" if n >= TARGET_N else "report (target is for 100k)"
            rows.append(
                _row(
                    f"stack ingest {n // 1000}k records presigned, POST..ingested",
                    round(seconds, 1),
                    "s",
                    note,
                    target,
                )
            )
            rows.append(_row(f"stack ingest {n // 1000}k records, CPU", round(cpu, 1), "s", note))
            rows.append(
                _row(f"stack ingest {n // 1000}k records throughput", round(n / seconds), "records/s", note)
            )
            rows.append(
                _row(
                    f"stack ingest {n // 1000}k records, CPU per record",
                    round(cpu / n * 1000, 3),
                    "ms",
                    f"{TARGET_S:.0f} s for {TARGET_N:,} records needs <= {TARGET_S / TARGET_N * 1000:.1f} ms "
                    "of CPU per record (the ingest is one thread: on a quiet machine wall ~ CPU)",
                )
            )
            if n != TARGET_N:
                rows.append(
                    _row(
                        f"stack ingest {TARGET_N // 1000}k projected from {n // 1000}k CPU",
                        round(cpu / n * TARGET_N, 1),
                        "s CPU",
                        "a projection, not a measurement: linear in the record count",
                        f"<= {TARGET_S:.0f} s",
                    )
                )
            jnote = f"{requests} journaled requests for the {n // 1000}k ingest, {journal_bytes / 1e6:.1f} MB"
            rows.append(
                _row(
                    "journal bytes per journaled request", round(journal_bytes / max(requests, 1)), "B", jnote
                )
            )
            rows.append(
                _row("journal fdatasync of one 1 KB append", round(_fsync_ms(data), 2), "ms", "200 appends")
            )
            app.close = lambda compact=True: type(app).close(app, compact=False)  # type: ignore[method-assign]
            errors = list(stack.errors)
        # Restart on the whole journal (what a kill -9 before any compaction leaves).
        started = time.perf_counter()
        with LocalStack(**kw) as stack:
            wall = time.perf_counter() - started
            stats = dict(stack._moto.journal_app.stats)
            mb = stats["replayed_bytes"] / 1e6
            rnote = f"{stats['replayed']} entries, {mb:.0f} MB; start {wall:.1f} s wall; {_load()}"
            rows.append(
                _row(
                    f"restart replaying the journal, {n // 1000}k records",
                    round(stats["replay_cpu"], 1),
                    "s CPU",
                    rnote,
                )
            )
            rows.append(
                _row(
                    f"restart replaying the journal, {n // 1000}k records, wall",
                    round(stats["replay_wall"], 1),
                    "s",
                    rnote,
                )
            )
            app = stack._moto.journal_app
            app.compact()
            cstats = dict(app.stats)
            cnote = (
                f"snapshot {cstats['snapshot_bytes'] / 1e6:.0f} MB; the stack is paused meanwhile; {_load()}"
            )
            rows.append(
                _row(f"compaction at {n // 1000}k records", round(cstats["compact_cpu"], 1), "s CPU", cnote)
            )
            rows.append(
                _row(
                    f"compaction at {n // 1000}k records, wall", round(cstats["compact_wall"], 1), "s", cnote
                )
            )
        started = time.perf_counter()
        with LocalStack(**kw) as stack:
            wall = time.perf_counter() - started
            stats = dict(stack._moto.journal_app.stats)
            snote = (
                f"{stats['replayed']} journal entries after the snapshot; start {wall:.1f} s wall; {_load()}"
            )
            rows.append(
                _row(
                    f"restart after compaction, {n // 1000}k records",
                    round(stats["replay_cpu"], 1),
                    "s CPU",
                    snote,
                )
            )
            rows.append(
                _row(
                    f"restart after compaction, {n // 1000}k records, wall",
                    round(stats["replay_wall"], 1),
                    "s",
                    snote,
                )
            )
            api = _Api(stack.endpoint, stack.token("bench"))
            status, log = api.call("GET", "/v1/packages/bench-bulk/log")
            _expect(status, log, (200,), "log after restart")
        if errors:
            rows.append(_row("stack errors during the ingest", len(errors), "", "; ".join(errors[:5])))
    return rows


if __name__ == "__main__":
    for row in run("--quick" in sys.argv):
        print(json.dumps(row))
