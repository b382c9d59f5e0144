"""DynamoDB calls answered at botocore's ``before-call`` (acx/local/direct_call.py) give callers what
the HTTP path gives them: the same parsed answers and the same ``ClientError`` (code, message,
``CancellationReasons``, a failed condition's ``Item``), and moto receives the same request body.

The same scenario runs twice on a fresh moto: through botocore's whole path (signing, ``before-send``,
moto's own stubber) and through the hook. Everything a caller reads must be equal except the random
request ids.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError, ParamValidationError
from moto import mock_aws

from acx.local import direct_call, moto_dynamodb
from tests.integration.moto_tables import create_pk_sk_table, sets_sorted

PREFIX = "https://dynamodb.us-east-1.amazonaws.com/"
ITEM = {
    "pk": {"S": "p"},
    "sk": {"S": "a"},
    "b": {"B": b"\x00\xff"},
    "ss": {"SS": ["x", "y"]},
    "n": {"N": "1"},
}


def _clean(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items() if k not in ("RequestId", "HTTPHeaders")}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    return value


def _scenario(client: Any) -> list[Any]:
    out: list[Any] = []

    def step(fn: Callable[[], Any]) -> None:
        try:
            out.append(("ok", sets_sorted(_clean(fn()))))
        except ClientError as exc:
            out.append(("error", type(exc).__name__, sets_sorted(_clean(exc.response))))
        except ParamValidationError as exc:
            out.append(("invalid", str(exc)))

    create_pk_sk_table(client, "t")
    step(lambda: client.put_item(TableName="t", Item=ITEM))
    step(lambda: client.get_item(TableName="t", Key={"pk": {"S": "p"}, "sk": {"S": "a"}}))
    step(lambda: client.get_item(TableName="t", Key={"pk": {"S": "p"}, "sk": {"S": "none"}}))
    step(
        lambda: client.put_item(
            TableName="t",
            Item=ITEM,
            ConditionExpression="attribute_not_exists(pk)",
            ReturnValuesOnConditionCheckFailure="ALL_OLD",
        )
    )
    step(
        lambda: client.transact_write_items(
            TransactItems=[
                {"Put": {"TableName": "t", "Item": dict(ITEM, sk={"S": "c"})}},
                {
                    "Put": {
                        "TableName": "t",
                        "Item": ITEM,
                        "ConditionExpression": "attribute_not_exists(pk)",
                        "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
                    }
                },
            ]
        )
    )
    rows = [dict(ITEM, sk={"S": f"r{i:02d}"}) for i in range(25)]
    step(lambda: client.batch_write_item(RequestItems={"t": [{"PutRequest": {"Item": r}} for r in rows]}))
    step(lambda: client.batch_write_item(RequestItems={"t": [{"PutRequest": {"Item": rows[0]}}] * 2}))
    keys = [{"pk": r["pk"], "sk": r["sk"]} for r in rows[:10]]
    step(lambda: client.batch_get_item(RequestItems={"t": {"Keys": keys, "ConsistentRead": True}}))
    step(
        lambda: client.query(
            TableName="t",
            KeyConditionExpression="pk = :p",
            ExpressionAttributeValues={":p": {"S": "p"}},
            Limit=5,
        )
    )
    step(
        lambda: client.update_item(
            TableName="t",
            Key={"pk": {"S": "p"}, "sk": {"S": "a"}},
            UpdateExpression="SET n = n + :one",
            ExpressionAttributeValues={":one": {"N": "1"}},
            ReturnValues="ALL_NEW",
        )
    )
    step(
        lambda: client.delete_item(
            TableName="t", Key={"pk": {"S": "p"}, "sk": {"S": "a"}}, ReturnValues="ALL_OLD"
        )
    )
    step(lambda: client.get_item(TableName="missing", Key={"pk": {"S": "p"}, "sk": {"S": "a"}}))
    step(lambda: client.put_item(TableName="t", Item={"pk": {"S": 1}}))
    step(lambda: client.describe_table(TableName="t")["Table"]["KeySchema"])
    return out


def _run(direct: bool) -> tuple[list[Any], list[bytes]]:
    bodies: list[bytes] = []

    def answer(headers: list[tuple[str, str]], body: bytes) -> tuple[int, dict[str, str], bytes]:
        bodies.append(body)
        return moto_dynamodb.call(dict(headers), body)

    with mock_aws():
        moto_dynamodb.install()
        session = boto3.Session(region_name="us-east-1", aws_access_key_id="AK", aws_secret_access_key="S")
        if direct:
            direct_call.install(session.events, direct_call.DirectDynamoDB(answer, PREFIX))
        else:
            session.events.register("before-send.dynamodb", lambda request, **_: bodies.append(request.body))
        client = session.client("dynamodb")
        return _scenario(client), bodies


def test_the_hook_answers_what_the_http_path_answers() -> None:
    stock, stock_bodies = _run(direct=False)
    direct, direct_bodies = _run(direct=True)
    assert [s[0] for s in stock].count("error") >= 4  # the refusals are part of the comparison
    assert direct == stock
    token = re.compile(rb'"ClientRequestToken": "[0-9a-f-]+"')  # botocore draws a fresh one per call
    assert [token.sub(b"", b) for b in direct_bodies] == [token.sub(b"", b) for b in stock_bodies]


def test_other_addresses_go_the_usual_way() -> None:
    calls: list[Any] = []
    hook = direct_call.DirectDynamoDB(lambda h, b: calls.append(b) or (200, {}, b"{}"), "http://127.0.0.1:1/")
    with mock_aws():
        session = boto3.Session(region_name="us-east-1", aws_access_key_id="AK", aws_secret_access_key="S")
        direct_call.install(session.events, hook)
        client = session.client("dynamodb")
        assert client.list_tables()["TableNames"] == []
        direct_call.uninstall(session.events)
    assert calls == []


@pytest.mark.parametrize("region", ["us-east-1", "eu-west-1"])
def test_the_answer_gets_the_callers_region_and_access_key(region: str) -> None:
    seen: list[dict[str, str]] = []

    def answer(headers: list[tuple[str, str]], body: bytes) -> tuple[int, dict[str, str], bytes]:
        seen.append(dict(headers))
        return moto_dynamodb.call(dict(headers), body)

    with mock_aws():
        moto_dynamodb.install()
        session = boto3.Session(region_name=region, aws_access_key_id="AKX", aws_secret_access_key="S")
        direct_call.install(session.events, direct_call.DirectDynamoDB(answer, f"https://dynamodb.{region}."))
        session.client("dynamodb").list_tables()
        other = boto3.client("dynamodb", region_name="us-west-2")
        assert other.list_tables()["TableNames"] == []
    assert (
        "Credential=AKX/" in seen[0]["authorization"] and f"/{region}/dynamodb/" in seen[0]["authorization"]
    )
    assert seen[0]["x-amz-target"] == "DynamoDB_20120810.ListTables"
