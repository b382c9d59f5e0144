"""The local TransactWriteItems stand-in keeps AWS's all-or-nothing semantics without copying tables.

One test per behaviour of TransactWriteItems that the log store relies on, as the DynamoDB API
reference documents it: up to 100 actions; no two actions on one item; an aggregate size of at most
4 MB; items of at most 400 KB; a cancelled transaction writes nothing and reports one reason per
action, in order (``None`` for the actions that were fine); ALL_OLD returns the item that failed
its condition. Error codes are pinned, message texts only where AWS documents them.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws

from acx.local import moto_dynamodb
from tests.integration.moto_tables import create_pk_sk_table


@pytest.fixture
def ddb() -> Iterator[Any]:
    with mock_aws():
        moto_dynamodb.install()
        client = boto3.client("dynamodb", region_name="us-east-1")
        create_pk_sk_table(client)
        yield client


def _put(sk: str, cond: str | None = None) -> dict[str, Any]:
    op: dict[str, Any] = {"TableName": "t", "Item": {"pk": {"S": "p"}, "sk": {"S": sk}, "v": {"N": "1"}}}
    if cond:
        op["ConditionExpression"] = cond
    return {"Put": op}


def _keys(ddb: Any) -> list[str]:
    return sorted(i["sk"]["S"] for i in ddb.scan(TableName="t")["Items"])


def test_a_failed_condition_cancels_every_write_with_one_reason_per_item(ddb: Any) -> None:
    ddb.put_item(TableName="t", Item={"pk": {"S": "p"}, "sk": {"S": "taken"}})
    with pytest.raises(ClientError) as err:
        ddb.transact_write_items(
            TransactItems=[_put("new-1"), _put("taken", "attribute_not_exists(sk)"), _put("new-2")]
        )
    assert err.value.response["Error"]["Code"] == "TransactionCanceledException"
    reasons = [r["Code"] for r in err.value.response["CancellationReasons"]]
    assert reasons == ["None", "ConditionalCheckFailed", "None"]
    assert _keys(ddb) == ["taken"]


def test_a_transaction_that_holds_applies_every_write(ddb: Any) -> None:
    update = {
        "Update": {
            "TableName": "t",
            "Key": {"pk": {"S": "p"}, "sk": {"S": "head"}},
            "UpdateExpression": "SET v = :v",
            "ConditionExpression": "attribute_not_exists(sk)",
            "ExpressionAttributeValues": {":v": {"N": "7"}},
        }
    }
    ddb.transact_write_items(TransactItems=[_put("a", "attribute_not_exists(sk)"), update])
    assert _keys(ddb) == ["a", "head"]
    head = ddb.get_item(TableName="t", Key={"pk": {"S": "p"}, "sk": {"S": "head"}})["Item"]
    assert head["v"] == {"N": "7"}


def test_two_operations_on_one_item_are_refused(ddb: Any) -> None:
    with pytest.raises(ClientError):
        ddb.transact_write_items(TransactItems=[_put("a"), _put("a")])
    assert _keys(ddb) == []


def _codes(err: Any) -> list[str]:
    return [r["Code"] for r in err.value.response["CancellationReasons"]]


def test_more_than_100_actions_is_a_validation_error_and_writes_nothing(ddb: Any) -> None:
    ddb.transact_write_items(TransactItems=[_put(f"k{i}") for i in range(100)])  # 100 is allowed
    with pytest.raises(ClientError) as err:
        ddb.transact_write_items(TransactItems=[_put(f"x{i}") for i in range(101)])
    assert err.value.response["Error"]["Code"] == "ValidationException"
    assert not [k for k in _keys(ddb) if k.startswith("x")]


def test_two_actions_on_one_item_is_a_validation_error_whatever_the_kinds(ddb: Any) -> None:
    check = {
        "ConditionCheck": {
            "TableName": "t",
            "Key": {"pk": {"S": "p"}, "sk": {"S": "a"}},
            "ConditionExpression": "attribute_not_exists(sk)",
        }
    }
    with pytest.raises(ClientError) as err:
        ddb.transact_write_items(TransactItems=[_put("a"), check])
    assert err.value.response["Error"]["Code"] == "ValidationException"
    assert "multiple operations on one item" in err.value.response["Error"]["Message"]
    assert _keys(ddb) == []


def _big(sk: str, size: int) -> dict[str, Any]:
    return {
        "Put": {"TableName": "t", "Item": {"pk": {"S": "p"}, "sk": {"S": sk}, "blob": {"B": b"x" * size}}}
    }


def test_an_aggregate_over_4_mb_is_a_validation_error_and_writes_nothing(ddb: Any) -> None:
    from acx.local.moto_dynamodb import MAX_TRANSACTION_BYTES

    size = 350 * 1024  # each item under 400 KB; twelve of them are over 4 MB
    items = [_big(f"b{i}", size) for i in range(12)]
    assert 12 * size > MAX_TRANSACTION_BYTES
    with pytest.raises(ClientError) as err:
        ddb.transact_write_items(TransactItems=items)
    assert err.value.response["Error"]["Code"] == "ValidationException"
    assert "4 MB" in err.value.response["Error"]["Message"]
    assert _keys(ddb) == []
    ddb.transact_write_items(TransactItems=items[:11])  # 11 x 350 KiB = 3.76 MiB is accepted
    pages = ddb.get_paginator("scan").paginate(TableName="t", ProjectionExpression="sk")
    assert sum(len(page["Items"]) for page in pages) == 11


def test_a_put_over_400_kb_cancels_with_a_validation_error_reason_for_that_item(ddb: Any) -> None:
    with pytest.raises(ClientError) as err:
        ddb.transact_write_items(TransactItems=[_put("ok"), _big("huge", 401 * 1024)])
    assert err.value.response["Error"]["Code"] == "TransactionCanceledException"
    assert _codes(err) == ["None", "ValidationError"]
    assert _keys(ddb) == []
    ddb.transact_write_items(TransactItems=[_big("fits", 390 * 1024)])
    assert _keys(ddb) == ["fits"]


def test_an_update_that_grows_an_item_past_400_kb_cancels_and_restores_every_item(ddb: Any) -> None:
    ddb.transact_write_items(TransactItems=[_big("grow", 300 * 1024)])
    grow = {
        "Update": {
            "TableName": "t",
            "Key": {"pk": {"S": "p"}, "sk": {"S": "grow"}},
            "UpdateExpression": "SET more = :m",
            "ExpressionAttributeValues": {":m": {"B": b"y" * (200 * 1024)}},
        }
    }
    with pytest.raises(ClientError) as err:
        ddb.transact_write_items(TransactItems=[_put("first"), grow])
    assert err.value.response["Error"]["Code"] == "TransactionCanceledException"
    assert _codes(err) == ["None", "ValidationError"]
    assert _keys(ddb) == ["grow"]
    item = ddb.get_item(TableName="t", Key={"pk": {"S": "p"}, "sk": {"S": "grow"}})["Item"]
    assert "more" not in item


def test_all_old_returns_the_item_that_failed_its_condition_in_its_reason(ddb: Any) -> None:
    ddb.put_item(TableName="t", Item={"pk": {"S": "p"}, "sk": {"S": "held"}, "owner": {"S": "w1"}})
    put = _put("held", "attribute_not_exists(sk)")
    put["Put"]["ReturnValuesOnConditionCheckFailure"] = "ALL_OLD"
    with pytest.raises(ClientError) as err:
        ddb.transact_write_items(TransactItems=[put])
    (reason,) = err.value.response["CancellationReasons"]
    assert reason["Code"] == "ConditionalCheckFailed"
    assert reason["Item"]["owner"] == {"S": "w1"}
    assert "[ConditionalCheckFailed]" in err.value.response["Error"]["Message"]


def _stock_parse(operation: str, body: bytes) -> Any:
    """What moto's own shape-walking parser makes of a DynamoDB request body."""
    from moto.core.parse import PROTOCOL_PARSERS
    from moto.core.utils import get_service_model

    model = get_service_model("dynamodb").operation_model(operation)
    parser = PROTOCOL_PARSERS["json"](model, map_type=dict)
    return parser.parse(
        {"method": "POST", "values": {}, "headers": {}, "body": body, "url_path": "/", "url_params": {}}
    )


@pytest.mark.parametrize(
    ("operation", "request_doc"),
    [
        (
            "BatchWriteItem",
            {
                "RequestItems": {
                    "t": [
                        {
                            "PutRequest": {
                                "Item": {
                                    "pk": {"S": "p"},
                                    "sk": {"S": "r#1"},
                                    "z": {"B": "eJzLSM3JyQcABiwCFQ=="},
                                    "bs": {"BS": ["AAE=", "/w=="]},
                                    "n": {"N": "12.5"},
                                    "ok": {"BOOL": True},
                                    "none": {"NULL": True},
                                    "m": {"M": {"B": {"S": "a map key named B"}, "in": {"B": "AA=="}}},
                                    "l": {"L": [{"B": "AQ=="}, {"SS": ["x", "y"]}, {"NS": ["1"]}]},
                                }
                            }
                        },
                        {"DeleteRequest": {"Key": {"pk": {"S": "p"}, "sk": {"S": "r#2"}}}},
                    ]
                },
                "ReturnConsumedCapacity": "NONE",
            },
        ),
        (
            "Query",
            {
                "TableName": "t",
                "KeyConditionExpression": "pk = :p AND begins_with(sk, :s)",
                "ExpressionAttributeValues": {":p": {"S": "p"}, ":s": {"S": "r#"}, ":b": {"B": "AA=="}},
                "ExpressionAttributeNames": {"#B": "B"},
                "Limit": 50,
                "ConsistentRead": True,
                "ExclusiveStartKey": {"pk": {"S": "p"}, "sk": {"S": "r#0"}},
            },
        ),
    ],
)
def test_fast_request_parse_gives_what_moto_s_parser_gives(
    operation: str, request_doc: dict[str, Any]
) -> None:
    import json
    from types import SimpleNamespace

    body = json.dumps(request_doc).encode()
    handler = SimpleNamespace()
    moto_dynamodb._parse_parameters(handler, SimpleNamespace(data=body))
    assert handler.params == _stock_parse(operation, body)


def test_binary_attributes_round_trip_and_item_size_limit_holds(ddb: Any) -> None:
    blob = bytes(range(256)) * 4
    ddb.put_item(
        TableName="t", Item={"pk": {"S": "p"}, "sk": {"S": "b"}, "z": {"B": blob}, "s": {"BS": [b"\x00"]}}
    )
    item = ddb.get_item(TableName="t", Key={"pk": {"S": "p"}, "sk": {"S": "b"}})["Item"]
    assert item["z"]["B"] == blob and item["s"]["BS"] == [b"\x00"]
    big = {"pk": {"S": "p"}, "sk": {"S": "big"}, **{f"a{i}": {"S": "x" * 1000} for i in range(410)}}
    with pytest.raises(ClientError) as info:
        ddb.put_item(TableName="t", Item=big)
    assert "Item size has exceeded the maximum allowed size" in str(info.value)
    ok = {"pk": {"S": "p"}, "sk": {"S": "fits"}, **{f"a{i}": {"S": "x" * 1000} for i in range(400)}}
    ddb.put_item(TableName="t", Item=ok)


SIZED = [
    {"S": "héllo 日本 🚀"},
    {"S": ""},
    {"N": "-12.500"},
    {"B": b"\x00\x01\xff"},
    {"BOOL": True},
    {"BOOL": False},
    {"NULL": True},
    {"SS": ["a", "bé"]},
    {"NS": ["1", "22.5"]},
    {"BS": [b"x", b"yz"]},
    {"L": [{"S": "a"}, {"N": "1"}, {"M": {"k": {"B": b"12"}}}]},
    {"M": {"é": {"S": "v"}, "n": {"L": []}, "m": {"M": {"x": {"NULL": True}}}}},
]


@pytest.mark.parametrize("value", SIZED, ids=[next(iter(v)) + str(i) for i, v in enumerate(SIZED)])
def test_the_item_size_from_json_is_moto_s_size(value: dict[str, Any]) -> None:
    from moto.dynamodb.models.dynamo_type import DynamoType

    assert moto_dynamodb._value_size(value) == DynamoType(value).size()
    assert moto_dynamodb._attributes_size({"név": value}) == len("név".encode()) + DynamoType(value).size()


_TYPED_VALUES: list[dict[str, Any]] = [
    {"S": "a"},
    {"S": ""},
    {"S": "1"},
    {"B": b"a"},
    {"B": b""},
    {"BOOL": True},
    {"BOOL": False},
    {"N": "1"},
    {"N": "1.0"},
    {"N": "01"},
    {"NULL": True},
    {"SS": ["a", "b"]},
    {"SS": ["b", "a"]},
    {"NS": ["1", "2"]},
    {"BS": [b"a"]},
    {"L": [{"S": "a"}]},
    {"M": {"k": {"S": "a"}}},
]


def test_the_key_hash_and_equality_are_moto_s() -> None:
    """``DynamoType.__hash__``/``__eq__`` for S, B and BOOL skip ``cast_value``: every pair of values
    (several types, values equal only once cast) gets moto's own answers."""
    from moto.dynamodb.models.dynamo_type import DynamoType

    moto_dynamodb.install()
    stock_hash, stock_eq = moto_dynamodb._STOCK["hash"], moto_dynamodb._STOCK["eq"]
    assert DynamoType.__hash__ is moto_dynamodb._dynamo_hash
    values = [DynamoType(v) for v in _TYPED_VALUES]
    for a in values:
        if a.type not in ("SS", "NS", "BS", "L", "M"):  # unhashable cast values (moto raises TypeError)
            assert hash(a) == stock_hash(a)
        for b in values:
            assert (a == b) == stock_eq(a, b), (a, b)
    assert DynamoType({"N": "1"}) == DynamoType({"N": "1.0"})  # through moto's own comparison
    assert DynamoType({"S": "1"}) != DynamoType({"N": "1"})
    with pytest.raises(AttributeError):
        _ = DynamoType({"S": "a"}) == "a"  # moto's own failure on a non-DynamoType, kept
