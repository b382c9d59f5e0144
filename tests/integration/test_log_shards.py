"""Write sharding of a package's rows and slot items (acx.adapters.log_rows).

A new package's first claim fixes ``rowShards`` on its head item; its ``r#``/``s#`` items then live on
``<pk>`` and ``<pk>#<i>``, each on the shard its id or slot hashes to; everything else stays on the
package key. A package whose head has no ``rowShards`` (created before sharding) reads and writes as
one shard. Listings merge the shards by sort key, so pages and cursors are what one partition gave.
"""

from __future__ import annotations

import base64
from collections import Counter
from typing import Any

import pytest

from acx.adapters.catalog import Catalog
from acx.adapters.dynamo import from_item
from acx.adapters.log_rows import DEFAULT_ROW_SHARDS, shard_of, shard_pk
from acx.adapters.log_store import LogStore
from acx.core.rows import FileWrite, RecordWrite
from acx.usecases.verify import verify_package
from tests.integration.conftest import PUBLISHER, REF, log_store  # type: ignore[import-not-found]


def _items(ddb: Any, table: str) -> list[dict[str, Any]]:
    out, kwargs = [], {"TableName": table}
    while True:
        resp = ddb.scan(**kwargs)
        out += [from_item(i) for i in resp["Items"]]
        if "LastEvaluatedKey" not in resp:
            return out
        kwargs["ExclusiveStartKey"] = resp["LastEvaluatedKey"]


def _head(ddb: Any, settings: Any) -> dict[str, Any]:
    got = ddb.get_item(TableName=settings.heads_table, Key={"pk": {"S": REF.pk}, "sk": {"S": "head"}})
    return from_item(got["Item"])


def _all_pages(store: LogStore, limit: int, **filters: Any) -> tuple[list[str], list[str]]:
    ids: list[str] = []
    cursors: list[str] = []
    cursor = None
    while True:
        page, cursor = store.rows.list_active(REF, limit=limit, cursor=cursor, **filters)
        ids += [r.id for r in page]
        if cursor is None:
            return ids, cursors
        cursors.append(cursor)


def test_a_new_package_spreads_rows_and_slots_over_its_shards_and_reads_them_back(
    store: LogStore, ddb: Any, settings: Any, make_record: Any, write_of: Any
) -> None:
    # Few records: stock moto sorts the whole table for every Query, and each page queries every shard.
    records = [make_record(i, portable=i % 3 != 0) for i in range(40)]
    store.append(REF, "a", [write_of(r) for r in records], files=[FileWrite("rom/knowledge/a.md", "# a")])
    assert _head(ddb, settings)["rowShards"] == DEFAULT_ROW_SHARDS
    items = _items(ddb, settings.records_table)
    for it in items:
        sk = it["sk"]
        want = shard_pk(REF.pk, shard_of(sk[2:], DEFAULT_ROW_SHARDS)) if sk[:2] in ("r#", "s#") else REF.pk
        assert it["pk"] == want, sk  # files stay on the package key
    per_shard = Counter(it["pk"] for it in items if it["sk"].startswith("r#"))
    assert len(per_shard) == DEFAULT_ROW_SHARDS and max(per_shard.values()) < 15  # 5 on average
    # point reads, lookups by slot, full listing, pages: as one partition would give them
    assert store.rows.get(REF, "m-00032") is not None
    found = store.rows.lookup(REF, {"m-00007"}, {write_of(records[9]).slot})
    assert set(found.by_id) == {"m-00007"} and [r.id for r in found.by_slot.values()] == ["m-00009"]
    ordered = sorted(r["id"] for r in records)
    assert [r.id for r in store.rows.rows(REF)] == ordered
    ids, cursors = _all_pages(store, limit=7)
    assert ids == ordered
    assert base64.urlsafe_b64decode(cursors[0]).decode() == f"r#{ordered[6]}"  # the cursor: last sort key
    rom, _ = _all_pages(store, limit=5, zone="rom")
    assert rom == sorted(r["id"] for r in records if r["portable"])
    tagged, _ = _all_pages(store, limit=4, tag="t1")
    assert tagged == sorted(r["id"] for r in records if "t1" in r["tags"])
    assert Catalog(ddb, settings.heads_table, settings.records_table).active_records("t1", "pkg") == 40
    assert verify_package(store, REF, PUBLISHER).status == "ok"


def test_forget_and_merge_find_rows_on_their_shards(store: LogStore, make_record: Any, write_of: Any) -> None:
    records = [make_record(i) for i in range(40)]
    store.append(REF, "a", [write_of(r) for r in records])
    store.forget(REF, "a", record_id="m-00013")
    row = store.rows.get(REF, "m-00013")
    assert row is not None and not row.active and not row.holds_plaintext
    slot = write_of(records[13]).slot
    assert store.rows.lookup(REF, set(), {slot}).pointers == {slot: None}  # its slot item is gone
    # a survivor absorbing another row (same slot, other id) retires it on its own shard
    survivor = {**records[20], "id": "a-00020"}
    store.append(REF, "a", [RecordWrite(survivor, write_of(records[20]).slot)], ["m-00020"])
    assert store.rows.get(REF, "m-00020") is None
    assert verify_package(store, REF, PUBLISHER).status == "ok"


def test_a_package_from_before_sharding_stays_on_one_partition_key(
    ddb: Any, settings: Any, signer: Any, clock: Any, make_record: Any, write_of: Any
) -> None:
    old = log_store(ddb, settings, signer, clock=clock, sleep=clock.sleep, row_shards=1)
    old.append(REF, "a", [write_of(make_record(i)) for i in range(30)])
    ddb.update_item(  # the head item as the code before sharding left it: no rowShards
        TableName=settings.heads_table,
        Key={"pk": {"S": REF.pk}, "sk": {"S": "head"}},
        UpdateExpression="REMOVE rowShards",
    )
    new = log_store(ddb, settings, signer, clock=clock, sleep=clock.sleep)  # default shards, fresh cache
    assert new.rows.layout.count(REF) == 1
    new.append(REF, "a", [write_of(make_record(i)) for i in range(30, 60)])
    new.forget(REF, "a", record_id="m-00003")
    assert {it["pk"] for it in _items(ddb, settings.records_table)} == {REF.pk}
    assert "rowShards" not in _head(ddb, settings)  # never rewritten: the count is fixed for life
    ids, _ = _all_pages(new, limit=9)
    assert ids == [f"m-{i:05d}" for i in range(60) if i != 3]
    assert verify_package(new, REF, PUBLISHER).status == "ok"


@pytest.mark.parametrize("bad", [0, 65])
def test_a_head_naming_an_impossible_shard_count_is_corrupt_not_empty(
    store: LogStore, ddb: Any, settings: Any, make_record: Any, write_of: Any, bad: int
) -> None:
    store.append(REF, "a", [write_of(make_record(1))])
    ddb.update_item(
        TableName=settings.heads_table,
        Key={"pk": {"S": REF.pk}, "sk": {"S": "head"}},
        UpdateExpression="SET rowShards = :n",
        ExpressionAttributeValues={":n": {"N": str(bad)}},
    )
    store.rows.layout._cache.clear()
    assert verify_package(store, REF, PUBLISHER).status == "corrupt"
