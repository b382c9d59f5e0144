"""The local Query stand-in answers exactly as moto's own Query does, and as DynamoDB documents.

acx/local/moto_query.py keeps a sort order per partition and writes Query answers as JSON directly. Each
test here would fail if that broke what the service relies on (DynamoDB developer guide, "Key condition
expressions for the Query operation" and "Paginating table query results"): results in sort-key order
(UTF-8 byte order for strings), pages of at most 1 MB, ``Limit`` counting items evaluated before a
filter, ``LastEvaluatedKey`` continuing exactly where a page stopped, binaries round-tripping, and a
write or delete between two pages seen by the next one.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from acx.local import moto_dynamodb, moto_query
from tests.integration.moto_tables import create_pk_sk_table, sets_sorted


def _table(client: Any) -> None:
    create_pk_sk_table(client)


@pytest.fixture
def ddb() -> Iterator[Any]:
    with mock_aws():
        moto_dynamodb.install()
        client = boto3.client("dynamodb", region_name="us-east-1")
        _table(client)
        yield client


def _item(pk: str, sk: str, **extra: Any) -> dict[str, Any]:
    return {"pk": {"S": pk}, "sk": {"S": sk}, **extra}


SKS = [
    "r#a", "r#b", "r#\ufffd", "r#\U0001f600", "r#ä", "r#Z", "r#0", "r#", "s#a", "s#b", "t#k#1",
    "q", "r", "r$", "f#knowledge/a.md",
]  # fmt: skip


def _fill(client: Any) -> None:
    for i, sk in enumerate(SKS):
        extra = {
            "n": {"N": str(i)},
            "b": {"B": bytes([i, 0, 255])},
            "l": {"L": [{"S": "x"}, {"N": "1.5"}, {"BOOL": True}, {"NULL": True}]},
            "m": {"M": {"k": {"B": b"\x00"}, "ss": {"SS": ["a", "b"]}}},
            "state": {"S": "active" if i % 3 else "tombstoned"},
        }
        client.put_item(TableName="t", Item=_item("p", sk, **extra))
        client.put_item(TableName="t", Item=_item("other", sk, n={"N": str(i)}))


def _all_pages(client: Any, **kwargs: Any) -> list[dict[str, Any]]:
    pages = []
    for _ in range(100):  # a page that repeats its start would page forever
        resp = client.query(TableName="t", **kwargs)
        resp.pop("ResponseMetadata")
        pages.append(resp)
        if "LastEvaluatedKey" not in resp:
            return pages
        kwargs["ExclusiveStartKey"] = resp["LastEvaluatedKey"]
    raise AssertionError("paging did not end")


def _key(sk: str, op: str = "begins_with") -> dict[str, Any]:
    names = {"#p": "pk", "#s": "sk"}
    values = {":p": {"S": "p"}, ":s": {"S": sk}}
    if op == "begins_with":
        cond = "#p = :p AND begins_with(#s, :s)"
    elif op == "between":
        cond = "#p = :p AND #s BETWEEN :s AND :u"
        values[":u"] = {"S": "s#b"}
    else:
        cond = f"#p = :p AND #s {op} :s"
    return {
        "KeyConditionExpression": cond,
        "ExpressionAttributeNames": names,
        "ExpressionAttributeValues": values,
    }


QUERIES: list[dict[str, Any]] = [
    {"KeyConditionExpression": "pk = :p", "ExpressionAttributeValues": {":p": {"S": "p"}}},
    {"KeyConditionExpression": "pk = :p", "ExpressionAttributeValues": {":p": {"S": "p"}}, "Limit": 4},
    {**_key("r#"), "Limit": 1},
    {**_key("r#"), "Limit": 3},
    {**_key("r#"), "Limit": 7},  # exactly the r# run, then a full last page
    {**_key("r#"), "Limit": 100},
    {**_key("r#"), "ScanIndexForward": False, "Limit": 2},
    {**_key("r#"), "ExclusiveStartKey": {"pk": {"S": "p"}, "sk": {"S": "r#b"}}},
    {**_key("s#"), "Limit": 1},
    {**_key("r#a", "="), "Limit": 1},
    {**_key("r#a", ">")},
    {**_key("r#a", ">="), "Limit": 2},
    {**_key("r#b", "<")},
    {**_key("r#b", "<="), "Limit": 2},
    {**_key("r#a", "between"), "Limit": 2},
    {**_key("zzz")},
    {
        **_key("r#"),
        "Limit": 2,
        "FilterExpression": "#st = :a",
        "ExpressionAttributeNames": {"#p": "pk", "#s": "sk", "#st": "state"},
        "ExpressionAttributeValues": {":p": {"S": "p"}, ":s": {"S": "r#"}, ":a": {"S": "active"}},
    },
    {**_key("r#"), "Select": "COUNT"},
    {**_key("r#"), "ProjectionExpression": "#s, b", "Limit": 3},
    {**_key("r#"), "ProjectionExpression": "#s, m.k, l[0]", "Limit": 3},  # document paths: moto's own
    {  # the listing's shape (RowStore.list_active): filter on a state, project names, lists, maps, sets
        **_key("r#"),
        "Limit": 4,
        "FilterExpression": "(attribute_not_exists(#st) OR #st <> :g) AND contains(l, :x)",
        "ProjectionExpression": "#s, b, #st, l, m, n, absent",
        "ExpressionAttributeNames": {"#p": "pk", "#s": "sk", "#st": "state"},
        "ExpressionAttributeValues": {
            ":p": {"S": "p"},
            ":s": {"S": "r#"},
            ":g": {"S": "tombstoned"},
            ":x": {"S": "x"},
        },
    },
    {**_key("r#"), "Limit": 2, "ReturnConsumedCapacity": "TOTAL"},
]


def _scenario() -> list[Any]:
    """Every query above, page by page, plus a listing with a write and a delete between pages."""
    with mock_aws():
        moto_dynamodb.install()
        client = boto3.client("dynamodb", region_name="us-east-1")
        _table(client)
        _fill(client)
        out: list[Any] = [sets_sorted(_all_pages(client, **q)) for q in QUERIES]
        first = client.query(TableName="t", **_key("r#"), Limit=2)
        client.put_item(TableName="t", Item=_item("p", "r#aa"))  # after the page: must be seen
        client.put_item(TableName="t", Item=_item("p", "r#0"))  # before it: must not be
        client.delete_item(TableName="t", Key={"pk": {"S": "p"}, "sk": {"S": "r#ä"}})
        rest = _all_pages(client, **_key("r#"), Limit=2, ExclusiveStartKey=first["LastEvaluatedKey"])
        out.append([i["sk"]["S"] for p in rest for i in p.get("Items", [])])
        return out


def test_every_query_answers_as_moto_itself_does() -> None:
    moto_dynamodb.install()  # installs moto_query once per process: take it out after that
    moto_query.uninstall()
    try:
        expected = _scenario()
    finally:
        moto_query.install()
    assert _scenario() == expected


def test_string_sort_keys_come_in_utf8_byte_order_and_pages_continue_exactly(ddb: Any) -> None:
    _fill(ddb)
    got = [i["sk"]["S"] for p in _all_pages(ddb, **_key("r#"), Limit=2) for i in p.get("Items", [])]
    # UTF-8 byte order puts U+FFFD before U+1F600 (UTF-16 code units would not)
    assert got == sorted((s for s in SKS if s.startswith("r#")), key=lambda s: s.encode())
    assert got.index("r#\ufffd") < got.index("r#\U0001f600")


def test_binaries_come_back_as_bytes(ddb: Any) -> None:
    _fill(ddb)
    item = ddb.query(TableName="t", **_key("r#a", "="))["Items"][0]
    assert item["b"] == {"B": bytes([SKS.index("r#a"), 0, 255])}
    assert item["m"]["M"]["k"] == {"B": b"\x00"}


def test_a_page_holds_at_most_one_megabyte(ddb: Any) -> None:
    blob = "x" * 100_000
    for i in range(25):
        ddb.put_item(TableName="t", Item=_item("p", f"r#{i:03d}", v={"S": blob}))
    pages = _all_pages(ddb, **_key("r#"))
    assert len(pages) >= 3
    assert all(len(p["Items"]) * 100_000 <= 1024 * 1024 for p in pages)
    assert [i["sk"]["S"] for p in pages for i in p["Items"]] == [f"r#{i:03d}" for i in range(25)]


def test_a_key_added_between_pages_is_read_by_the_next_page(ddb: Any) -> None:
    for i in range(0, 10, 2):
        ddb.put_item(TableName="t", Item=_item("p", f"r#{i}"))
    first = ddb.query(TableName="t", **_key("r#"), Limit=2)
    assert [i["sk"]["S"] for i in first["Items"]] == ["r#0", "r#2"]
    ddb.put_item(TableName="t", Item=_item("p", "r#3"))
    ddb.delete_item(TableName="t", Key={"pk": {"S": "p"}, "sk": {"S": "r#4"}})
    rest = _all_pages(ddb, **_key("r#"), ExclusiveStartKey=first["LastEvaluatedKey"])
    assert [i["sk"]["S"] for p in rest for i in p["Items"]] == ["r#3", "r#6", "r#8"]


def test_partitions_keep_their_order_across_changes() -> None:
    from moto.dynamodb.models.dynamo_type import DynamoType

    part = moto_query.Partition()
    for v in ("b", "a", "c"):
        part[DynamoType({"S": v})] = v
    assert part.ordered() is not None and part.ordered()[1] == ["a", "b", "c"]  # type: ignore[index]
    version = part.version
    part[DynamoType({"S": "a"})] = "again"  # an overwrite keeps the key set
    assert part.version == version
    part.pop(DynamoType({"S": "b"}))
    part[DynamoType({"S": "0"})] = "new"
    assert part.ordered()[1] == ["0", "a", "c"]  # type: ignore[index]


def test_item_sizes_are_motos_own(ddb: Any) -> None:
    """The 1 MB page limit adds up item sizes: moto_query.item_bytes must count as Item.size() does."""
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.dynamodb.models import dynamodb_backends

    _fill(ddb)
    odd = {
        "s": {"S": "日本 🚀 é"},
        "e": {"S": ""},
        "ns": {"NS": ["1", "2.50", "-3e4"]},
        "bs": {"BS": [b"\x00\x01", b"\xff"]},
        "ss": {"SS": ["ä", "b"]},
        "nested": {"M": {"ü": {"L": [{"N": "12"}, {"M": {"x": {"BOOL": False}}}, {"NULL": True}]}}},
        "ü-name": {"B": b"\x00" * 7},
    }
    ddb.put_item(TableName="t", Item=_item("p", "r#odd", **odd))
    table = dynamodb_backends[DEFAULT_ACCOUNT_ID]["us-east-1"].get_table("t")
    items = [item for partition in table.items.values() for item in partition.values()]
    assert len(items) == 2 * len(SKS) + 1
    for item in items:
        assert moto_query.item_bytes(item) == item.size(), item.range_key
