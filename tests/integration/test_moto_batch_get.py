"""The local BatchGetItem stand-in answers exactly as moto's own BatchGetItem does.

acx/local/moto_batch_get.py writes BatchGetItem answers as JSON directly and picks top-level
projected attributes from the stored item. Each request below is sent to stock moto and to the
stand-in on the same data, through boto3 (so botocore parses both answers the same way); the parsed
answers, or the errors, must be equal. What the service relies on (DynamoDB API reference,
BatchGetItem): absent keys are simply not in ``Responses``, a projection returns only the named
attributes, binaries come back as bytes, at most 100 keys and no duplicates.
"""

from __future__ import annotations

from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws

from acx.local import moto_batch_get, moto_dynamodb
from tests.integration.moto_tables import create_pk_sk_table, sets_sorted


def _tables(client: Any) -> None:
    for name in ("t", "u"):
        create_pk_sk_table(client, name)


def _fill(client: Any) -> None:
    for i in range(30):
        item = {
            "pk": {"S": "p" if i % 3 else "p#1"},
            "sk": {"S": f"r#{i:02d}"},
            "state": {"S": "active" if i % 4 else "forgotten"},
            "body": {"B": bytes([i, 0, 255]) * (i + 1)},
            "seq": {"N": str(1000 + i)},
            "m": {"M": {"k": {"B": b"\x00"}, "ss": {"SS": ["a", "b"]}, "n": {"N": "1.5"}}},
            "l": {"L": [{"S": "x"}, {"N": "2"}, {"BOOL": True}, {"NULL": True}]},
        }
        if i % 5 == 0:
            item["tags"] = {"SS": ["x", "y"]}
        client.put_item(TableName="t", Item=item)
    client.put_item(TableName="u", Item={"pk": {"S": "q"}, "sk": {"S": "a"}, "v": {"S": "u-table"}})


def _keys(*pairs: tuple[str, str]) -> list[dict[str, Any]]:
    return [{"pk": {"S": pk}, "sk": {"S": sk}} for pk, sk in pairs]


SOME = _keys(("p", "r#01"), ("p", "r#02"), ("p#1", "r#03"), ("p", "r#03"), ("p", "r#99"), ("zz", "r#01"))
NAMES = {"#a0": "pk", "#a1": "sk", "#a2": "state", "#a3": "body"}
STATE = {"#s": "state"}
MANY = _keys(*(("p", f"r#{i:03d}") for i in range(101)))

REQUESTS: list[dict[str, Any]] = [
    {"t": {"Keys": SOME}},
    {"t": {"Keys": SOME, "ConsistentRead": True}},
    {"t": {"Keys": SOME, "ProjectionExpression": "#a0, #a1, #a2, #a3", "ExpressionAttributeNames": NAMES}},
    {"t": {"Keys": SOME, "ProjectionExpression": "#s", "ExpressionAttributeNames": STATE}},
    {"t": {"Keys": SOME, "ProjectionExpression": "seq, tags, nothing"}},
    {"t": {"Keys": SOME, "ProjectionExpression": "nothing"}},
    {"t": {"Keys": SOME, "ProjectionExpression": "m.k, l[0], #s", "ExpressionAttributeNames": STATE}},
    {"t": {"Keys": SOME, "ProjectionExpression": "m.k, l[0], state"}},  # a reserved word: refused
    {"t": {"Keys": SOME, "ProjectionExpression": "m"}},
    {"t": {"Keys": SOME, "AttributesToGet": ["state", "seq"]}},
    {"t": {"Keys": SOME}, "u": {"Keys": _keys(("q", "a"), ("q", "b"))}},
    {"t": {"Keys": _keys(*((("p" if i % 3 else "p#1"), f"r#{i:02d}") for i in range(30)))}},
    {"t": {"Keys": _keys(("nobody", "r#00"))}},
    # refusals
    {"t": {"Keys": _keys(("p", "r#01"), ("p", "r#01"))}},
    {"t": {"Keys": MANY}},
    {"t": {"Keys": MANY[:60]}, "u": {"Keys": _keys(*(("q", f"{i}") for i in range(41)))}},
    {"t": {"Keys": SOME, "ProjectionExpression": "#s", "ExpressionAttributeNames": {**STATE, "#x": "x"}}},
    {"t": {"Keys": SOME, "ProjectionExpression": "state, state"}},
    {"missing": {"Keys": SOME}},
    # keys the stand-in resolves itself: a key without its range attribute, another key type, extra
    # attributes, an absent partition next to a present one
    {"t": {"Keys": [{"pk": {"S": "p"}}]}},
    {"t": {"Keys": [{"sk": {"S": "r#01"}}]}},
    {"t": {"Keys": [{"pk": {"N": "1"}, "sk": {"S": "r#01"}}, {"pk": {"S": "p"}, "sk": {"B": b"r#01"}}]}},
    {"t": {"Keys": [{"pk": {"S": "p"}, "sk": {"S": "r#01"}, "state": {"S": "active"}}]}},
    {"t": {"Keys": _keys(("absent", "r#01"), ("p", "r#01"))}, "u": {"Keys": _keys(("q", "a"))}},
]  # fmt: skip


def _answer(client: Any, request: dict[str, Any]) -> Any:
    try:
        resp = client.batch_get_item(RequestItems=request, ReturnConsumedCapacity="TOTAL")
    except ClientError as exc:
        return ("error", exc.response["Error"].get("Code"), exc.response["Error"].get("Message"))
    resp.pop("ResponseMetadata", None)
    for items in resp.get("Responses", {}).values():
        items.sort(key=lambda item: (item.get("pk", {}).get("S", ""), item.get("sk", {}).get("S", "")))
    return sets_sorted(resp)


def _scenario() -> list[Any]:
    with mock_aws():
        moto_dynamodb.install()
        client = boto3.client("dynamodb", region_name="us-east-1")
        _tables(client)
        _fill(client)
        return [_answer(client, r) for r in REQUESTS]


def test_every_batch_get_answers_as_moto_itself_does() -> None:
    moto_dynamodb.install()  # installs moto_batch_get once per process: take it out for stock moto
    moto_batch_get.uninstall()
    try:
        expected = _scenario()
    finally:
        moto_batch_get.install()
    got = _scenario()
    assert len(got) == len(REQUESTS)
    for request, want, have in zip(REQUESTS, expected, got, strict=True):
        assert have == want, request
    # the scenario exercises what it claims: found, absent, refused
    assert any(isinstance(a, dict) and a["Responses"]["t"] for a in got)
    assert sum(isinstance(a, tuple) for a in got) == 9


def test_the_stand_in_is_what_answers() -> None:
    from moto.dynamodb.responses import DynamoHandler

    moto_dynamodb.install()
    assert DynamoHandler.batch_get_item is moto_batch_get._batch_get_item


@pytest.fixture
def ddb() -> Any:
    with mock_aws():
        moto_dynamodb.install()
        client = boto3.client("dynamodb", region_name="us-east-1")
        _tables(client)
        _fill(client)
        yield client


def test_projected_rows_carry_only_the_named_attributes_and_binaries_as_bytes(ddb: Any) -> None:
    names = {**STATE, "#b": "body"}
    request = {"Keys": SOME, "ProjectionExpression": "#s, #b", "ExpressionAttributeNames": names}
    got = ddb.batch_get_item(RequestItems={"t": request})["Responses"]["t"]
    assert len(got) == 3  # ("p", "r#03"), r#99 and the unknown partition are absent, not errors
    assert all(set(item) == {"state", "body"} for item in got)
    bodies = sorted(bytes(item["body"]["B"]) for item in got)
    assert bodies == [bytes([i, 0, 255]) * (i + 1) for i in (1, 2, 3)]


@pytest.mark.parametrize("projection", [None, "v, sk"])
def test_an_answer_past_16_mb_leaves_the_rest_unprocessed(ddb: Any, projection: str | None) -> None:
    blob = "x" * 390_000
    for i in range(50):
        ddb.put_item(TableName="t", Item={"pk": {"S": "big"}, "sk": {"S": f"{i:02d}"}, "v": {"S": blob}})
    request: dict[str, Any] = {"Keys": _keys(*(("big", f"{i:02d}") for i in range(50)))}
    if projection:
        request["ProjectionExpression"] = projection
    resp = ddb.batch_get_item(RequestItems={"t": request})
    read = len(resp["Responses"]["t"])
    left = len(resp["UnprocessedKeys"]["t"]["Keys"])
    assert read + left == 50
    assert read * 390_000 <= 16 * 1024 * 1024 < (read + 1) * 390_000


def test_a_read_of_an_absent_partition_leaves_the_table_as_it_was(ddb: Any) -> None:
    """moto's own ``Table.get_item`` adds an empty partition to ``table.items`` for every absent hash
    key it is asked for; the stand-in's lookup does not (a snapshot of the local stack pickles them)."""
    from moto.dynamodb.models import dynamodb_backends

    table = dynamodb_backends["123456789012"]["us-east-1"].get_table("t")
    before = len(table.items)
    got = ddb.batch_get_item(
        RequestItems={"t": {"Keys": _keys(*((f"absent-{i}", "r#01") for i in range(20)))}}
    )
    assert got["Responses"]["t"] == []
    assert len(table.items) == before
