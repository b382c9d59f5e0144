"""Log store benchmarks on in-process moto: write requests and WCU per record, append cost vs log
size, verification throughput next to a sha256 floor."""

from __future__ import annotations

import hashlib
import math
import os
import random
import time
from typing import Any

os.environ.setdefault("AWS_ACCESS_KEY_ID", "bench")
os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "bench")
os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")

WRITE_OPS = {"PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems"}
READ_OPS = {"GetItem", "BatchGetItem", "Query", "Scan", "TransactGetItems"}
WORDS = (
    "retry backoff jitter deploy rollback cache index shard lease token queue timeout schema migration "
    "alarm metric budget review lint canary latency throughput idempotent replay checksum"
).split()


def _av_size(av: dict[str, Any]) -> int:
    ((kind, v),) = av.items()
    if kind == "S":
        return len(v.encode())
    if kind == "B":
        return len(v)
    if kind == "N":
        return len(v) // 2 + 1
    if kind in ("BOOL", "NULL"):
        return 1
    if kind == "L":
        return 3 + sum(_av_size(x) + 1 for x in v)
    if kind == "M":
        return 3 + sum(len(k) + _av_size(x) + 1 for k, x in v.items())
    return 8


def item_size(item: dict[str, Any]) -> int:
    """DynamoDB item size: attribute names + values (the documented rule, approximately)."""
    return sum(len(k) + _av_size(v) for k, v in item.items())


def wcu(item: dict[str, Any] | None, transactional: bool = False) -> int:
    units = max(1, math.ceil(item_size(item) / 1024)) if item else 1
    return units * (2 if transactional else 1)


class Meter:
    """Counts requests and WCU by hooking botocore's before-parameter-build event (API params)."""

    def __init__(self, client: Any) -> None:
        self.writes = self.reads = self.wcu = 0
        self.by_pk: dict[str, int] = {}  # BatchWriteItem WCU per partition key (row writes)
        client.meta.events.register("before-parameter-build.dynamodb.*", self._on_call)

    def reset(self) -> None:
        self.writes = self.reads = self.wcu = 0
        self.by_pk = {}

    def _on_call(self, model: Any, params: dict[str, Any], **_: Any) -> None:
        op = model.name
        if op in READ_OPS:
            self.reads += 1
        if op not in WRITE_OPS:
            return
        self.writes += 1
        if op == "PutItem":
            self.wcu += wcu(params["Item"])
        elif op in ("UpdateItem", "DeleteItem"):
            self.wcu += wcu(params.get("Key"))  # head updates stay < 1 KB: 1 unit
        elif op == "BatchWriteItem":
            for reqs in params["RequestItems"].values():
                for r in reqs:
                    units = wcu(r["PutRequest"]["Item"]) if "PutRequest" in r else 1
                    self.wcu += units
                    pk = (r["PutRequest"]["Item"] if "PutRequest" in r else r["DeleteRequest"]["Key"])["pk"][
                        "S"
                    ]
                    self.by_pk[pk] = self.by_pk.get(pk, 0) + units
        else:
            for t in params["TransactItems"]:
                body = t.get("Put", {}).get("Item")
                if body is None and "Update" in t:
                    body = {**t["Update"]["Key"], **t["Update"].get("ExpressionAttributeValues", {})}
                if body is None and "ConditionCheck" in t:
                    self.wcu += 2  # a ConditionCheck is billed like a transactional write of a small item
                    continue
                self.wcu += wcu(body, transactional=True)


def make_record(i: int, rnd: random.Random) -> dict[str, Any]:
    from bench.common import portable_record

    summary = " ".join(rnd.choice(WORDS) for _ in range(110))
    title = f"lesson {i}: " + " ".join(rnd.choice(WORDS) for _ in range(6))
    tags = sorted({rnd.choice(WORDS) for _ in range(3)})
    return portable_record(f"rec-{i:06d}", title, summary, i % 50, tags)


def _setup(row_shards: int | None = None) -> tuple[Any, Any, Any]:
    import boto3

    from acx.adapters.log_store import LogStore
    from acx.config import Settings
    from acx.core.checkpoint import NoteSigner
    from acx.core.signing import LocalEd25519Signer
    from acx.local.resources import create_tables_named

    settings = Settings.model_validate({})
    client = boto3.client("dynamodb", region_name="us-east-1")
    tables = {
        "RECORDS_TABLE": settings.records_table,
        "RECEIPTS_TABLE": settings.receipts_table,
        "HEADS_TABLE": settings.heads_table,
    }
    create_tables_named(client, tables)  # as template.yaml declares them
    notes = NoteSigner("acx-bench", LocalEd25519Signer())
    extra = {} if row_shards is None else {"row_shards": row_shards}
    return client, settings, LogStore(client, settings, notes.sign, notes.verifier_key, **extra)


def _ingest(store: Any, package: str, records: list[dict[str, Any]]) -> None:
    from acx.core.canonical import sha256_hex
    from acx.core.package import PackageRef
    from acx.core.rows import RecordWrite

    ref = PackageRef("t", package)
    writes = [RecordWrite(r, sha256_hex({"s": r["summary"], "t": r["title"]})) for r in records]
    # As ingest does: look up ids and slots, and have the claim check both (no slot filled twice).
    found = store.rows.lookup(ref, {r["id"] for r in records}, {w.slot for w in writes})
    expected = found.seen_seqs({r["id"] for r in records})
    store.append(ref, "bench", writes, expected=expected, expected_slots=found.pointers)


def _seed_head(client: Any, settings: Any, package: str, size: int) -> None:
    """A package of ``size`` entries in the real head format (compact range), built directly."""
    from acx.adapters.dynamo import to_item
    from acx.core import merkle

    rng = merkle.CompactRange()
    last = "0" * 64
    for i in range(size):
        last = hashlib.sha256(i.to_bytes(8, "big")).hexdigest()
        rng.append(bytes.fromhex(last))
    client.put_item(
        TableName=settings.heads_table,
        Item=to_item(
            {"pk": f"t#{package}", "sk": "head", "size": size, "chainHead": last, "range": rng.to_hex()}
        ),
    )


class _Prefetched:
    """The store's data held in memory, to time the verifier's own work without moto's Query cost."""

    def __init__(self, store: Any, ref: Any) -> None:
        self._vkey = store.verifier_key()
        self._entries = list(store.entries(ref))
        self._rows = list(store.all_rows(ref))
        self._head = store.log_head(ref)
        self._cp = store.latest_checkpoint(ref)

    def log_head(self, ref: Any) -> Any:
        return self._head

    def entries(self, ref: Any, start: int = 0, end: int | None = None) -> Any:
        return iter([e for e in self._entries if e.seq >= start and (end is None or e.seq < end)])

    def all_rows(self, ref: Any) -> Any:
        return iter(self._rows)

    def rows_by_key(self, ref: Any, keys: Any) -> list[Any]:
        return []

    def latest_checkpoint(self, ref: Any) -> str | None:
        return self._cp

    def verifier_key(self) -> str:
        return self._vkey

    def witness(self, ref: Any) -> dict[str, Any] | None:
        return None

    def put_witness(self, ref: Any, state: dict[str, Any]) -> bool:
        return True

    def packages(self) -> Any:
        return iter(())


def _hottest_key(store: Any, meter: Meter, records: list[dict[str, Any]], quick: bool) -> dict[str, Any]:
    """WCU on the busiest partition key for one package's upload: the sharded layout against one key
    (a package from before sharding). DynamoDB serves 1,000 WCU/s per partition, so this bounds how
    fast any writer can land the rows; the figure is seconds at that limit for 100,000 records."""
    from acx.adapters.log_store import LogStore

    one = LogStore(store.dynamo.client, _settings(), store.committer.sign, store.verifier_key, row_shards=1)
    n = len(records)
    hottest = {}
    for name, target in (("sharded", store), ("one-key", one)):
        meter.reset()
        for k in range(0, n, 500):
            _ingest(target, f"hot-{name}", records[k : k + 500])
        hottest[name] = max(meter.by_pk.values()) * 100_000 / n / 1000
    return {
        "name": f"seconds at 1,000 WCU/s on the busiest key, 100,000 records (from {n:,})",
        "value": round(hottest["sharded"], 1),
        "unit": "s",
        "baseline": round(hottest["one-key"], 1),
        "ratio": hottest["sharded"] / hottest["one-key"],
        "target": "ratio <= 0.25 (baseline: all rows on one partition key)",
    }


def _settings() -> Any:
    from acx.config import Settings

    return Settings.model_validate({})


def run(quick: bool) -> list[dict[str, Any]]:
    from moto import mock_aws

    from acx.core.canonical import dumps
    from acx.core.package import PackageRef
    from acx.usecases.verify import verify_package

    rows: list[dict[str, Any]] = []
    rnd = random.Random(7)
    with mock_aws():
        client, settings, store = _setup()
        meter = Meter(client)
        records = [make_record(i, rnd) for i in range(1000)]
        raw = sum(len(dumps(r)) for r in records) / len(records)
        meter.reset()
        for k in range(10):
            _ingest(store, "ingest", records[100 * k : 100 * (k + 1)])
        rows += [
            {
                "name": "record canonical size",
                "value": round(raw),
                "unit": "B",
                "baseline": None,
                "ratio": None,
                "target": "~1 KB",
            },
            {
                "name": "WCU per record (1,000 x ~1 KB, 10 ops)",
                "value": round(meter.wcu / 1000, 3),
                "unit": "WCU",
                "baseline": None,
                "ratio": None,
                "target": "<= 1.3",
            },
            {
                "name": "write requests per 1,000 records",
                "value": meter.writes,
                "unit": "requests",
                "baseline": None,
                "ratio": None,
                "target": "<= 60",
            },
        ]

        rows.append(_hottest_key(store, meter, records, quick))

        big = 10_000 if quick else 100_000
        _seed_head(client, settings, "warm", 10)
        _ingest(store, "warm", [make_record(300_000 + i, rnd) for i in range(100)])  # warm-up
        timings = {1000: float("inf"), big: float("inf")}
        for size in timings:
            _seed_head(client, settings, f"p{size}", size)
        for rep in range(3):  # interleaved, best of 3: the machine is shared and moto's tables grow
            for size in (1000, big) if rep % 2 == 0 else (big, 1000):
                batch = [make_record(1_000_000 * (rep + 1) + size + i, rnd) for i in range(100)]
                started = time.perf_counter()
                _ingest(store, f"p{size}", batch)
                timings[size] = min(timings[size], time.perf_counter() - started)
        rows.append(
            {
                "name": f"append 100 records at {big:,} entries",
                "value": round(timings[big] * 1000, 1),
                "unit": "ms",
                "baseline": round(timings[1000] * 1000, 1),
                "ratio": timings[big] / timings[1000],
                "target": "ratio <= 1.3 (baseline: at 1,000)",
            }
        )

        meter.reset()
        ref = PackageRef("t", "ingest")
        started = time.perf_counter()
        result = verify_package(store, ref, settings.publisher_id, update_witness=False)
        elapsed = time.perf_counter() - started
        assert result.status == "ok", result.to_dict()
        cached = _Prefetched(store, ref)
        started = time.perf_counter()
        assert verify_package(cached, ref, settings.publisher_id).status == "ok"
        compute = time.perf_counter() - started
        entries = list(store.entries(ref))
        blobs = [dumps({"prevHash": e.prev_hash, **e.payload}) for e in entries]
        started = time.perf_counter()
        for b in blobs:
            hashlib.sha256(b).digest()
        floor = time.perf_counter() - started
        rows += [
            {
                "name": "verify throughput",
                "value": round(result.size / elapsed),
                "unit": "entries/s",
                "baseline": round(len(blobs) / floor),
                "ratio": (result.size / elapsed) / (len(blobs) / floor),
                "target": "baseline = sha256 floor over the same canonical bytes",
            },
            {
                "name": "verify throughput, store reads excluded",
                "value": round(result.size / compute),
                "unit": "entries/s",
                "baseline": round(len(blobs) / floor),
                "ratio": (result.size / compute) / (len(blobs) / floor),
                "target": "moto's Query dominates the end-to-end number",
            },
            {
                "name": "verify read requests per 1,000 entries",
                "value": round(meter.reads * 1000 / result.size, 1),
                "unit": "requests",
                "baseline": None,
                "ratio": None,
                "target": None,
            },
        ]
    return rows


if __name__ == "__main__":
    for row in run(quick=True):
        print(row)
