"""RowStore.list_active: what a listing page reads from DynamoDB, and what it refuses.

The listing Query filters out tombstoned rows and projects the sort key, state and body only (fewer
attributes for botocore to parse; DynamoDB bills the items read whatever the projection and filter:
"Using projection expressions", "Filter expressions for the Query operation", developer guide). Each
test here would fail if that broke: a forgotten record appearing, a mangled row read as absent or sent
as it is, more attributes on the wire, pages that skip or repeat records across shards.
"""

from __future__ import annotations

import zlib
from typing import Any

import pytest

from acx.adapters.log_store import CorruptStore, LogStore
from acx.core.canonical import dumps_record
from tests.integration.conftest import REF, row_key  # type: ignore[import-not-found]


def _all(store: LogStore, limit: int, **filters: Any) -> list[str]:
    ids: list[str] = []
    cursor = None
    while True:
        page, cursor = store.rows.list_active(REF, limit=limit, cursor=cursor, **filters)
        ids += [r.id for r in page]
        if cursor is None:
            return ids


def test_pages_carry_the_stored_canonical_json_and_never_a_forgotten_record(
    store: LogStore, make_record: Any, write_of: Any
) -> None:
    # Few records: stock moto sorts the whole table for every Query, and each page queries every shard.
    records = [make_record(i, portable=i % 4 != 0) for i in range(24)]
    store.append(REF, "a", [write_of(r) for r in records])
    gone = {"m-00000", "m-00013", "m-00023"}  # the first, one inside, the last
    for rid in sorted(gone):
        store.forget(REF, "a", record_id=rid)
    live = [r for r in records if r["id"] not in gone]
    for limit in (1, 7, 1000):
        assert _all(store, limit) == [r["id"] for r in live]
    page, cursor = store.rows.list_active(REF, limit=1000)
    assert cursor is None
    by_id = {r["id"]: r for r in live}
    for row in page:
        assert row.canonical == dumps_record(by_id[row.id])  # the bytes the page sends, as stored
        assert row.record == by_id[row.id]
    save = _all(store, 5, zone="save")
    assert save == [r["id"] for r in live if not r["portable"]] and save
    assert _all(store, 3, tag="t1") == [r["id"] for r in live if "t1" in r["tags"]]


def test_the_query_asks_for_three_attributes_and_filters_tombstoned_rows(
    store: LogStore, make_record: Any, write_of: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    store.append(REF, "a", [write_of(make_record(i)) for i in range(20)])
    store.forget(REF, "a", record_id="m-00004")
    client = store.rows.db.client
    seen: list[dict[str, Any]] = []
    original = client.query

    def query(**kwargs: Any) -> Any:
        resp = original(**kwargs)
        seen.extend(resp.get("Items", []))
        return resp

    monkeypatch.setattr(client, "query", query)
    page, _ = store.rows.list_active(REF, limit=1000)
    assert len(page) == 19 and seen
    # the body, and the trust state and author each result carries; not seq, hashes, slots, tags...
    assert all(set(item) <= {"sk", "state", "body", "trust", "actor", "agent"} for item in seen)
    assert all(item["state"]["S"] == "active" for item in seen)  # the tombstone was not sent


@pytest.mark.parametrize(
    ("attribute", "value"),
    [
        ("body", {"B": zlib.compress(b"[1, 2]")}),  # JSON, not an object
        ("body", {"B": zlib.compress(b'{"id": ')}),  # not JSON
        ("body", {"B": b"not zlib"}),
        ("state", {"S": "archived"}),  # a state the service never writes: not read as absent
    ],
)
def test_a_mangled_row_is_reported_as_corrupt_not_skipped(
    store: LogStore, ddb: Any, settings: Any, make_record: Any, write_of: Any, attribute: str, value: Any
) -> None:
    store.append(REF, "a", [write_of(make_record(i)) for i in range(5)])
    ddb.update_item(
        TableName=settings.records_table,
        Key=row_key(store, "r#m-00003"),
        UpdateExpression="SET #a = :v",
        ExpressionAttributeNames={"#a": attribute},
        ExpressionAttributeValues={":v": value},
    )
    with pytest.raises(CorruptStore):
        store.rows.list_active(REF, limit=50)


def test_a_row_without_state_is_reported_as_corrupt(
    store: LogStore, ddb: Any, settings: Any, make_record: Any, write_of: Any
) -> None:
    store.append(REF, "a", [write_of(make_record(i)) for i in range(3)])
    ddb.update_item(
        TableName=settings.records_table, Key=row_key(store, "r#m-00001"), UpdateExpression="REMOVE #s",
        ExpressionAttributeNames={"#s": "state"},
    )  # fmt: skip
    with pytest.raises(CorruptStore):
        store.rows.list_active(REF, limit=50)
