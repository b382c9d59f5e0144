"""The local stack keeps the tenant boundary AWS keeps for presigned URLs: the gateway's S3 front
checks the SigV4 query signature (object key, content type, method), and the expiry, before a request
reaches moto (which checks neither), and everything listens on loopback only."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from typing import Any
from urllib.parse import urlsplit

import pytest

from bench.common import bundle_bytes, generate_records

pytestmark = pytest.mark.e2e


def _call(stack: Any, method: str, path: str, tenant: str, body: bytes | None = None) -> tuple[int, Any]:
    headers = {"Authorization": f"Bearer {stack.token(tenant)}", "Content-Type": "application/json"}
    req = urllib.request.Request(stack.endpoint + path, data=body, method=method, headers=headers)  # noqa: S310
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:  # noqa: S310 - local endpoint
            return resp.status, json.loads(resp.read() or b"null")
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"null")


def _put(url: str, body: bytes, content_type: str | None = "application/json") -> tuple[int, bytes]:
    headers = {"Content-Type": content_type} if content_type else {}
    req = urllib.request.Request(url, data=body, method="PUT", headers=headers)  # noqa: S310
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:  # noqa: S310 - local endpoint
            return resp.status, resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def _upload(stack: Any, tenant: str, package: str) -> dict[str, Any]:
    status, up = _call(stack, "POST", f"/v1/packages/{package}/uploads", tenant, b"{}")
    assert status == 201, up
    assert urlsplit(up["url"]).netloc == urlsplit(stack.endpoint).netloc  # through the gateway
    return dict(up)


def _status(stack: Any, tenant: str, package: str, upload_id: str) -> str:
    status, doc = _call(stack, "GET", f"/v1/packages/{package}/uploads/{upload_id}", tenant)
    assert status == 200, doc
    return str(doc["status"])


def test_presigned_url_is_bound_to_its_key_and_content_type(local_stack: Any) -> None:
    mine = _upload(local_stack, "bound-a", "pa")
    theirs = _upload(local_stack, "bound-b", "pb")
    body = bundle_bytes(generate_records(5, seed=11, prefix="bound"))
    # My URL replayed against the other tenant's pending upload key.
    their_path = urlsplit(theirs["url"]).path
    forged = mine["url"].replace(urlsplit(mine["url"]).path, their_path)
    status, answer = _put(forged, body)
    assert status == 403 and b"SignatureDoesNotMatch" in answer
    # Another content type than the one it was issued for, or none.
    assert _put(mine["url"], body, "text/plain")[0] == 403
    assert _put(mine["url"], body, None)[0] == 403
    # No signature at all.
    plain = mine["url"].split("?")[0]
    status, answer = _put(plain, body)
    assert status == 403 and b"AccessDenied" in answer
    local_stack.drain(30)
    assert _status(local_stack, "bound-b", "pb", theirs["uploadId"]) == "pending"
    assert _status(local_stack, "bound-a", "pa", mine["uploadId"]) == "pending"
    # As issued, it works.
    assert _put(mine["url"], body)[0] == 200
    local_stack.drain(60)
    assert _status(local_stack, "bound-a", "pa", mine["uploadId"]) == "ingested"
    assert _status(local_stack, "bound-b", "pb", theirs["uploadId"]) == "pending"


def test_expired_presigned_url_is_refused(local_stack: Any) -> None:
    up = _upload(local_stack, "bound-c", "pc")
    key = urlsplit(up["url"]).path.split("/", 2)[2]
    bucket = urlsplit(up["url"]).path.split("/")[1]
    import boto3
    from botocore.config import Config

    from acx.local.stack import FAKE_CREDENTIALS

    s3 = boto3.client(
        "s3",
        region_name=local_stack.region,
        endpoint_url=local_stack.endpoint,
        aws_access_key_id=FAKE_CREDENTIALS["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=FAKE_CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
        aws_session_token=FAKE_CREDENTIALS["AWS_SESSION_TOKEN"],
        config=Config(signature_version="s3v4", s3={"addressing_style": "path"}),
    )
    short = s3.generate_presigned_url(
        "put_object", Params={"Bucket": bucket, "Key": key, "ContentType": "application/json"}, ExpiresIn=1
    )
    time.sleep(2.1)
    status, answer = _put(short, bundle_bytes(generate_records(2, seed=12)))
    assert status == 403 and b"Request has expired" in answer
    local_stack.drain(30)
    assert _status(local_stack, "bound-c", "pc", up["uploadId"]) == "pending"


def test_everything_listens_on_loopback_only(local_stack: Any) -> None:
    assert urlsplit(local_stack.moto_endpoint).hostname == "127.0.0.1"
    assert urlsplit(local_stack.endpoint).hostname == "127.0.0.1"
    assert local_stack._gateway._server.server_address[0] == "127.0.0.1"
