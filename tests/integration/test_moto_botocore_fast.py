"""The local stack's fast botocore path writes the same DynamoDB requests and refuses the same values
as stock botocore; moto's items built by the fast ``DynamoType`` path equal moto's own.

acx/local/botocore_fast.py skips botocore's per-value shape walk for attribute values in the plain
forms and hands them to ``json.dumps``; acx/local/moto_dynamodb.py builds moto's ``DynamoType`` without
its per-node list copies. Each request below goes through a stock serialiser (with validation) and the
fast one: the request dicts (body bytes included) must be equal, or both must raise the same
``ParamValidationError`` report. A stand-in that let through a value stock botocore refuses would
hide a service bug that Lambda's botocore would raise.
"""

from __future__ import annotations

import json
from typing import Any

import boto3
import botocore.session
import pytest
from botocore.exceptions import ParamValidationError
from botocore.serialize import create_serializer
from moto import mock_aws

from acx.local import botocore_fast, moto_dynamodb
from tests.integration.moto_tables import create_pk_sk_table

MODEL = botocore.session.get_session().get_service_model("dynamodb")

EVERY_FORM: dict[str, Any] = {
    "pk": {"S": "p"},
    "sk": {"S": "r#01"},
    "s_empty": {"S": ""},
    "s_unicode": {"S": 'név \u2603 \U0001f600 "quoted" \\ \n'},
    "n": {"N": "-12.5e3"},
    "b": {"B": bytes(range(256))},
    "b_empty": {"B": b""},
    "ss": {"SS": ["a", "b"]},
    "ns": {"NS": ["1", "2.5"]},
    "bs": {"BS": [b"\x00", b"\xff\xfe"]},
    "m": {"M": {"k": {"B": b"\x00"}, "inner": {"M": {"x": {"L": [{"S": "y"}, {"NULL": True}]}}}}},
    "l": {"L": [{"S": "x"}, {"N": "2"}, {"BOOL": False}, {"NULL": True}, {"L": []}, {"M": {}}]},
    "t": {"BOOL": True},
    "nul": {"NULL": True},
}
KEY = {"pk": {"S": "p"}, "sk": {"S": "r#01"}}

#: (operation, parameters): the service's request kinds, with every attribute-value form.
VALID: list[tuple[str, dict[str, Any]]] = [
    ("PutItem", {"TableName": "t", "Item": EVERY_FORM}),
    (
        "PutItem",
        {
            "TableName": "t",
            "Item": EVERY_FORM,
            "ConditionExpression": "attribute_not_exists(pk) OR #s = :v",
            "ExpressionAttributeNames": {"#s": "state"},
            "ExpressionAttributeValues": {":v": {"B": b"\x01"}, ":w": {"L": [{"BS": [b"z"]}]}},
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        },
    ),
    ("GetItem", {"TableName": "t", "Key": KEY, "ConsistentRead": True, "ProjectionExpression": "b"}),
    ("DeleteItem", {"TableName": "t", "Key": KEY, "ReturnValues": "ALL_OLD"}),
    (
        "UpdateItem",
        {
            "TableName": "t",
            "Key": KEY,
            "UpdateExpression": "SET #a = :a ADD c :one",
            "ExpressionAttributeNames": {"#a": "a"},
            "ExpressionAttributeValues": {":a": {"M": {"q": {"SS": ["x"]}}}, ":one": {"N": "1"}},
        },
    ),
    (
        "Query",
        {
            "TableName": "t",
            "KeyConditionExpression": "pk = :p AND sk > :s",
            "ExpressionAttributeValues": {":p": {"S": "p"}, ":s": {"S": ""}},
            "ExclusiveStartKey": KEY,
            "Limit": 7,
            "ScanIndexForward": False,
        },
    ),
    (
        "BatchWriteItem",
        {
            "RequestItems": {
                "t": [{"PutRequest": {"Item": dict(EVERY_FORM, sk={"S": f"r#{i}"})}} for i in range(24)]
                + [{"DeleteRequest": {"Key": KEY}}],
                "u": [{"PutRequest": {"Item": {"pk": {"S": "q"}, "sk": {"S": "a"}}}}],
            },
            "ReturnConsumedCapacity": "TOTAL",
        },
    ),
    (
        "BatchGetItem",
        {
            "RequestItems": {
                "t": {
                    "Keys": [dict(KEY, sk={"S": f"r#{i}"}) for i in range(100)],
                    "ProjectionExpression": "#a, b",
                    "ExpressionAttributeNames": {"#a": "pk"},
                }
            }
        },
    ),
    (
        "TransactWriteItems",
        {
            "TransactItems": [
                {
                    "Put": {
                        "TableName": "t",
                        "Item": EVERY_FORM,
                        "ConditionExpression": "attribute_not_exists(pk)",
                    }
                },
                {
                    "Update": {
                        "TableName": "t",
                        "Key": KEY,
                        "UpdateExpression": "SET v = :v",
                        "ExpressionAttributeValues": {":v": {"N": "3"}},
                    }
                },
                {
                    "ConditionCheck": {
                        "TableName": "t",
                        "Key": KEY,
                        "ConditionExpression": "attribute_exists(pk)",
                    }
                },
                {"Delete": {"TableName": "t", "Key": dict(KEY, sk={"S": "gone"})}},
            ],
            "ClientRequestToken": "token-1",
        },
    ),
    # Not plain, so botocore's own path writes them (and both must still agree):
    ("PutItem", {"TableName": "t", "Item": {"pk": {"S": "p"}, "sk": {"B": bytearray(b"\x01")}}}),
    ("PutItem", {"TableName": "t", "Item": {"pk": {"S": "p"}, "sk": {"B": "text-as-blob"}}}),
    ("PutItem", {"TableName": "t", "Item": {"pk": {"S": "p"}, "l": {"L": ({"S": "tuple"},)}}}),
    ("PutItem", {"TableName": "t", "Item": {"pk": {"S": "p"}, "e": {}}}),
    ("PutItem", {"TableName": "t", "Item": {"pk": {"S": "p"}, "two": {"S": "a", "N": "1"}}}),
]

#: Values stock botocore refuses client side: the fast path must refuse them with the same report.
INVALID: list[tuple[str, dict[str, Any]]] = [
    ("PutItem", {"TableName": "t", "Item": {"pk": {"S": 1}}}),
    ("PutItem", {"TableName": "t", "Item": {"pk": {"N": 1}}}),
    ("PutItem", {"TableName": "t", "Item": {"pk": {"X": "1"}}}),
    ("PutItem", {"TableName": "t", "Item": {"pk": {"S": None}}}),
    ("PutItem", {"TableName": "t", "Item": {"pk": "bare string"}}),
    ("PutItem", {"TableName": "t", "Item": {"pk": {"B": 3}}}),
    ("PutItem", {"TableName": "t", "Item": {"pk": {"SS": "not-a-list"}}}),
    ("PutItem", {"TableName": "t", "Item": {"pk": {"SS": [1, 2]}}}),
    ("PutItem", {"TableName": "t", "Item": {"pk": {"BOOL": "yes"}}}),
    ("PutItem", {"TableName": "t", "Item": {"pk": {"M": {"k": {"S": 2}}}}}),
    ("PutItem", {"TableName": "t", "Item": {"pk": {"L": [{"N": 2}]}}}),
    ("PutItem", {"TableName": "t", "Item": {1: {"S": "int key"}}}),
    ("PutItem", {"TableName": "t", "Item": [("pk", {"S": "p"})]}),
    ("BatchWriteItem", {"RequestItems": {"t": [{"PutRequest": {"Item": {"pk": {"S": b"bytes"}}}}]}}),
    ("BatchGetItem", {"RequestItems": {"t": {"Keys": [{"pk": {"Q": "p"}}]}}}),
    ("BatchGetItem", {"RequestItems": {"t": {"Keys": []}}}),
    ("Query", {"TableName": "t", "ExpressionAttributeValues": {":p": {"S": 5}}}),
    ("PutItem", {"Item": EVERY_FORM}),
    ("PutItem", {"TableName": "t", "Item": EVERY_FORM, "Unknown": 1}),
]


#: Refused client side by botocore at the structure level (the attribute values are all plain).
INVALID_STRUCTURE: list[tuple[str, dict[str, Any]]] = [
    ("BatchWriteItem", {"RequestItems": {"t": [{"PutRequest": {}}]}}),  # Item missing
    ("BatchWriteItem", {"RequestItems": {"t": [{"PutRequest": {"Item": KEY, "Extra": 1}}]}}),
    ("BatchWriteItem", {"RequestItems": {"": [{"DeleteRequest": {"Key": KEY}}]}}),  # table name under min
    ("BatchWriteItem", {"RequestItems": {"t": {"PutRequest": {"Item": KEY}}}}),  # a map, not a list
    ("BatchGetItem", {"RequestItems": {"t": {"Keys": [KEY], "ConsistentRead": "yes"}}}),
    ("GetItem", {"TableName": "", "Key": KEY}),  # min length 1
    ("Query", {"TableName": "t", "Limit": 0}),  # min 1
    ("Query", {"TableName": "t", "Limit": "7"}),
    ("TransactWriteItems", {"TransactItems": []}),  # min 1
    ("TransactWriteItems", {"TransactItems": [{"Put": {"TableName": "t"}}]}),  # Item missing
    (
        "TransactWriteItems",
        {"TransactItems": [{"Put": {"TableName": "t", "Item": KEY}}], "ClientRequestToken": ""},
    ),
    ("UpdateItem", {"TableName": "t", "Key": KEY, "ExpressionAttributeNames": {"#a": 1}}),
    ("UpdateItem", {"TableName": "t", "Key": KEY, "ExpressionAttributeNames": {1: "a"}}),
]


def _serializers() -> tuple[Any, Any]:
    stock = create_serializer("json", True)
    return stock, botocore_fast.fast_serializer(create_serializer("json", True))


@pytest.mark.parametrize(("operation", "params"), VALID, ids=lambda v: v if isinstance(v, str) else "")
def test_same_request_as_stock_botocore(operation: str, params: dict[str, Any]) -> None:
    stock, fast = _serializers()
    model = MODEL.operation_model(operation)
    assert isinstance(fast._serializer, botocore_fast.FastJSONSerializer)
    _assert_same_request(fast.serialize_to_request(params, model), stock.serialize_to_request(params, model))
    if not botocore_fast.request_check(model.input_shape)(params):  # botocore's walk: its very bytes
        assert fast.serialize_to_request(params, model) == stock.serialize_to_request(params, model)


def _assert_same_request(got: dict[str, Any], want: dict[str, Any]) -> None:
    """The same request; the body the same JSON value (a checked request's body is written by orjson:
    other bytes, the same value, and moto and the journal's replay only ever parse it)."""
    assert {k: v for k, v in got.items() if k != "body"} == {k: v for k, v in want.items() if k != "body"}
    assert json.loads(got["body"]) == json.loads(want["body"])
    assert moto_dynamodb._loads(got["body"]) == moto_dynamodb._loads(want["body"])  # as moto reads it


@pytest.mark.parametrize(
    ("operation", "params"), INVALID + INVALID_STRUCTURE, ids=lambda v: v if isinstance(v, str) else ""
)
def test_same_refusal_as_stock_botocore(operation: str, params: dict[str, Any]) -> None:
    stock, fast = _serializers()
    model = MODEL.operation_model(operation)
    assert not botocore_fast.request_check(model.input_shape)(params)  # nothing botocore refuses passes
    with pytest.raises(ParamValidationError) as want:
        stock.serialize_to_request(params, model)
    with pytest.raises(ParamValidationError) as got:
        fast.serialize_to_request(params, model)
    assert str(got.value) == str(want.value)


def test_plain_forms() -> None:
    assert all(botocore_fast.plain(v) for v in EVERY_FORM.values())
    for value in ({}, {"S": "a", "N": "1"}, {"B": bytearray(b"x")}, {"SS": ("a",)}, {"L": [{"S": 1}]}, "x"):
        assert not botocore_fast.plain(value)


def test_a_validating_serializer_stays_validating_and_others_are_kept() -> None:
    fast = botocore_fast.fast_serializer(create_serializer("json", True))
    assert isinstance(fast._param_validator, botocore_fast.FastValidator)
    unvalidated = botocore_fast.fast_serializer(create_serializer("json", False))
    assert type(unvalidated) is botocore_fast.FastJSONSerializer
    query = create_serializer("query", True)
    assert botocore_fast.fast_serializer(query) is query


def test_installed_only_on_its_session_and_removed_by_uninstall() -> None:
    session = boto3.Session(region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="y")
    botocore_fast.install(session.events)
    fast = session.client("dynamodb")
    sqs = session.client("sqs")
    other = boto3.Session(region_name="us-east-1").client("dynamodb")
    botocore_fast.uninstall(session.events)
    after = session.client("dynamodb")
    assert isinstance(fast._serializer._serializer, botocore_fast.FastJSONSerializer)
    assert not isinstance(sqs._serializer._serializer, botocore_fast.FastJSONSerializer)
    assert type(other._serializer._serializer).__name__ == "JSONSerializer"
    assert type(after._serializer._serializer).__name__ == "JSONSerializer"


def test_round_trip_through_moto_with_a_fast_client() -> None:
    with mock_aws():
        session = boto3.Session(region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="y")
        botocore_fast.install(session.events)
        client = session.client("dynamodb")
        create_pk_sk_table(client, "t")
        client.put_item(TableName="t", Item=EVERY_FORM)
        got = client.get_item(TableName="t", Key=KEY, ConsistentRead=True)["Item"]
        with pytest.raises(ParamValidationError):
            client.put_item(TableName="t", Item={"pk": {"S": 1}, "sk": {"S": "x"}})
    for name in ("ss", "ns", "bs"):  # sets come back in any order
        tag = next(iter(EVERY_FORM[name]))
        assert sorted(got.pop(name)[tag]) == sorted(EVERY_FORM[name][tag])
    assert got == {k: v for k, v in EVERY_FORM.items() if k not in ("ss", "ns", "bs")}


def _tree(value: Any) -> Any:
    from moto.dynamodb.models.dynamo_type import DynamoType

    if isinstance(value, DynamoType):
        return (type(value), value.type, _tree(value.value), sorted(vars(value)))
    if isinstance(value, list):
        return [_tree(v) for v in value]
    if isinstance(value, dict):
        return {k: _tree(v) for k, v in value.items()}
    return value


@pytest.mark.parametrize("name", sorted(EVERY_FORM))
def test_fast_dynamo_type_equals_moto(name: str) -> None:
    from moto.dynamodb.models.dynamo_type import DynamoType

    value = moto_dynamodb._loads(
        moto_dynamodb.json.dumps({"v": EVERY_FORM[name]}, default=botocore_fast._blob)
    )["v"]
    assert _tree(moto_dynamodb._dynamo_type(value, DynamoType)) == _tree(DynamoType(value))


@pytest.mark.parametrize("value", [{}, {"S": "a", "N": "1"}, {"L": "not-a-list"}, {"M": [1]}, "bare"])
def test_fast_dynamo_type_odd_values_are_moto_s(value: Any) -> None:
    from moto.dynamodb.models.dynamo_type import DynamoType

    try:
        want: Any = _tree(DynamoType(value))
    except Exception as exc:
        want = type(exc)
    try:
        got: Any = _tree(moto_dynamodb._dynamo_type(value, DynamoType))
    except Exception as exc:
        got = type(exc)
    assert got == want


def test_the_serialiser_does_not_walk_again_what_the_validator_found_plain(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[int] = []
    plain_map = botocore_fast._plain_map

    def counted(value: Any) -> bool:
        calls.append(id(value))
        return plain_map(value)

    monkeypatch.setattr(botocore_fast, "_plain_map", counted)
    stock, fast = _serializers()
    model = MODEL.operation_model("BatchWriteItem")
    items = [dict(EVERY_FORM, sk={"S": f"r#{i:02d}"}) for i in range(25)]
    # A tuple of write requests (botocore takes it as a list) is not for the whole-request check,
    # so this request takes the per-value path.
    params = {"RequestItems": {"t": tuple({"PutRequest": {"Item": item}} for item in items)}}
    assert not botocore_fast.request_check(model.input_shape)(params)
    assert fast.serialize_to_request(params, model) == stock.serialize_to_request(params, model)
    assert len(calls) == 25  # once per item, by the validator (the serialiser trusted it)
    assert fast._param_validator.checked.values is None  # nothing kept after the request
    calls.clear()
    unvalidated = botocore_fast.fast_serializer(create_serializer("json", False))
    assert unvalidated.serialize_to_request(params, model) == stock.serialize_to_request(params, model)
    assert len(calls) == 25  # no validator: the serialiser walks them itself


#: Requests botocore accepts that the whole-request check leaves to botocore's walk (and why).
WALKED: list[tuple[str, dict[str, Any]]] = [
    ("PutItem", {"TableName": "t", "Item": {"pk": {"S": "p"}, "sk": {"B": bytearray(b"\x01")}}}),  # bytearray
    ("PutItem", {"TableName": "t", "Item": {"pk": {"S": "p"}, "sk": {"B": "text-as-blob"}}}),  # str blob
    ("PutItem", {"TableName": "t", "Item": {"pk": {"S": "p"}, "l": {"L": ({"S": "tuple"},)}}}),  # tuple
    ("Query", {"TableName": "t", "Limit": True}),  # a bool for an integer
    ("BatchGetItem", {"RequestItems": {"t": {"Keys": (KEY,)}}}),  # a tuple of keys
    ("Scan", {"TableName": "t", "TotalSegments": 2, "Segment": False, "ExclusiveStartKey": KEY}),
]


@pytest.mark.parametrize(("operation", "params"), VALID[:9], ids=lambda v: v if isinstance(v, str) else "")
def test_the_service_requests_skip_both_walks(operation: str, params: dict[str, Any]) -> None:
    model = MODEL.operation_model(operation)
    assert botocore_fast.request_check(model.input_shape)(params)
    stock, fast = _serializers()
    walked: list[Any] = []
    fast._param_validator.validate = lambda *a: walked.append(a)  # type: ignore[method-assign]
    fast._serializer._serialize = lambda *a: walked.append(a)  # type: ignore[method-assign]
    _assert_same_request(fast.serialize_to_request(params, model), stock.serialize_to_request(params, model))
    assert walked == []


@pytest.mark.parametrize(
    "params",
    [
        {"TableName": "t", "Limit": 2**70},  # past orjson's 64-bit integers
        {"TableName": "t", "ExclusiveStartKey": {"pk": {"S": "lone \udc80 surrogate"}}},  # not UTF-8
    ],
)
def test_what_orjson_refuses_is_written_by_json_dumps_as_botocore_writes_it(params: dict[str, Any]) -> None:
    model = MODEL.operation_model("Scan")
    assert botocore_fast.request_check(model.input_shape)(params)
    stock, fast = _serializers()
    assert fast.serialize_to_request(params, model) == stock.serialize_to_request(params, model)


@pytest.mark.parametrize(("operation", "params"), WALKED, ids=lambda v: v if isinstance(v, str) else "")
def test_what_the_check_leaves_is_botocore_s_walk_with_the_same_request(
    operation: str, params: dict[str, Any]
) -> None:
    model = MODEL.operation_model(operation)
    assert not botocore_fast.request_check(model.input_shape)(params)
    stock, fast = _serializers()
    assert fast.serialize_to_request(params, model) == stock.serialize_to_request(params, model)


def test_every_dynamodb_input_shape_compiles() -> None:
    """Recursive shapes (attribute values in maps in lists ...) end; each operation has a check."""
    for name in MODEL.operation_names:
        shape = MODEL.operation_model(name).input_shape
        if shape is not None:
            assert callable(botocore_fast.request_check(shape))
