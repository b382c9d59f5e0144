"""A cartridge revoked while it was being exported is purged even when S3 refuses the first purge.

S3's DeleteObjects answers 200 and lists failed versions under ``Errors``; ObjectStore.purge retries
them and then raises PurgeIncomplete (tests/unit/adapters/test_objects.py). Here the whole path: the export
function's purge fails, the SQS message is redelivered, and the redelivery (the job already revoked)
purges the object instead of returning early.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest

from tests.integration.service import Context, Service, bundle, record, start_service

PKG = "purge"


@pytest.fixture
def svc() -> Iterator[Service]:
    yield from start_service()


def _delivery(body: dict[str, Any]) -> dict[str, Any]:
    return {
        "Records": [
            {
                "messageId": "m-1",
                "receiptHandle": "r-1",
                "body": json.dumps(body),
                "attributes": {
                    "ApproximateReceiveCount": "1",
                    "SentTimestamp": "0",
                    "SenderId": "x",
                    "ApproximateFirstReceiveTimestamp": "0",
                },
                "messageAttributes": {},
                "md5OfBody": "0",
                "eventSource": "aws:sqs",
                "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:export",
                "awsRegion": "us-east-1",
            }
        ]
    }


def refuse_deletes_in(monkeypatch: pytest.MonkeyPatch, bucket: str) -> None:
    """S3's DeleteObjects answers 200 with every version of ``bucket`` in ``Errors`` (InternalError);
    other buckets delete as usual."""
    from acx.adapters.objects import ObjectStore

    original_delete = ObjectStore._delete_versions

    def s3_refuses(store: ObjectStore, batch: list[dict[str, str]]) -> list[dict[str, str]]:
        if store.bucket != bucket:
            return original_delete(store, batch)
        return [{"Key": t["Key"], "VersionId": t["VersionId"], "Code": "InternalError"} for t in batch]

    monkeypatch.setattr(ObjectStore, "_delete_versions", s3_refuses)


def test_a_failed_purge_of_a_revoked_cartridge_is_redone_by_the_redelivery(
    svc: Service, monkeypatch: pytest.MonkeyPatch
) -> None:
    from acx.adapters.objects import ObjectStore

    assert svc.call("POST", f"/v1/packages/{PKG}/bundles", body=bundle([record(1)]))[0] == 201
    status, queued = svc.call("POST", f"/v1/packages/{PKG}/cartridges", body={"async": True})
    assert status == 202
    original_upload = ObjectStore.upload_file

    def forget_then_upload(store: ObjectStore, key: str, path: str, content_type: str = "") -> None:
        assert svc.call("DELETE", f"/v1/packages/{PKG}/memories/mem-0001")[0] == 200
        original_upload(store, key, path, content_type)

    monkeypatch.setattr(ObjectStore, "upload_file", forget_then_upload)
    refuse_deletes_in(monkeypatch, svc.env["CARTRIDGES_BUCKET"])
    message = {"tenant": "acme", "package": PKG, "cartridgeId": queued["cartridgeId"]}
    first = svc.export.lambda_handler(_delivery(message), Context())
    assert first["batchItemFailures"] == [{"itemIdentifier": "m-1"}]  # reported, so redelivered
    s3 = boto3.client("s3", region_name="us-east-1")
    prefix = f"cartridges/acme/{PKG}/{queued['cartridgeId']}"
    assert s3.list_object_versions(Bucket=svc.env["CARTRIDGES_BUCKET"], Prefix=prefix).get("Versions")

    monkeypatch.undo()
    second = svc.export.lambda_handler(_delivery(message), Context())
    assert second["batchItemFailures"] == []
    left = s3.list_object_versions(Bucket=svc.env["CARTRIDGES_BUCKET"], Prefix=prefix)
    assert not left.get("Versions") and not left.get("DeleteMarkers")
    assert svc.call("GET", f"/v1/packages/{PKG}/cartridges/{queued['cartridgeId']}")[0] == 410


def test_a_forget_whose_bundle_purge_s3_refuses_is_503_and_its_repeat_finishes_the_erasure(
    svc: Service, monkeypatch: pytest.MonkeyPatch
) -> None:

    secret_text = "Back off with jitter, case 1."
    assert svc.call("POST", f"/v1/packages/{PKG}/bundles", body=bundle([record(1), record(2)]))[0] == 201
    refuse_deletes_in(monkeypatch, svc.env["DATA_BUCKET"])
    status, body = svc.call("DELETE", f"/v1/packages/{PKG}/memories/mem-0001")
    assert status == 503, body  # was 500 "internal error"
    assert body["error"]["code"] == "unavailable"
    assert "repeat the same forget" in body["error"]["message"]
    assert secret_text not in json.dumps(body)
    # the log part is done: the memory is tombstoned and refused, whatever S3 still holds
    assert svc.call("GET", f"/v1/packages/{PKG}/memories/mem-0001")[0] == 404
    again = svc.call("POST", f"/v1/packages/{PKG}/bundles", body=bundle([record(1)]))
    assert again[0] == 409, again
    s3 = boto3.client("s3", region_name="us-east-1")
    prefix = f"bundles/acme/{PKG}/"

    def texts() -> list[str]:
        versions = s3.list_object_versions(Bucket=svc.env["DATA_BUCKET"], Prefix=prefix).get("Versions", [])
        return [
            s3.get_object(Bucket=svc.env["DATA_BUCKET"], Key=v["Key"], VersionId=v["VersionId"])["Body"]
            .read()
            .decode()
            for v in versions
        ]

    assert any(secret_text in t for t in texts())  # the refused purge left the old version

    monkeypatch.undo()
    status, body = svc.call("DELETE", f"/v1/packages/{PKG}/memories/mem-0001")
    assert status == 200 and body["repeated"] is True, body
    left = texts()
    assert left and not any(secret_text in t for t in left)  # the rewritten bundle only, without it
    assert any("case 2." in t for t in left)
    assert svc.call("GET", f"/v1/packages/{PKG}/log/verify")[1]["status"] == "ok"
