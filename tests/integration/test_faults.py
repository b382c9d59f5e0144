"""Injected AWS faults against the real handlers on moto: clean 503s, safe retries, no duplicates.

Faults are raised from ``BaseClient._make_api_call`` for one (service, operation[, predicate]): that is
ABOVE botocore's own retries (standard mode, 5 attempts), so each injected fault stands for a fault
that outlived them. Expectations for every fault:

* the request succeeds, or fails with 503 + ``Retry-After`` and ``{"error": {code, message}}`` (no trace);
* repeating the same request afterwards succeeds and never duplicates (log grows once, records once);
* SQS redelivery of the same S3 notification ingests once; a message that keeps failing is reported
  in ``batchItemFailures`` (so SQS redrives it to the DLQ) and logged by reason, without content.

Test names state the fault and its outcome.
"""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import boto3
import pytest
from botocore.client import BaseClient
from botocore.exceptions import ClientError, ReadTimeoutError

from tests.integration import service
from tests.integration.service import Context, Service, api_event, bundle, start_service

PKG = "fault-notes"
MARKER = "Quokka-lesson-marker-5521"


def record(i: int, **over: Any) -> dict[str, Any]:
    return service.record(i, **{"summary": f"{MARKER} case {i}: retry.", **over})


# ----------------------------------------------------------------------------------------- injection


@dataclass
class Rule:
    service: str
    operation: str
    error: Callable[[str], Exception]
    times: int
    when: Callable[[dict[str, Any]], bool] | None = None
    after_call: bool = False  # perform the call, then raise (the request landed, the answer was lost)
    hits: list[str] = field(default_factory=list)


class Faults:
    """Patch ``BaseClient._make_api_call``: the next ``times`` matching calls raise ``error``."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.rules: list[Rule] = []
        original = BaseClient._make_api_call
        rules = self.rules

        def fake(client: Any, operation_name: str, api_params: dict[str, Any]) -> Any:
            service = client.meta.service_model.service_name
            for rule in rules:
                if (
                    rule.times > 0
                    and rule.service == service
                    and rule.operation == operation_name
                    and (rule.when is None or rule.when(api_params))
                ):
                    rule.times -= 1
                    rule.hits.append(operation_name)
                    if rule.after_call:
                        original(client, operation_name, api_params)
                    raise rule.error(operation_name)
            return original(client, operation_name, api_params)

        monkeypatch.setattr(BaseClient, "_make_api_call", fake)

    def add(
        self,
        service: str,
        operation: str,
        error: Callable[[str], Exception],
        *,
        times: int = 1,
        when: Callable[[dict[str, Any]], bool] | None = None,
        after_call: bool = False,
    ) -> Rule:
        rule = Rule(service, operation, error, times, when, after_call)
        self.rules.append(rule)
        return rule


def aws_error(code: str, status: int = 400) -> Callable[[str], Exception]:
    def make(operation: str) -> Exception:
        return ClientError(
            {"Error": {"Code": code, "Message": "injected"}, "ResponseMetadata": {"HTTPStatusCode": status}},
            operation,
        )

    return make


def read_timeout(_operation: str) -> Exception:
    return ReadTimeoutError(endpoint_url="https://dynamodb.us-east-1.amazonaws.com/")


# ----------------------------------------------------------------------------------------- fixtures


@pytest.fixture
def svc() -> Iterator[Service]:
    yield from start_service()


@pytest.fixture
def faults(monkeypatch: pytest.MonkeyPatch, svc: Service) -> Faults:
    return Faults(monkeypatch)


class Captured(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def service_log() -> Iterator[Captured]:
    from acx.observability import SERVICE, logger

    handler = Captured()
    target = logging.getLogger(SERVICE)
    target.addHandler(handler)
    formatter = logger.registered_handler.formatter
    handler.setFormatter(formatter)
    try:
        yield handler
    finally:
        target.removeHandler(handler)


def call(svc: Service, method: str, path: str, **kwargs: Any) -> tuple[int, dict[str, str], Any]:
    """(status, headers lower-cased, JSON body) straight from the api handler."""
    response = svc.api.lambda_handler(api_event(method, path, **kwargs), Context())
    body = response.get("body") or ""
    if response.get("isBase64Encoded"):
        body = base64.b64decode(body).decode()
    headers = {k.lower(): v for k, v in (response.get("headers") or {}).items()}
    return response["statusCode"], headers, json.loads(body) if body else None


def assert_clean_503(status: int, headers: dict[str, str], body: Any) -> None:
    assert status == 503, body
    assert headers.get("retry-after") == "1"
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message"}
    assert body["error"]["code"] == "unavailable"
    text = json.dumps(body)
    assert "Traceback" not in text and 'File "' not in text and MARKER not in text


def log_size(svc: Service) -> int:
    status, _, body = call(svc, "GET", f"/v1/packages/{PKG}/log")
    return int(body["size"]) if status == 200 else 0


def ids(svc: Service) -> list[str]:
    status, _, body = call(svc, "GET", f"/v1/packages/{PKG}/memories", query={"limit": "200"})
    return [r["id"] for r in body["records"]] if status == 200 else []


def verified(svc: Service) -> dict[str, Any]:
    status, _, body = call(svc, "GET", f"/v1/packages/{PKG}/log/verify")
    assert status == 200
    return body  # type: ignore[no-any-return]


def post(svc: Service, records: list[dict[str, Any]], **kw: Any) -> tuple[int, dict[str, str], Any]:
    return call(svc, "POST", f"/v1/packages/{PKG}/bundles", body=bundle(records), **kw)


def bundle_keys(svc: Service) -> list[str]:
    s3 = boto3.client("s3", region_name="us-east-1")
    got = s3.list_objects_v2(Bucket=svc.env["DATA_BUCKET"], Prefix=f"bundles/acme/{PKG}/")
    return [o["Key"] for o in got.get("Contents", [])]


def cartridge_keys(svc: Service) -> list[str]:
    s3 = boto3.client("s3", region_name="us-east-1")
    got = s3.list_objects_v2(Bucket=svc.env["CARTRIDGES_BUCKET"], Prefix=f"cartridges/acme/{PKG}/")
    return [o["Key"] for o in got.get("Contents", [])]


def retry_after_fault(svc: Service, records: list[dict[str, Any]], size_before: int) -> None:
    """The caller's retry: 201, the records land once, the log grew by exactly one entry per record."""
    status, _, body = post(svc, records)
    assert status == 201, body
    assert log_size(svc) == size_before + len(records)
    assert sorted(ids(svc)) == sorted({*ids(svc)}) and {r["id"] for r in records} <= set(ids(svc))
    assert verified(svc)["status"] == "ok"


# ----------------------------------------------------------------------------------------- DynamoDB


def test_ddb_throttle_on_the_log_claim_write_is_503_writes_nothing_and_the_retry_appends_once(
    svc: Service, faults: Faults
) -> None:
    rule = faults.add("dynamodb", "TransactWriteItems", aws_error("ProvisionedThroughputExceededException"))
    assert_clean_503(*post(svc, [record(1), record(2)]))
    assert rule.hits and log_size(svc) == 0 and ids(svc) == []
    retry_after_fault(svc, [record(1), record(2)], 0)


def test_ddb_throttle_on_the_idempotency_table_is_503_and_the_keyed_retry_succeeds_once(
    svc: Service, faults: Faults
) -> None:
    table = svc.env["IDEMPOTENCY_TABLE"]
    faults.add(
        "dynamodb", "PutItem", aws_error("ThrottlingException"), when=lambda p: p.get("TableName") == table
    )
    headers = {"Idempotency-Key": "k-throttled"}
    assert_clean_503(*post(svc, [record(1)], headers=headers))  # was a 500: the error came wrapped
    status, _, body = post(svc, [record(1)], headers=headers)
    assert status == 201 and body["accepted"] == 1
    assert post(svc, [record(1)], headers=headers)[2] == body  # the stored answer, nothing written
    assert log_size(svc) == 1


def test_ddb_throttle_on_a_read_is_503_for_recall_and_for_ingest_and_the_retries_succeed(
    svc: Service, faults: Faults
) -> None:
    assert post(svc, [record(1)])[0] == 201
    faults.add("dynamodb", "Query", aws_error("ThrottlingException"))
    assert_clean_503(*call(svc, "GET", f"/v1/packages/{PKG}/memories"))
    assert ids(svc) == ["mem-0001"]
    faults.add("dynamodb", "BatchGetItem", aws_error("ProvisionedThroughputExceededException"))
    assert_clean_503(*post(svc, [record(2)]))
    assert log_size(svc) == 1
    retry_after_fault(svc, [record(2)], 1)


def test_ddb_read_timeout_on_the_head_read_is_503_and_the_retry_appends_once(
    svc: Service, faults: Faults
) -> None:
    assert post(svc, [record(1)])[0] == 201
    faults.add(
        "dynamodb", "GetItem", read_timeout, when=lambda p: p.get("Key", {}).get("sk", {}).get("S") == "head"
    )
    assert_clean_503(*post(svc, [record(2), record(3)]))
    assert log_size(svc) == 1
    retry_after_fault(svc, [record(2), record(3)], 1)


def test_ddb_read_timeout_after_the_claim_landed_is_503_retry_lands_records_once_but_log_grows_twice(
    svc: Service, faults: Faults
) -> None:
    """An ambiguous timeout: the claim transaction committed (receipt + head) but its answer was lost.

    Outcome today: 503; the retry waits out the dead writer's lease, re-appends (the first receipt's
    entries stay as reported orphans: the log grows twice), records land once and the log verifies.
    The lease is shortened here; in the service the retry waits up to ``lease_seconds`` (30 s).
    """
    from acx.usecases.deps import deps

    assert post(svc, [record(1)])[0] == 201
    deps().log.lease_seconds = 7.0  # with lease_margin 5 s: rows must start landing within 2 s
    faults.add("dynamodb", "TransactWriteItems", read_timeout, after_call=True)
    assert_clean_503(*post(svc, [record(2)]))
    assert log_size(svc) == 2 and ids(svc) == ["mem-0001"]  # receipted, row not landed
    status, _, body = post(svc, [record(2)])
    assert status == 201, body
    assert sorted(ids(svc)) == ["mem-0001", "mem-0002"]
    assert log_size(svc) == 3  # NOT 2: the lost-answer receipt is an orphan entry
    result = verified(svc)
    assert result["status"] == "ok", result


# ----------------------------------------------------------------------------------------- KMS


def test_kms_sign_failure_during_checkpoint_signing_is_503_writes_nothing_and_the_retry_appends_once(
    svc: Service, faults: Faults
) -> None:
    assert post(svc, [record(1)])[0] == 201
    faults.add("kms", "Sign", aws_error("KMSInternalException", 500))
    assert_clean_503(*post(svc, [record(2)]))
    assert log_size(svc) == 1 and ids(svc) == ["mem-0001"]
    retry_after_fault(svc, [record(2)], 1)


def test_kms_sign_failure_during_export_is_503_leaves_no_cartridge_and_the_retry_exports_one(
    svc: Service, faults: Faults
) -> None:
    assert post(svc, [record(1), record(2)])[0] == 201
    faults.add("kms", "Sign", aws_error("KMSInternalException", 500))
    assert_clean_503(*call(svc, "POST", f"/v1/packages/{PKG}/cartridges", body={}))
    assert cartridge_keys(svc) == []
    status, _, body = call(svc, "POST", f"/v1/packages/{PKG}/cartridges", body={})
    assert status == 201 and body["status"] == "ready"
    assert cartridge_keys(svc) == [f"cartridges/acme/{PKG}/{body['cartridgeId']}.acx"]
    assert call(svc, "GET", f"/v1/packages/{PKG}/cartridges/{body['cartridgeId']}")[0] == 200
    assert log_size(svc) == 2


# ----------------------------------------------------------------------------------------- S3


def _is_bundle_put(params: dict[str, Any]) -> bool:
    return str(params.get("Key", "")).startswith("bundles/")


def test_s3_failure_on_canonical_bundle_after_append_is_503_and_retry_is_unchanged_and_writes_it(
    svc: Service, faults: Faults
) -> None:
    faults.add("s3", "PutObject", aws_error("InternalError", 500), when=_is_bundle_put)
    assert_clean_503(*post(svc, [record(1), record(2)]))
    # The append came first: the records are in the log although the answer was 503.
    assert log_size(svc) == 2 and sorted(ids(svc)) == ["mem-0001", "mem-0002"]
    assert bundle_keys(svc) == []
    status, _, body = post(svc, [record(1), record(2)])
    assert (
        status == 201 and body["unchanged"] == 2 and body["accepted"] == 0 and body["log"]["fromSeq"] is None
    )
    assert log_size(svc) == 2 and len(bundle_keys(svc)) == 1  # the retry wrote the canonical bundle
    assert verified(svc)["status"] == "ok"


def test_s3_slowdown_on_canonical_bundle_with_idempotency_key_is_503_not_cached_and_retry_succeeds(
    svc: Service, faults: Faults
) -> None:
    faults.add("s3", "PutObject", aws_error("SlowDown", 503), when=_is_bundle_put)
    headers = {"Idempotency-Key": "k-slowdown"}
    assert_clean_503(*post(svc, [record(1)], headers=headers))
    status, _, body = post(svc, [record(1)], headers=headers)  # not the cached 503
    assert status == 201 and body["unchanged"] == 1, body
    assert post(svc, [record(1)], headers=headers)[2] == body  # now the stored answer
    assert log_size(svc) == 1 and ids(svc) == ["mem-0001"] and len(bundle_keys(svc)) == 1


def test_s3_failure_uploading_the_cartridge_is_503_not_500_and_the_retry_exports_one(
    svc: Service, faults: Faults
) -> None:
    assert post(svc, [record(1)])[0] == 201
    faults.add(
        "s3",
        "PutObject",
        aws_error("SlowDown", 503),
        when=lambda p: str(p.get("Key", "")).startswith("cartridges/"),
    )
    # boto3's upload_file wraps the ClientError in S3UploadFailedError: was a 500 "internal".
    assert_clean_503(*call(svc, "POST", f"/v1/packages/{PKG}/cartridges", body={}))
    assert cartridge_keys(svc) == []
    status, _, body = call(svc, "POST", f"/v1/packages/{PKG}/cartridges", body={})
    assert status == 201 and body["status"] == "ready"
    assert len(cartridge_keys(svc)) == 1


def test_cartridge_that_landed_before_its_job_update_failed_is_still_purged_by_a_forget(
    svc: Service, faults: Faults
) -> None:
    from acx.usecases.cartridges import cartridge_key

    assert post(svc, [record(1), record(2)])[0] == 201
    jobs_table = svc.env["JOBS_TABLE"]
    faults.add(
        "dynamodb",
        "UpdateItem",
        aws_error("ProvisionedThroughputExceededException"),
        when=lambda p: (
            p.get("TableName") == jobs_table
            and ":status" in p.get("ExpressionAttributeValues", {})
            and p["ExpressionAttributeValues"][":status"] == {"S": "ready"}
        ),
    )
    assert_clean_503(*call(svc, "POST", f"/v1/packages/{PKG}/cartridges", body={}))
    assert len(cartridge_keys(svc)) == 1  # uploaded, but the job never became ready
    pending = [j for j in _jobs(svc) if j["status"] == "pending"]
    assert len(pending) == 1 and pending[0]["key"] == cartridge_key("acme", PKG, pending[0]["jobId"])
    assert call(svc, "DELETE", f"/v1/packages/{PKG}/memories/mem-0001")[0] == 200
    assert cartridge_keys(svc) == []  # the forget found the object through the job's key


def _jobs(svc: Service) -> list[dict[str, Any]]:
    from acx.usecases.deps import deps

    return deps().jobs.list("acme", PKG, "export")


# ----------------------------------------------------------------------------------------- SQS ingest


def _upload(svc: Service, records: list[dict[str, Any]]) -> tuple[str, dict[str, Any]]:
    """Create an upload, PUT the bundle, and return (upload id, the one SQS message S3 sent)."""
    status, _, up = call(svc, "POST", f"/v1/packages/{PKG}/uploads", body={})
    assert status == 201
    svc.put_upload(up["uploadId"], json.dumps(bundle(records)).encode(), package=PKG)
    sqs = boto3.client("sqs", region_name="us-east-1")
    got = sqs.receive_message(
        QueueUrl=svc.env["INGEST_QUEUE_URL"], MaxNumberOfMessages=10, AttributeNames=["All"]
    )
    messages = [m for m in got.get("Messages", []) if "ObjectCreated" in m["Body"]]
    assert len(messages) == 1
    return up["uploadId"], messages[0]


def _sqs_event(message: dict[str, Any], receive_count: int = 1) -> dict[str, Any]:
    return {
        "Records": [
            {
                "messageId": message["MessageId"],
                "receiptHandle": message["ReceiptHandle"],
                "body": message["Body"],
                "attributes": {
                    "ApproximateReceiveCount": str(receive_count),
                    "SentTimestamp": "0",
                    "SenderId": "s3",
                    "ApproximateFirstReceiveTimestamp": "0",
                },
                "messageAttributes": {},
                "md5OfBody": message["MD5OfBody"],
                "eventSource": "aws:sqs",
                "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:ingest",
                "awsRegion": "us-east-1",
            }
        ]
    }


def test_sqs_redelivery_of_the_same_s3_notification_twice_ingests_once(svc: Service) -> None:
    upload_id, message = _upload(svc, [record(1), record(2)])
    for n in (1, 2, 3):  # the first delivery and two redeliveries of the same message
        result = svc.ingest.lambda_handler(_sqs_event(message, n), Context())
        assert result == {"batchItemFailures": []}
    _status, _, job = call(svc, "GET", f"/v1/packages/{PKG}/uploads/{upload_id}")
    assert job["status"] == "ingested" and job["summary"]["accepted"] == 2
    assert log_size(svc) == 2 and sorted(ids(svc)) == ["mem-0001", "mem-0002"]


def test_sqs_message_whose_canonical_bundle_write_fails_is_redelivered_and_then_ingested_once(
    svc: Service, faults: Faults
) -> None:
    upload_id, message = _upload(svc, [record(1)])
    faults.add("s3", "PutObject", aws_error("InternalError", 500), when=_is_bundle_put)
    result = svc.ingest.lambda_handler(_sqs_event(message, 1), Context())
    assert result == {"batchItemFailures": [{"itemIdentifier": message["MessageId"]}]}
    assert call(svc, "GET", f"/v1/packages/{PKG}/uploads/{upload_id}")[2]["status"] == "pending"
    result = svc.ingest.lambda_handler(_sqs_event(message, 2), Context())
    assert result == {"batchItemFailures": []}
    assert call(svc, "GET", f"/v1/packages/{PKG}/uploads/{upload_id}")[2]["status"] == "ingested"
    assert log_size(svc) == 1 and ids(svc) == ["mem-0001"] and len(bundle_keys(svc)) == 1


def test_sqs_message_that_keeps_failing_is_in_batch_item_failures_logged_by_reason_without_content_then_dlq(
    svc: Service, faults: Faults, service_log: Captured
) -> None:
    upload_id, message = _upload(svc, [record(1)])
    uploads_bucket = svc.env["UPLOADS_BUCKET"]
    faults.add(
        "s3",
        "GetObject",
        aws_error("InternalError", 500),
        times=1000,
        when=lambda p: p.get("Bucket") == uploads_bucket,
    )
    sqs = boto3.client("sqs", region_name="us-east-1")
    url = svc.env["INGEST_QUEUE_URL"]
    for attempt in range(1, 4):  # maxReceiveCount 3 in template.yaml
        result = svc.ingest.lambda_handler(_sqs_event(message, attempt), Context())
        assert result == {"batchItemFailures": [{"itemIdentifier": message["MessageId"]}]}
        sqs.change_message_visibility(
            QueueUrl=url, ReceiptHandle=message["ReceiptHandle"], VisibilityTimeout=0
        )
        got = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=1, AttributeNames=["All"])
        if not got.get("Messages"):
            break
        message = got["Messages"][0]
    dlq = svc.env.get("INGEST_DLQ_URL")
    if dlq:  # moto applies the redrive policy on receive
        moved = sqs.receive_message(QueueUrl=dlq, MaxNumberOfMessages=1).get("Messages", [])
        assert moved and "ObjectCreated" in moved[0]["Body"]
    failed = [r for r in service_log.records if r.getMessage() == "upload failed"]
    assert len(failed) >= 3
    line = service_log.format(failed[0])
    assert "ClientError:InternalError" in line and upload_id in line
    assert MARKER not in line and "Traceback" not in line
    assert call(svc, "GET", f"/v1/packages/{PKG}/uploads/{upload_id}")[2]["status"] == "pending"
    assert log_size(svc) == 0
