"""An in-process service on moto: resources from template.yaml, the real handlers, API Gateway v2 events.

Used by the handler integration tests (no HTTP; the e2e tests drive the local stack over HTTP).
"""

from __future__ import annotations

import base64
import copy
import importlib.util
import json
import os
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any
from urllib.parse import urlencode

import boto3
from moto import mock_aws

from tests import factories
from tests.factories import memory

ROOT = Path(__file__).resolve().parents[2]
ALL_SCOPES = ["memory:write", "memory:read", "memory:forget", "cartridge:export", "log:read", "admin"]


def load_handler(name: str) -> ModuleType:
    """Import functions/<name>/app.py under a unique module name (each function is its own package)."""
    module_name = f"acx_fn_{name}"
    spec = importlib.util.spec_from_file_location(module_name, ROOT / "functions" / name / "app.py")
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import functions/{name}/app.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    return module


class Context:
    function_name = "api"
    memory_limit_in_mb = 1024
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:api"
    aws_request_id = "req"

    def get_remaining_time_in_millis(self) -> int:
        return 30_000


def api_event(
    method: str,
    path: str,
    *,
    body: bytes | str | dict | None = None,
    tenant: str | None = "acme",
    scopes: list[str] | None = None,
    headers: dict[str, str] | None = None,
    query: dict[str, str] | None = None,
    route: str | None = None,
    claims: dict[str, str] | None = None,
) -> dict[str, Any]:
    """An API Gateway HTTP API (payload 2.0) event as the JWT authorizer would pass it on; ``claims``
    adds to or overrides the token's claims (``sub``, ``agent_id``)."""
    template = json.loads((ROOT / "events" / "api-health.json").read_text())
    event = copy.deepcopy(template)
    raw = (
        json.dumps(body).encode()
        if isinstance(body, dict)
        else body.encode()
        if isinstance(body, str)
        else body
    )
    event["rawPath"] = path
    event["routeKey"] = route or f"{method} {path}"
    event["rawQueryString"] = urlencode(query or {})
    event["queryStringParameters"] = query or None
    event["headers"] = {
        "content-type": "application/json",
        **{k.lower(): v for k, v in (headers or {}).items()},
    }
    event["requestContext"]["http"]["method"] = method
    event["requestContext"]["http"]["path"] = path
    event["requestContext"]["requestId"] = uuid.uuid4().hex
    if tenant is not None:
        event["requestContext"]["authorizer"] = {
            "jwt": {
                "claims": {
                    "sub": "agent-1",
                    "tenant": tenant,
                    "scope": " ".join(scopes or ALL_SCOPES),
                    **(claims or {}),
                },
                "scopes": None,
            }
        }
    else:
        event["requestContext"].pop("authorizer", None)
    if raw is None:
        event["body"] = None
        event["isBase64Encoded"] = False
    else:
        event["body"] = base64.b64encode(raw).decode()
        event["isBase64Encoded"] = True
    return event


class Service:
    """The deployed service, in process: call(method, path, ...) -> (status, json body)."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env = env
        self.api = load_handler("api")
        self.ingest = load_handler("ingest")
        self.verify = load_handler("verify")
        self.export = load_handler("export")

    def call(self, method: str, path: str, **kwargs: Any) -> tuple[int, Any]:
        response = self.api.lambda_handler(api_event(method, path, **kwargs), Context())
        body = response.get("body") or ""
        if response.get("isBase64Encoded"):
            body = base64.b64decode(body).decode()
        try:
            return response["statusCode"], json.loads(body) if body else None
        except json.JSONDecodeError:
            return response["statusCode"], body

    def put_upload(self, upload_id: str, body: bytes, *, package: str, tenant: str = "acme") -> None:
        """What a client does with its presigned URL: PUT the bundle under uploads/ (S3 then notifies SQS)."""
        boto3.client("s3", region_name="us-east-1").put_object(
            Bucket=self.env["UPLOADS_BUCKET"],
            Key=f"uploads/{tenant}/{package}/{upload_id}.json",
            Body=body,
            ContentType="application/json",
        )

    def pump(self, queue_env: str = "INGEST_QUEUE_URL", handler: str = "ingest") -> int:
        """Deliver every waiting SQS message to the handler, as Lambda's event source mapping does."""
        sqs = boto3.client("sqs", region_name="us-east-1")
        url = self.env[queue_env]
        delivered = 0
        while True:
            got = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, AttributeNames=["All"])
            messages = got.get("Messages", [])
            if not messages:
                return delivered
            event = {
                "Records": [
                    {
                        "messageId": m["MessageId"],
                        "receiptHandle": m["ReceiptHandle"],
                        "body": m["Body"],
                        "attributes": {
                            **m.get("Attributes", {}),
                            "ApproximateReceiveCount": "1",
                            "SentTimestamp": "0",
                            "SenderId": "s3",
                            "ApproximateFirstReceiveTimestamp": "0",
                        },
                        "messageAttributes": {},
                        "md5OfBody": m["MD5OfBody"],
                        "eventSource": "aws:sqs",
                        "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:q",
                        "awsRegion": "us-east-1",
                    }
                    for m in messages
                ]
            }
            result = getattr(self, handler).lambda_handler(event, Context())
            failed = {f["itemIdentifier"] for f in result.get("batchItemFailures", [])}
            for m in messages:
                if m["MessageId"] not in failed:
                    sqs.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])
            delivered += len(messages)


def record(i: int, **over: Any) -> dict[str, Any]:
    """A valid portable memory record ``mem-<i>``; tests override the fields they assert on."""
    fields: dict[str, Any] = {
        "title": f"Lesson {i} about retries",
        "summary": f"Back off with jitter, case {i}.",
        "repoLabel": "platform",
        "projectLabel": "ingest",
        "timestamp": "2026-03-14T09:21:00Z",
        "impact": "negative",
        "xpAwarded": i,
        "tags": ["retries"],
    }
    return memory(f"mem-{i:04d}", **fields | over)


bundle = factories.bundle


def start_service(parameters: dict[str, str] | None = None) -> Iterator[Service]:
    """mock_aws as shipped (plus Ed25519 KMS keys, for this service only) + resources from
    template.yaml + env for the handlers; yields a Service."""
    from acx.usecases.deps import reset
    from tests.integration.moto_ed25519 import ed25519_kms
    from tests.integration.moto_resources import create_from_template

    saved = dict(os.environ)
    with mock_aws(), ed25519_kms():
        session = boto3.Session(region_name="us-east-1")
        env = create_from_template(ROOT / "template.yaml", session, parameters=parameters)
        os.environ.update(env)
        os.environ["POWERTOOLS_METRICS_DISABLED"] = "true"
        reset()
        try:
            yield Service(env)
        finally:
            reset()
            os.environ.clear()
            os.environ.update(saved)


def scan_everything(needle: str) -> list[str]:
    """Every place (table item, S3 object version) holding ``needle`` — for 'nowhere' assertions."""
    found: list[str] = []
    ddb = boto3.client("dynamodb", region_name="us-east-1")
    for table in ddb.list_tables()["TableNames"]:
        for page in ddb.get_paginator("scan").paginate(TableName=table):
            for item in page["Items"]:
                if _holds(item, needle):
                    found.append(
                        f"dynamodb:{table}:{item.get('pk', {}).get('S')}:{item.get('sk', {}).get('S')}"
                    )
    s3 = boto3.client("s3", region_name="us-east-1")
    for bucket in s3.list_buckets()["Buckets"]:
        name = bucket["Name"]
        for page in s3.get_paginator("list_object_versions").paginate(Bucket=name):
            for version in page.get("Versions", []):
                data = s3.get_object(Bucket=name, Key=version["Key"], VersionId=version["VersionId"])[
                    "Body"
                ].read()
                if _bytes_hold(data, needle):
                    found.append(f"s3:{name}/{version['Key']}@{version['VersionId']}")
    return found


def _holds(value: Any, needle: str) -> bool:
    if isinstance(value, dict):
        return any(_holds(v, needle) for v in value.values())
    if isinstance(value, list):
        return any(_holds(v, needle) for v in value)
    if isinstance(value, bytes | bytearray):
        return _bytes_hold(bytes(value), needle)
    return needle in str(value)


def _bytes_hold(data: bytes, needle: str) -> bool:
    import sqlite3
    import tempfile
    import zlib

    if needle.encode() in data:
        return True
    try:
        if needle.encode() in zlib.decompress(data):
            return True
    except zlib.error:
        pass
    if data[:16] == b"SQLite format 3\x00":
        with tempfile.NamedTemporaryFile(suffix=".acx") as tmp:
            tmp.write(data)
            tmp.flush()
            con = sqlite3.connect(tmp.name)
            try:
                for (table,) in con.execute("SELECT name FROM sqlite_master WHERE type='table'").fetchall():
                    for row in con.execute(f'SELECT * FROM "{table}"'):  # noqa: S608 - table names from the file
                        if any(_holds(cell, needle) for cell in row):
                            return True
            finally:
                con.close()
    return False
