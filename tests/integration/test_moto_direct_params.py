"""BatchWriteItem and BatchGetItem hand moto a copy of the checked parameters instead of their body
to decode (acx/local/direct_call.py ``moto_params``): what moto receives is exactly what decoding the
body gives, callers read the same answers as on botocore's HTTP path, and moto keeps none of the
caller's objects."""

from __future__ import annotations

from typing import Any

import boto3
from moto import mock_aws

from acx.local import botocore_fast, direct_call, moto_dynamodb
from tests.integration.moto_tables import create_pk_sk_table
from tests.integration.test_moto_direct_call import ITEM, PREFIX, _scenario


def _same(a: Any, b: Any) -> bool:
    """Equal, with the same exact types all the way down (True is not 1, bytes is not str)."""
    if type(a) is not type(b):
        return False
    if type(a) is dict:
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if type(a) is list:
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def _session(handed: list[tuple[bytes, dict[str, Any]]]) -> Any:
    def answer(
        headers: list[tuple[str, str]], body: bytes, params: dict[str, Any] | None = None
    ) -> tuple[int, dict[str, str], bytes]:
        if params is not None:
            handed.append((body, params))
        return moto_dynamodb.call(dict(headers), body, params)

    session = boto3.Session(region_name="us-east-1", aws_access_key_id="AK", aws_secret_access_key="S")
    botocore_fast.install(session.events)
    direct_call.install(session.events, direct_call.DirectDynamoDB(answer, PREFIX))
    return session


def test_answers_are_the_http_paths_and_moto_gets_the_decoded_body() -> None:
    with mock_aws():
        moto_dynamodb.install()
        stock = _scenario(boto3.Session(region_name="us-east-1").client("dynamodb"))
    handed: list[tuple[bytes, dict[str, Any]]] = []
    with mock_aws():
        moto_dynamodb.install()
        direct = _scenario(_session(handed).client("dynamodb"))
    assert direct == stock  # the refused duplicate batch included
    ops = [("RequestItems" in p and "Keys" in next(iter(p["RequestItems"].values()))) for _, p in handed]
    assert len(handed) >= 3 and True in ops and False in ops  # both operations took the new path
    for body, params in handed:
        assert _same(params, moto_dynamodb._loads(body))


def test_moto_keeps_none_of_the_callers_objects() -> None:
    handed: list[tuple[bytes, dict[str, Any]]] = []
    with mock_aws():
        moto_dynamodb.install()
        client = _session(handed).client("dynamodb")
        create_pk_sk_table(client, "t")
        item = dict(ITEM, ss={"SS": ["x", "y"]}, l={"L": [{"S": "e"}]})
        request = {"t": [{"PutRequest": {"Item": item}}]}
        client.batch_write_item(RequestItems=request)
        assert handed and handed[0][1]["RequestItems"]["t"][0]["PutRequest"]["Item"] is not item
        item["ss"]["SS"].append("z")  # the caller changes its request after the call
        item["l"]["L"].append({"S": "f"})
        item["pk"]["S"] = "changed"
        got = client.get_item(TableName="t", Key={"pk": {"S": "p"}, "sk": {"S": "a"}})["Item"]
    assert sorted(got["ss"]["SS"]) == ["x", "y"]
    assert got["l"] == {"L": [{"S": "e"}]}


def test_a_name_map_that_decoding_would_change_keeps_the_body() -> None:
    """``_loads`` base64-decodes any one-member ``{"B": str}``; an ExpressionAttributeNames of one
    name ``B`` is decoded from the body, as before, so a replay of the journal sees the same request."""
    request: dict[str, Any] = {
        botocore_fast.CHECKED_PARAMS: {
            "RequestItems": {"t": {"Keys": [], "ExpressionAttributeNames": {"B": "QUJD"}}}
        }
    }
    assert direct_call.moto_params("BatchGetItem", request) is None
    request[botocore_fast.CHECKED_PARAMS]["RequestItems"]["t"]["ExpressionAttributeNames"] = {"#b": "B"}
    assert direct_call.moto_params("BatchGetItem", request) is not None
    assert direct_call.moto_params("PutItem", request) is None  # only the two batch operations
    assert direct_call.moto_params("BatchGetItem", {}) is None  # a body botocore wrote: decoded
