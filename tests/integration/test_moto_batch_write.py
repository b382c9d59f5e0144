"""The BatchWriteItem stand-in stores each put exactly as moto's own ``Table.put_item`` does.

acx/local/moto_dynamodb.py's ``_put`` writes a BatchWriteItem put without moto's second size sum and
its no-op condition parse. Each item below is put into twin tables, one through moto's
``put_item`` and one through ``_put``: the stored items (attributes, key objects, the kept sort order
of moto_query's partitions) and the stream records must be equal, and an item moto refuses must be
refused with the same exception and message, leaving the same table behind.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from acx.local import moto_dynamodb
from tests.integration.moto_tables import create_pk_sk_table


@pytest.fixture
def backend() -> Iterator[Any]:
    with mock_aws():
        moto_dynamodb.install()
        client = boto3.client("dynamodb", region_name="us-east-1")
        for name in ("stock", "fast"):
            create_pk_sk_table(client, name)
        for name in ("stock_s", "fast_s"):
            client.create_table(
                TableName=name,
                KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
                AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "N"}],
                BillingMode="PAY_PER_REQUEST",
                StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"},
            )
        from moto.dynamodb.models import dynamodb_backends

        yield dynamodb_backends["123456789012"]["us-east-1"]


def _row(sk: str, **extra: Any) -> dict[str, Any]:
    item = {
        "pk": {"S": "p"},
        "sk": {"S": sk},
        "body": {"B": b"\x00\xff" * 40},
        "seq": {"N": "12"},
        "tags": {"SS": ["a", "b"]},
        "m": {"M": {"x": {"L": [{"S": "y"}, {"NULL": True}, {"BOOL": False}]}}},
    }
    item.update(extra)
    return item


GOOD = [
    _row("r#2"),
    _row("r#1"),
    _row("r#2", seq={"N": "13"}),  # an overwrite
    _row("é#3", e={"S": ""}, big={"B": b"x" * 300_000}),
]
BAD = [
    _row("r#9", seq={"N": "not-a-number"}),
    {"pk": {"N": "1"}, "sk": {"S": "wrong type"}},
    {"pk": {"S": "p"}, "sk": {"S": "k" * 1025}},  # range key over 1024 bytes
    {"pk": {"S": "h" * 2049}, "sk": {"S": "k"}},  # hash key over 2048 bytes
    {"pk": {"S": "p"}, "sk": {"S": "é" * 513}},  # 1026 bytes in UTF-8
    _row("r#8", big={"B": b"x" * 404_990}),  # over moto's 405,000 bytes with the rest
    _row("r#7", n={"NULL": False}),
]
SINGLE = [{"id": {"N": "1"}, "v": {"S": "a"}}, {"id": {"N": "1"}, "v": {"S": "b"}}, {"id": {"N": "2"}}]


def _state(table: Any) -> Any:
    out = []
    for hash_key, value in table.items.items():
        entries = value.items() if isinstance(value, dict) else [(None, value)]
        for range_key, item in entries:
            out.append((hash_key, range_key, item.hash_key, item.range_key, item.to_json()))
    ordered = getattr(next(iter(table.items.values()), None), "ordered", None)
    return out, ordered() if ordered else None


def _outcome(fn: Any) -> Any:
    try:
        fn()
    except Exception as exc:  # compared with the other path's outcome
        return type(exc), str(exc)
    return None


def test_puts_store_what_moto_stores(backend: Any) -> None:
    for item in GOOD:
        backend.put_item("stock", item)
        moto_dynamodb._put(backend.get_table("fast"), item, moto_dynamodb._attributes_size(item))
    assert _state(backend.get_table("fast")) == _state(backend.get_table("stock"))


@pytest.mark.parametrize("index", range(len(BAD)))
def test_refusals_are_moto_s(backend: Any, index: int) -> None:
    item = BAD[index]
    fast = backend.get_table("fast")
    want = _outcome(lambda: backend.put_item("stock", item))
    got = _outcome(lambda: moto_dynamodb._put(fast, item, moto_dynamodb._attributes_size(item)))
    assert want is not None
    assert got == want
    assert _state(fast) == _state(backend.get_table("stock"))


def test_hash_only_table_with_a_stream(backend: Any) -> None:
    for item in SINGLE:
        backend.put_item("stock_s", item)
        moto_dynamodb._put(backend.get_table("fast_s"), item, moto_dynamodb._attributes_size(item))
    stock, fast = backend.get_table("stock_s"), backend.get_table("fast_s")
    assert _state(fast) == _state(stock)
    records = [
        {k: v for k, v in r.to_json()["dynamodb"].items() if k != "ApproximateCreationDateTime"}
        for r in fast.stream_shard.items
    ]
    want = [
        {k: v for k, v in r.to_json()["dynamodb"].items() if k != "ApproximateCreationDateTime"}
        for r in stock.stream_shard.items
    ]
    assert [r["NewImage"] for r in records] == [r["NewImage"] for r in want]
    assert [r.get("OldImage") for r in records] == [r.get("OldImage") for r in want]
    assert [r.record["eventName"] for r in fast.stream_shard.items] == ["INSERT", "MODIFY", "INSERT"]
    assert [r.record["eventName"] for r in stock.stream_shard.items] == ["INSERT", "MODIFY", "INSERT"]


def test_batch_write_item_through_the_handler(backend: Any) -> None:
    client = boto3.client("dynamodb", region_name="us-east-1")
    rows = [_row(f"b#{i:02d}") for i in range(25)]
    client.batch_write_item(RequestItems={"fast": [{"PutRequest": {"Item": r}} for r in rows]})
    for r in rows:
        backend.put_item("stock", r)
    assert _state(backend.get_table("fast")) == _state(backend.get_table("stock"))
    got = client.query(
        TableName="fast", KeyConditionExpression="pk = :p", ExpressionAttributeValues={":p": {"S": "p"}}
    )
    assert [i["sk"]["S"] for i in got["Items"]] == [f"b#{i:02d}" for i in range(25)]


# Items in plain forms go through ``_plain_item`` (one walk: values and size); the others below must
# be turned away by it (None), so that moto's own checks decide them.
PLAIN = [
    *GOOD,
    _row("r#a", n={"NULL": True}, flag={"BOOL": True}, blobs={"BS": [b"\x01", b""]}, e={"L": []}),
    _row("r#b", deep={"M": {"a": {"M": {"b": {"L": [{"N": "0"}, {"SS": ["é", "x"]}]}}}}}),
    _row("r#c", seq={"N": "9" * 38}, name={"S": "naïve ☃"}),
    {"pk": {"N": "1"}, "sk": {"S": "wrong type"}},  # plain: moto's key type check still refuses it
    {"pk": {"S": "p"}, "sk": {"S": "k" * 1025}},  # plain: the key size check still refuses it
    _row("r#8", big={"B": b"x" * 404_990}),  # plain: the size check still refuses it
    {"pk": {"S": "p"}, "sk": {"S": ""}},  # plain: the empty-key check still refuses it
]
NOT_PLAIN = [
    _row("r#9", seq={"N": "not-a-number"}),
    _row("r#7", n={"NULL": False}),
    _row("r#d", seq={"N": "-5"}),
    _row("r#e", seq={"N": "1.5"}),
    _row("r#f", seq={"N": "9" * 39}),
    _row("r#g", nums={"NS": ["1", "2"]}),
    _row("r#h", N={"S": "an attribute named like a tag"}),
    _row("r#i", m={"M": {"NULL": {"S": "a member named like a tag"}}}),
    _row("r#j", m={"M": {"S": {"N": "1"}}}),
    _row("r#k", bad={"S": 5}),
    _row("r#l", two={"S": "a", "N": "1"}),
    _row("r#m", odd={"X": "y"}),
    _row("r#n", b={"B": "not decoded"}),
]


@pytest.mark.parametrize("index", range(len(PLAIN)))
def test_plain_items_convert_as_moto_does(index: int) -> None:
    from moto.dynamodb.models.dynamo_type import DynamoType

    item = PLAIN[index]
    converted = moto_dynamodb._plain_item(item)
    assert converted is not None
    values, size = converted
    assert size == moto_dynamodb._attributes_size(item)
    assert list(values) == list(item)
    for name, value in item.items():
        want = DynamoType(value)
        assert values[name].to_json() == want.to_json() and values[name].size() == want.size()


@pytest.mark.parametrize("index", range(len(NOT_PLAIN)))
def test_other_items_are_left_to_moto(index: int) -> None:
    assert moto_dynamodb._plain_item(NOT_PLAIN[index]) is None


def _batch_outcome(client: Any, table: str, item: dict[str, Any]) -> Any:
    from botocore.exceptions import ClientError

    try:
        client.batch_write_item(RequestItems={table: [{"PutRequest": {"Item": item}}]})
    except ClientError as exc:
        return exc.response["Error"]
    except Exception as exc:  # botocore's own client-side refusal (a str for a number...)
        return type(exc).__name__, str(exc).replace(table, "<table>")
    return None


@pytest.mark.parametrize("index", range(len(PLAIN) + len(NOT_PLAIN)))
def test_batch_write_outcome_is_the_walks_outcome(
    backend: Any, index: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through the handler, an item stores, or is refused, exactly as with moto's checks and
    conversion (``_plain_item`` off: the path every item took before)."""
    item = (PLAIN + NOT_PLAIN)[index]
    client = boto3.client("dynamodb", region_name="us-east-1")
    got = _batch_outcome(client, "fast", item)
    monkeypatch.setattr(moto_dynamodb, "_plain_item", lambda _attrs: None)
    want = _batch_outcome(client, "stock", item)
    assert got == want
    assert _state(backend.get_table("fast")) == _state(backend.get_table("stock"))


def test_service_rows_skip_moto_s_item_walks(backend: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The service's row shape takes the one-walk path: moto's ``_validate_item_types`` and the
    per-value conversion are not run for it (the cost this path removes)."""
    from moto.dynamodb.models.table import Table

    def refuse(*_: Any, **__: Any) -> None:
        raise AssertionError("moto's item walk ran")

    monkeypatch.setattr(Table, "_validate_item_types", refuse)
    monkeypatch.setattr(moto_dynamodb, "_dynamo_type", refuse)
    client = boto3.client("dynamodb", region_name="us-east-1")
    rows = [_row(f"s#{i:02d}") for i in range(25)]
    with pytest.raises(AssertionError):
        moto_dynamodb._put(backend.get_table("fast"), rows[0], moto_dynamodb._attributes_size(rows[0]))
    monkeypatch.setattr(moto_dynamodb, "_dynamo_type", lambda v, cls: cls(v))  # the key values only
    client.batch_write_item(RequestItems={"fast": [{"PutRequest": {"Item": r}} for r in rows]})
    monkeypatch.undo()
    for r in rows:
        backend.put_item("stock", r)
    assert _state(backend.get_table("fast")) == _state(backend.get_table("stock"))
