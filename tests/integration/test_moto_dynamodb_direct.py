"""``moto_dynamodb.call`` (the local stack's DynamoDB path without WSGI) answers as moto's server does.

Each request is sent twice: through moto's own WSGI application (what ``make serve`` exposed before)
and through ``call``, against twin tables in two regions of one in-process moto, and the answers must
be equal (status, error type and message, items), apart from the region names and request ids.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from acx.local import moto_dynamodb
from tests.integration.moto_tables import create_pk_sk_table

REGIONS = ("us-east-1", "eu-west-1")


def _auth(region: str) -> str:
    return (
        f"AWS4-HMAC-SHA256 Credential=testing/20260101/{region}/dynamodb/aws4_request, "
        "SignedHeaders=host;x-amz-target, Signature=00"
    )


@pytest.fixture
def twins() -> Iterator[None]:
    with mock_aws():
        moto_dynamodb.install()
        for region in REGIONS:
            create_pk_sk_table(boto3.client("dynamodb", region_name=region))
        yield


def _via_wsgi(action: str, body: bytes, region: str) -> tuple[int, dict[str, Any]]:
    import io

    from moto.server import DomainDispatcherApplication, create_backend_app

    app = DomainDispatcherApplication(create_backend_app)
    environ = {
        "REQUEST_METHOD": "POST",
        "PATH_INFO": "/",
        "QUERY_STRING": "",
        "SERVER_NAME": "127.0.0.1",
        "SERVER_PORT": "5000",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "wsgi.url_scheme": "http",
        "wsgi.input": io.BytesIO(body),
        "wsgi.errors": io.StringIO(),
        "CONTENT_LENGTH": str(len(body)),
        "CONTENT_TYPE": "application/x-amz-json-1.0",
        "HTTP_HOST": "127.0.0.1:5000",
        "HTTP_X_AMZ_TARGET": f"DynamoDB_20120810.{action}",
        "HTTP_AUTHORIZATION": _auth(region),
    }
    status: list[str] = []
    out = b"".join(app(environ, lambda s, h, e=None: status.append(s)))
    return int(status[0].split()[0]), json.loads(out or b"{}")


def _via_call(action: str, body: bytes, region: str) -> tuple[int, dict[str, Any]]:
    headers = {"x-amz-target": f"DynamoDB_20120810.{action}", "authorization": _auth(region)}
    code, head, out = moto_dynamodb.call(headers, body)
    import zlib

    assert head["x-amz-crc32"] == str(zlib.crc32(out))  # botocore checks it for DynamoDB
    return code, json.loads(out or b"{}")


def _item(sk: str, **extra: Any) -> dict[str, Any]:
    return {"pk": {"S": "p"}, "sk": {"S": sk}, **extra}


REQUESTS: list[tuple[str, dict[str, Any]]] = [
    ("PutItem", {"TableName": "t", "Item": _item("a", v={"N": "1"}, b={"B": "AAE="})}),
    ("PutItem", {"TableName": "t", "Item": _item("a"), "ConditionExpression": "attribute_not_exists(pk)"}),
    (
        "PutItem",
        {
            "TableName": "t",
            "Item": _item("a"),
            "ConditionExpression": "attribute_not_exists(pk)",
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        },
    ),
    ("GetItem", {"TableName": "t", "Key": _item("a"), "ConsistentRead": True}),
    ("GetItem", {"TableName": "nope", "Key": _item("a")}),
    (
        "BatchWriteItem",
        {
            "RequestItems": {
                "t": [{"PutRequest": {"Item": _item(f"r{i:02d}", n={"N": str(i)})}} for i in range(25)]
            }
        },
    ),
    (
        "BatchWriteItem",
        {"RequestItems": {"t": [{"PutRequest": {"Item": _item(f"x{i:02d}")}} for i in range(26)]}},
    ),
    ("BatchGetItem", {"RequestItems": {"t": {"Keys": [_item("r00"), _item("r07"), _item("zz")]}}}),
    ("BatchGetItem", {"RequestItems": {"t": {"Keys": [_item(f"k{i}") for i in range(101)]}}}),
    ("BatchGetItem", {"RequestItems": {"t": {"Keys": [_item("r00"), _item("r00")]}}}),
    (
        "TransactWriteItems",
        {
            "TransactItems": [
                {
                    "Put": {
                        "TableName": "t",
                        "Item": _item("t1"),
                        "ConditionExpression": "attribute_not_exists(pk)",
                    }
                },
                {
                    "Put": {
                        "TableName": "t",
                        "Item": _item("a"),
                        "ConditionExpression": "attribute_not_exists(pk)",
                    }
                },
            ]
        },
    ),
    (
        "TransactWriteItems",
        {"TransactItems": [{"Put": {"TableName": "t", "Item": _item(f"y{i}")}} for i in range(101)]},
    ),
    (
        "UpdateItem",
        {
            "TableName": "t",
            "Key": _item("a"),
            "UpdateExpression": "SET #v = #v + :one",
            "ExpressionAttributeNames": {"#v": "v"},
            "ExpressionAttributeValues": {":one": {"N": "1"}},
            "ReturnValues": "ALL_NEW",
        },
    ),
    (
        "Query",
        {
            "TableName": "t",
            "KeyConditionExpression": "pk = :p AND begins_with(sk, :s)",
            "ExpressionAttributeValues": {":p": {"S": "p"}, ":s": {"S": "r"}},
            "Limit": 5,
        },
    ),
    ("DeleteItem", {"TableName": "t", "Key": _item("a"), "ReturnValues": "ALL_OLD"}),
    ("Scan", {"TableName": "t", "Select": "COUNT"}),
]


def _same(doc: Any) -> Any:
    text = json.dumps(doc, sort_keys=True)
    for region in REGIONS[1:]:
        text = text.replace(region, REGIONS[0])
    return json.loads(text)


def test_every_answer_equals_moto_s_server_answer_and_the_state_stays_equal(twins: None) -> None:
    codes = []
    for action, doc in REQUESTS:
        body = json.dumps(doc).encode()
        expected = _via_wsgi(action, body, REGIONS[0])
        got = _via_call(action, body, REGIONS[1])
        assert _same(got) == _same(expected), action
        codes.append(got[0])
    # Some of them failed as AWS documents (limits, conditions, unknown table): the same ones.
    assert codes == [200, 400, 400, 200, 400, 200, 400, 200, 400, 400, 400, 400, 200, 200, 200, 200]
    scans = [
        boto3.client("dynamodb", region_name=r).scan(TableName="t", ConsistentRead=True)["Items"]
        for r in REGIONS
    ]
    assert sorted(json.dumps(i, default=repr, sort_keys=True) for i in scans[0]) == sorted(
        json.dumps(i, default=repr, sort_keys=True) for i in scans[1]
    )
    assert len(scans[0]) == 25  # the 25 batch puts; not t1 (its transaction was cancelled), nor a


def test_a_body_that_is_not_json_is_a_serialization_error_and_an_unknown_action_is_not_run(
    twins: None,
) -> None:
    code, doc = _via_call("PutItem", b"{not json", REGIONS[1])
    assert code == 400 and doc["__type"].endswith("SerializationException")
    with pytest.raises(NotImplementedError):
        _via_call("SetupClass", b"{}", REGIONS[1])  # a DynamoHandler helper, not an API action


def _batch(ddb: Any, requests: list[dict[str, Any]]) -> str:
    from botocore.exceptions import ClientError

    try:
        ddb.batch_write_item(RequestItems={"t": requests})
    except ClientError as exc:
        return str(exc.response["Error"]["Code"])
    return "ok"


def test_batch_write_refuses_what_the_api_reference_refuses_and_writes_nothing(twins: None) -> None:
    ddb = boto3.client("dynamodb", region_name=REGIONS[0])
    put = [{"PutRequest": {"Item": _item(f"x{i:02d}")}} for i in range(26)]
    assert _batch(ddb, put[:26]) == "ValidationException"  # 26 requests (stock moto took them)
    big = {"PutRequest": {"Item": _item("big", a={"S": "x" * (400 * 1024)})}}
    assert _batch(ddb, [*put[:3], big]) == "ValidationException"  # 400 KB item: not even the 3 before it
    fat = [{"PutRequest": {"Item": _item(f"f{i:02d}", a={"S": "x" * (390 * 1024)})}} for i in range(25)]
    assert _batch(ddb, fat[:25]) == "ok"  # 25 items of 390 KB: the most a batch can hold
    twin = [put[0], {"DeleteRequest": {"Key": _item("x00")}}]
    assert _batch(ddb, twin) == "ValidationException"  # a put and a delete of one item
    assert _batch(ddb, [{"PutRequest": {"Item": {"pk": {"S": "p"}}}}]) == "ValidationException"  # no sk
    pages = ddb.get_paginator("scan").paginate(TableName="t", ProjectionExpression="sk")
    keys = sorted(i["sk"]["S"] for page in pages for i in page["Items"])
    assert keys == [f"f{i:02d}" for i in range(25)]
    assert _batch(ddb, put[:25]) == "ok"
