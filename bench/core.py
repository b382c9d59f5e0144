"""The ingest core pipeline in one process, against a stdlib floor over the same bytes.

Core, per bundle of N generated ~1 KB records (bench/common.py; ~4% same-id edits, ~4% copies):
strict parse (``acx.cli.offline_merge.load_bundle``: orjson when provably equal to the strict parser,
else ``acx.core.canonical.loads``) -> ``validate_record`` -> ``canonical.dumps_record`` -> sha256 ->
``scrub.scan_bundle`` -> ``merge.slot_keys`` (content slot = artifact fingerprint + zone + codebase)
-> ``merge.merge_into`` against a dict-backed store pre-filled with N/2 existing survivors (5% of them
are re-uploaded by the bundle, the rest are other memories).

Floor, same run, same bytes: ``json.loads`` + ``hashlib.sha256`` of each record's sorted-key compact
``json.dumps`` + one compiled regex pass over the bundle bytes. Each side runs ``repeat`` times; the
fastest whole run is reported (its phases are listed as extra rows, in microseconds per record).

Extra rows time what the service's ingest path runs today where it differs from the core above:
``parse_bundle`` (the streamed reader: records cut out one by one, each parsed by ``canonical.loads``,
json with Python hooks) and ``refuse_forgotten``'s per-record ``canonical.sha256_hex`` and batch
``merge.slot_keys``.
"""

from __future__ import annotations

import gc
import hashlib
import json
import re
import sys
import time
from typing import Any

from bench.common import bundle_bytes, generate_records

TARGET_RATIO = 0.25


def _make_store(incoming: list[dict[str, Any]], size: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """(by_id, by_slot) of ``size`` merge survivors: 5% re-uploaded by ``incoming``, the rest other ids."""
    from acx.core.merge import merge_records, slot_keys

    overlap = incoming[: size // 20]
    others = generate_records(size - len(overlap), seed=2, prefix="old")
    stored = merge_records(others + overlap)
    slots = slot_keys(stored)
    return {r["id"]: r for r in stored}, dict(zip(slots, stored, strict=True))


def _core_once(data: bytes, by_id: dict[str, Any], by_slot: dict[str, Any]) -> tuple[dict[str, float], Any]:
    from acx.cli.offline_merge import load_bundle
    from acx.core.canonical import dumps_record
    from acx.core.merge import merge_into, slot_keys
    from acx.core.records import validate_record
    from acx.core.scrub import scan_bundle

    def lookup(ids: set[str], slots: set[str]) -> tuple[dict[str, Any], dict[str, Any]]:
        return ({i: by_id[i] for i in ids if i in by_id}, {s: by_slot[s] for s in slots if s in by_slot})

    phases: dict[str, float] = {}
    t0 = time.perf_counter()
    records = load_bundle(data)
    t1 = time.perf_counter()
    phases["parse (load_bundle)"] = t1 - t0
    for record in records:
        validate_record(record)
    t2 = time.perf_counter()
    phases["validate_record"] = t2 - t1
    canon = [dumps_record(r) for r in records]
    t3 = time.perf_counter()
    phases["canonicalize (dumps_record)"] = t3 - t2
    sha = hashlib.sha256
    hashes = [sha(b).hexdigest() for b in canon]
    t4 = time.perf_counter()
    phases["sha256"] = t4 - t3
    report = scan_bundle(records)
    t5 = time.perf_counter()
    phases["scrub (scan_bundle)"] = t5 - t4
    slots = slot_keys(records)
    t6 = time.perf_counter()
    phases["fingerprint (slot_keys)"] = t6 - t5
    plan = merge_into(lookup, records, slots)  # the slots hashed above, as ingest does
    t7 = time.perf_counter()
    phases["merge_into"] = t7 - t6
    if report.blocked:
        raise RuntimeError("bench records tripped the scrub gate")
    if len(hashes) != len(slots):
        raise RuntimeError("phase outputs disagree")
    return phases, plan


def _floor_once(data: bytes) -> dict[str, float]:
    pattern = re.compile(rb"AKIA[0-9A-Z]{16}")
    phases: dict[str, float] = {}
    t0 = time.perf_counter()
    records = json.loads(data)
    t1 = time.perf_counter()
    sha = hashlib.sha256
    dumps = json.dumps
    for record in records:
        sha(dumps(record, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()).hexdigest()
    t2 = time.perf_counter()
    pattern.findall(data)
    t3 = time.perf_counter()
    phases["json.loads"] = t1 - t0
    phases["json.dumps+sha256"] = t2 - t1
    phases["regex pass"] = t3 - t2
    return phases


def _best(runs: list[dict[str, float]]) -> dict[str, float]:
    return min(runs, key=lambda p: sum(p.values()))


def _service_extras(bundle: bytes, records: list[dict[str, Any]]) -> dict[str, float]:
    """Seconds for the parts of the service's ingest path that the core above replaces."""
    from acx.core.bundle import Limits, parse_bundle
    from acx.core.canonical import sha256_hex
    from acx.core.merge import slot_keys

    limits = Limits(max_body_bytes=len(bundle) + 1, max_records=len(records) + 1)
    out: dict[str, float] = {}
    t0 = time.perf_counter()
    parse_bundle(bundle, limits)
    t1 = time.perf_counter()
    for record in records:
        sha256_hex(record)
    t2 = time.perf_counter()
    slot_keys(records)
    t3 = time.perf_counter()
    out["service parse_bundle (streamed, canonical.loads per record + validate + limits)"] = t1 - t0
    out["service refuse_forgotten sha256_hex (dumps_record fast path)"] = t2 - t1
    out["service refuse_forgotten slot_keys (batch)"] = t3 - t2
    return out


def run(quick: bool) -> list[dict[str, Any]]:
    n = 10_000 if quick else 100_000
    repeat = 2 if quick else 3
    incoming = generate_records(n, seed=1)
    data = json.dumps(incoming, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    mb = len(data) / 1e6
    by_id, by_slot = _make_store(incoming, n // 2)
    core_runs: list[dict[str, float]] = []
    floor_runs: list[dict[str, float]] = []
    plan = None
    for _ in range(repeat):  # interleaved, so machine load hits both sides alike
        gc.collect()
        phases, plan = _core_once(data, by_id, by_slot)
        core_runs.append(phases)
        gc.collect()
        floor_runs.append(_floor_once(data))
    core = _best(core_runs)
    floor = _best(floor_runs)
    core_s, floor_s = sum(core.values()), sum(floor.values())
    core_rps, floor_rps = n / core_s, n / floor_s
    ratio = core_rps / floor_rps
    assert plan is not None
    note = (
        f"{n:,} records, {mb:.0f} MB, store {len(by_id):,} records; plan: {len(plan.writes):,} writes, "
        f"{plan.accepted:,} accepted, {plan.merged:,} merged, {plan.unchanged:,} unchanged; best of {repeat}"
    )
    rows: list[dict[str, Any]] = [
        {
            "name": f"core pipeline ({n // 1000}k records, parse..merge_into)",
            "value": round(core_rps),
            "unit": "records/s",
            "baseline": f"floor {round(floor_rps):,} records/s",
            "ratio": ratio,
            "target": f">= {TARGET_RATIO} of floor" + ("" if ratio >= TARGET_RATIO else " (MISSED)"),
            "note": note,
        },
        {
            "name": "floor (json.loads + json.dumps/sha256 per record + 1 regex pass)",
            "value": round(floor_rps),
            "unit": "records/s",
            "baseline": None,
            "ratio": None,
            "target": "reference",
            "note": ", ".join(f"{k} {v / n * 1e6:.1f} us/rec" for k, v in floor.items()),
        },
        {
            "name": "core scrub scan_bundle on the same text",
            "value": round(mb / core["scrub (scan_bundle)"], 1),
            "unit": "MB/s",
            "baseline": f"regex floor {mb / floor['regex pass']:,.0f} MB/s",
            "ratio": (mb / core["scrub (scan_bundle)"]) / (mb / floor["regex pass"]),
            "target": "report",
        },
    ]
    for name, seconds in core.items():
        rows.append(
            {
                "name": f"core phase: {name}",
                "value": round(seconds / n * 1e6, 2),
                "unit": "us/record",
                "baseline": None,
                "ratio": seconds / core_s,  # share of the core time
                "target": "share of core",
            }
        )
    bundle = bundle_bytes(incoming)
    extras = _service_extras(bundle, json.loads(data))
    for name, seconds in extras.items():
        rows.append(
            {
                "name": name,
                "value": round(seconds / n * 1e6, 2),
                "unit": "us/record",
                "baseline": None,
                "ratio": None,
                "target": "report (not in the core figure)",
            }
        )
    return rows


if __name__ == "__main__":
    for row in run("--quick" in sys.argv):
        print(json.dumps(row, ensure_ascii=False))
