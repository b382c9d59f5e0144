"""The local stack keeps the tenant boundary AWS keeps for presigned URLs: the gateway's object path
serves only a valid signature (method, bucket, key, content type, expiry) and nothing else, not a
bearer token, not SigV4 headers; every request has a read timeout; everything listens on loopback."""

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
    short = local_stack.backend.presigner.sign("PUT", bucket, key, "application/json", 1).url
    body = bundle_bytes(generate_records(2, seed=12))
    time.sleep(2.1)
    status, answer = _put(short, body)
    assert status == 403 and b"Request has expired" in answer
    local_stack.drain(30)
    assert _status(local_stack, "bound-c", "pc", up["uploadId"]) == "pending"
    assert _put(up["url"], body)[0] == 200  # the control: the URL as issued, unexpired, works


def _raw(stack: Any, request: bytes, timeout: float = 30) -> bytes:
    import socket

    host, port = urlsplit(stack.endpoint).hostname, urlsplit(stack.endpoint).port
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.sendall(request)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
            if b"\r\n\r\n" in answer and b"Connection: close" not in answer:
                break
    return answer


@pytest.mark.parametrize(
    "headers",
    [
        "Authorization: Bearer x",
        "Authorization: AWS4-HMAC-SHA256 Credential=testing/20260101/us-east-1/s3/aws4_request, "
        "SignedHeaders=host, Signature=00",
        "X-Amz-Security-Token: testing",
    ],
)
def test_the_object_path_serves_no_credential_but_a_presigned_signature(
    local_stack: Any, headers: str
) -> None:
    """A stored bundle cannot be listed, read, overwritten or deleted with any header."""
    stored = _upload(local_stack, "bearer-a", "pa")
    body = bundle_bytes(generate_records(3, seed=21, prefix="bearer"))
    assert _put(stored["url"], body)[0] == 200  # the control: the presigned PUT is served
    local_stack.drain(60)
    path = urlsplit(stored["url"]).path
    bucket = path.split("/")[1]
    uploads = local_stack.backend.buckets[bucket]
    key = path.split("/", 2)[2]
    before = list(uploads.versions(key))
    for method, target, payload in (
        ("GET", f"/{bucket}/?list-type=2", b""),
        ("GET", path, b""),
        ("HEAD", path, b""),
        ("PUT", path, b"overwritten"),
        ("DELETE", path, b""),
        ("POST", f"/{bucket}/?delete", b"<Delete/>"),
    ):
        answer = _raw(
            local_stack,
            f"{method} {target} HTTP/1.1\r\nHost: x\r\n{headers}\r\n"
            f"Content-Length: {len(payload)}\r\nConnection: close\r\n\r\n".encode()
            + payload,
        )
        assert answer.startswith(b"HTTP/1.1 403"), (method, target, answer[:200])
    assert list(uploads.versions(key)) == before  # nothing read into a new version, nothing deleted
    # A presigned GET reads an object; the same path with the header alone does not.
    data = local_stack.deps.settings.data_bucket
    local_stack.backend.buckets[data].put("probe/bearer.bin", b"stored bytes")
    signed = local_stack.backend.presigner.sign("GET", data, "probe/bearer.bin", "", 60).url
    with urllib.request.urlopen(signed, timeout=60) as resp:  # noqa: S310 - the local gateway
        assert resp.read() == b"stored bytes"
    answer = _raw(
        local_stack,
        f"GET /{data}/probe/bearer.bin HTTP/1.1\r\nHost: x\r\n{headers}\r\n"
        "Connection: close\r\n\r\n".encode(),
    )
    assert answer.startswith(b"HTTP/1.1 403") and b"stored bytes" not in answer


def test_a_stalled_body_gets_408_on_every_path(local_stack: Any) -> None:
    from acx.local.gateway import Gateway

    up = _upload(local_stack, "stall-a", "pa")
    target = up["url"].split(urlsplit(up["url"]).netloc, 1)[1]
    gateway: Gateway = local_stack._gateway
    old = gateway.read_timeout
    gateway.read_timeout = 0.5
    try:
        for request in (
            f"PUT {target} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            "Content-Length: 1000\r\n\r\n{}".encode(),
            b"POST /v1/packages/p/bundles HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{}",
        ):
            started = time.monotonic()
            answer = _raw(local_stack, request)
            assert answer.startswith(b"HTTP/1.1 408") and time.monotonic() - started < 10, answer[:200]
    finally:
        gateway.read_timeout = old
    local_stack.drain(30)
    assert _status(local_stack, "stall-a", "pa", up["uploadId"]) == "pending"  # nothing was stored
    assert _put(up["url"], bundle_bytes(generate_records(2, seed=22)))[0] == 200  # the control


def test_everything_listens_on_loopback_only(local_stack: Any) -> None:
    assert urlsplit(local_stack.endpoint).hostname == "127.0.0.1"
    assert local_stack._gateway._server.server_address[0] == "127.0.0.1"
