"""ObjectStore.purge against S3's documented DeleteObjects answer: 200 with failed keys in ``Errors``.

S3 (API reference, DeleteObjects): the response lists each deleted object under ``Deleted`` and
each failure under ``Errors`` (Key, VersionId, Code, Message) with HTTP 200; moto never produces
``Errors``, so the answers are stubbed here with botocore's Stubber (no network, no moto).
"""

from __future__ import annotations

from typing import Any

import boto3
import pytest
from botocore.stub import ANY, Stubber

from acx.adapters.objects import PURGE_ATTEMPTS, ObjectStore, PurgeIncomplete

KEY = "cartridges/acme/pkg/c1.acx"


def _store() -> tuple[ObjectStore, Stubber, list[float]]:
    s3 = boto3.client("s3", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="y")
    slept: list[float] = []
    return ObjectStore(s3, "b", sleep=slept.append), Stubber(s3), slept


def _versions(stub: Stubber, *ids: str) -> None:
    stub.add_response(
        "list_object_versions",
        {"Versions": [{"Key": KEY, "VersionId": v} for v in ids], "IsTruncated": False},
        {"Bucket": "b", "Prefix": KEY},
    )


def _delete(stub: Stubber, sent: list[str], failed: list[str], code: str = "InternalError") -> None:
    response: dict[str, Any] = {
        "Deleted": [{"Key": KEY, "VersionId": v} for v in sent if v not in failed],
        "Errors": [{"Key": KEY, "VersionId": v, "Code": code, "Message": "try again"} for v in failed],
    }
    stub.add_response(
        "delete_objects",
        response,
        {"Bucket": "b", "Delete": {"Objects": [{"Key": KEY, "VersionId": v} for v in sent], "Quiet": ANY}},
    )


def test_versions_listed_in_errors_are_retried_alone_until_deleted() -> None:
    store, stub, slept = _store()
    _versions(stub, "v1", "v2", "v3")
    _delete(stub, ["v1", "v2", "v3"], failed=["v2"])
    _delete(stub, ["v2"], failed=["v2"], code="SlowDown")
    _delete(stub, ["v2"], failed=[])
    with stub:
        assert store.purge(KEY) == 3
    stub.assert_no_pending_responses()
    assert slept == [0.2, 0.4]


def test_a_version_s3_keeps_refusing_is_reported_not_counted_as_purged() -> None:
    store, stub, slept = _store()
    _versions(stub, "v1", "v2")
    _delete(stub, ["v1", "v2"], failed=["v1"], code="AccessDenied")
    for _ in range(PURGE_ATTEMPTS - 1):
        _delete(stub, ["v1"], failed=["v1"], code="AccessDenied")
    with stub, pytest.raises(PurgeIncomplete) as err:
        store.purge(KEY)
    stub.assert_no_pending_responses()
    assert err.value.failures == [{"Key": KEY, "VersionId": "v1", "Code": "AccessDenied"}]
    assert "1 version(s) not deleted (AccessDenied)" in str(err.value)
    assert len(slept) == PURGE_ATTEMPTS - 1


def test_more_than_a_thousand_versions_go_in_batches_of_one_thousand() -> None:
    store, stub, _ = _store()
    ids = [f"v{i}" for i in range(1001)]
    _versions(stub, *ids)
    _delete(stub, ids[:1000], failed=[])
    _delete(stub, ids[1000:], failed=[])
    with stub:
        assert store.purge(KEY) == 1001
    stub.assert_no_pending_responses()
