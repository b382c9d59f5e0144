"""The local gateway must hand the handler what API Gateway would, and refuse what it would refuse."""

from __future__ import annotations

import base64
import io
import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from acx.local.gateway import (
    MAX_PAYLOAD_BYTES,
    Gateway,
    build_event,
    match_route,
    shape_response,
)
from acx.local.jwt_issuer import DevIssuer


class Recorder:
    """A fake api handler: records every (event, context) and returns a configurable result."""

    def __init__(self) -> None:
        self.calls: list[tuple[dict[str, Any], Any]] = []
        self.result: Any = {"statusCode": 200, "headers": {"content-type": "application/json"}, "body": "{}"}
        self.raise_exc: Exception | None = None

    def __call__(self, event: dict[str, Any], context: Any) -> Any:
        self.calls.append((event, context))
        if self.raise_exc:
            raise self.raise_exc
        return self.result


@pytest.fixture(scope="module")
def issuer() -> DevIssuer:
    return DevIssuer()


@pytest.fixture()
def gw(issuer: DevIssuer) -> Iterator[tuple[Gateway, Recorder, io.StringIO]]:
    rec = Recorder()
    log = io.StringIO()
    with Gateway(rec, issuer, log_stream=log) as g:
        yield g, rec, log


def call(
    url: str, method: str = "GET", body: bytes | None = None, headers: dict[str, str] | None = None
) -> tuple[int, dict[str, str], bytes]:
    req = urllib.request.Request(url, data=body, method=method, headers=headers or {})  # noqa: S310
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:  # noqa: S310
            return resp.status, dict(resp.headers.items()), resp.read()
    except urllib.error.HTTPError as err:
        return err.code, dict(err.headers.items()), err.read()


def test_routes_match_api_templates() -> None:
    hit = match_route("GET", "/v1/packages/my-pkg/memories")
    assert hit and hit[0].key == "GET /v1/packages/{pkg}/memories" and hit[1] == {"pkg": "my-pkg"}
    hit = match_route("DELETE", "/v1/packages/p/memories/rec%2F1")
    assert hit and hit[0].key == "DELETE /v1/packages/{pkg}/memories/{id}" and hit[1]["id"] == "rec/1"
    hit = match_route("GET", "/v1/packages/p/log/proof/inclusion")
    assert hit and hit[0].scope == "log:read"
    assert match_route("PUT", "/v1/packages/p/memories") is None
    assert match_route("GET", "/v1/packages/p/memories/x/y") is None
    assert match_route("GET", "/v1/health")[0].scope is None  # type: ignore[index]


def test_build_event_shape() -> None:
    ev = build_event(
        method="GET",
        raw_path="/v1/packages/p/memories",
        raw_query="tier=rom&tag=a&tag=b",
        headers=[("Host", "h"), ("X-Multi", "1"), ("x-multi", "2"), ("Cookie", "a=1; b=2")],
        body=b"",
        source_ip="127.0.0.1",
        route_key="GET /v1/packages/{pkg}/memories",
        path_parameters={"pkg": "p"},
        claims={"tenant": "t", "exp": 5},
        scopes=["memory:read"],
        now=1_700_000_000.5,
    )
    assert ev["version"] == "2.0"
    assert ev["headers"] == {"host": "h", "x-multi": "1,2"}
    assert ev["cookies"] == ["a=1", "b=2"]
    assert ev["queryStringParameters"] == {"tier": "rom", "tag": "a,b"}
    assert ev["requestContext"]["timeEpoch"] == 1_700_000_000_500
    assert ev["requestContext"]["authorizer"]["jwt"] == {
        "claims": {"tenant": "t", "exp": "5"},
        "scopes": ["memory:read"],
    }
    assert "body" not in ev and ev["isBase64Encoded"] is False


def test_binary_body_is_base64() -> None:
    ev = build_event(
        method="POST",
        raw_path="/",
        raw_query="",
        headers=[],
        body=b"\xff\x00",
        source_ip="1.2.3.4",
        route_key="POST /",
    )
    assert ev["isBase64Encoded"] is True and base64.b64decode(ev["body"]) == b"\xff\x00"
    assert "pathParameters" not in ev and "queryStringParameters" not in ev


def test_shape_response_full_and_shorthand() -> None:
    status, headers, body = shape_response(
        {
            "statusCode": 201,
            "headers": {"x-a": "1"},
            "cookies": ["c=1"],
            "body": base64.b64encode(b"\x00\x01").decode(),
            "isBase64Encoded": True,
        }
    )
    assert status == 201 and body == b"\x00\x01"
    assert ("x-a", "1") in headers and ("Set-Cookie", "c=1") in headers
    assert shape_response({"hello": "world"}) == (
        200,
        [("Content-Type", "application/json")],
        b'{"hello": "world"}',
    )
    assert shape_response("hi")[2] == b'"hi"'


def test_public_route_needs_no_token(gw: Any) -> None:
    g, rec, log = gw
    rec.result = {"statusCode": 200, "body": json.dumps({"status": "ok"})}
    status, _, body = call(g.url + "/v1/health")
    assert status == 200 and json.loads(body) == {"status": "ok"}
    event, ctx = rec.calls[-1]
    assert event["routeKey"] == "GET /v1/health"
    assert "authorizer" not in event["requestContext"]
    assert ctx.aws_request_id and ctx.get_remaining_time_in_millis() > 0
    assert ctx.invoked_function_arn.endswith(":function:acx-api")
    assert "GET /v1/health 200" in log.getvalue()


def test_protected_route_without_or_with_bad_token_is_401(gw: Any, issuer: DevIssuer) -> None:
    g, rec, _ = gw
    url = g.url + "/v1/packages/p/memories"
    for headers, code in (
        ({}, "unauthorized"),
        ({"Authorization": "Bearer nope"}, "unauthorized"),
        ({"Authorization": "Basic abc"}, "unauthorized"),
        ({"Authorization": "Bearer " + DevIssuer().issue("t")}, "unauthorized"),
        ({"Authorization": "Bearer " + issuer.issue("t", ttl=1, now=1_000_000)}, "token_expired"),
    ):
        status, _, body = call(url, headers=headers)
        error = json.loads(body)["error"]
        assert status == 401 and error["code"] == code and "acx login" in error["message"]
    assert rec.calls == []


def test_non_string_tenant_claim_is_401_before_the_handler(gw: Any, issuer: DevIssuer) -> None:
    import jwt as pyjwt

    g, rec, _ = gw
    for tenant in (True, 7, ["a"], {"x": 1}):
        claims = pyjwt.decode(issuer.issue("t"), options={"verify_signature": False})
        forged = pyjwt.encode(
            {**claims, "tenant": tenant},
            issuer._private,
            algorithm=issuer.algorithm,
            headers={"kid": issuer.kid},
        )
        status, _, body = call(
            g.url + "/v1/packages/p/memories", headers={"Authorization": f"Bearer {forged}"}
        )
        assert status == 401 and json.loads(body)["error"]["code"] == "unauthorized", tenant
    assert rec.calls == []


def test_missing_scope_is_403(gw: Any, issuer: DevIssuer) -> None:
    g, rec, _ = gw
    token = issuer.issue("t", ["memory:read"])
    status, _, body = call(
        g.url + "/v1/packages/p/bundles", "POST", b"{}", {"Authorization": f"Bearer {token}"}
    )
    doc = json.loads(body)
    assert status == 403 and doc["error"]["code"] == "forbidden" and doc["scope"] == "memory:write"
    assert "memory:write" in doc["error"]["message"]
    assert rec.calls == []


def test_authorized_request_reaches_handler_with_claims(gw: Any, issuer: DevIssuer) -> None:
    g, rec, log = gw
    rec.result = {"statusCode": 201, "headers": {"Content-Type": "application/json"}, "body": '{"ok":1}'}
    token = issuer.issue("acme", ["memory:write"], sub="bob")
    payload = json.dumps({"records": ["secret-ish"]}).encode()
    status, headers, body = call(
        g.url + "/v1/packages/pk-1/bundles?x=1",
        "POST",
        payload,
        {"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    assert status == 201 and body == b'{"ok":1}'
    assert headers.get("apigw-requestid")
    event, _ = rec.calls[-1]
    assert event["routeKey"] == "POST /v1/packages/{pkg}/bundles"
    assert event["pathParameters"] == {"pkg": "pk-1"}
    assert event["rawPath"] == "/v1/packages/pk-1/bundles" and event["rawQueryString"] == "x=1"
    assert event["body"] == payload.decode()
    jwt_ctx = event["requestContext"]["authorizer"]["jwt"]
    assert jwt_ctx["claims"]["tenant"] == "acme" and jwt_ctx["claims"]["sub"] == "bob"
    assert jwt_ctx["scopes"] == ["memory:write"]
    assert event["requestContext"]["http"]["method"] == "POST"
    assert event["requestContext"]["requestId"] == headers["apigw-requestid"]
    # access log has no body, no token, no query string
    text = log.getvalue()
    assert "POST /v1/packages/pk-1/bundles 201" in text
    assert "secret-ish" not in text and token not in text and "x=1" not in text


def test_unknown_route_without_a_catch_all_is_the_gateways_404(issuer: DevIssuer) -> None:
    rec = Recorder()
    with Gateway(rec, issuer, log_stream=io.StringIO(), catch_all=False) as g:
        for status, _, body in (call(g.url + "/v2/nothing"), call(g.url + "/v1/health", "POST", b"")):
            assert status == 404 and json.loads(body)["error"]["code"] == "no_such_route"
    assert rec.calls == []


def test_unknown_route_goes_to_the_function_as_default_once_the_token_is_valid(
    gw: Any, issuer: DevIssuer
) -> None:
    """template.yaml's $default route: unmatched requests are authorized (no scope) then handed to the
    function, as API Gateway does; an anonymous or bad token never reaches it."""
    g, rec, _ = gw
    for headers in ({}, {"Authorization": "Bearer not-a-jwt"}):
        status, _, body = call(g.url + "/v2/nothing", headers=headers)
        assert status == 401 and json.loads(body)["error"]["code"] == "unauthorized"
    assert rec.calls == []
    token = issuer.issue("acme", [], sub="bob")  # no scope at all
    rec.result = {"statusCode": 404, "headers": {"content-type": "application/json"}, "body": "{}"}
    status, _, _ = call(g.url + "/v1/health", "POST", b"", {"Authorization": f"Bearer {token}"})
    assert status == 404
    event, _ = rec.calls[-1]
    assert event["routeKey"] == "$default" and "pathParameters" not in event
    assert event["requestContext"]["authorizer"]["jwt"]["claims"]["tenant"] == "acme"


def test_handler_exception_is_500_without_message_leak(gw: Any) -> None:
    g, rec, log = gw
    rec.raise_exc = RuntimeError("AKIA-SECRET-VALUE")
    status, _, body = call(g.url + "/v1/health")
    assert status == 500 and json.loads(body) == {"error": {"code": "internal", "message": "internal error"}}
    assert "AKIA-SECRET-VALUE" not in log.getvalue()
    assert "RuntimeError" in log.getvalue()


def test_payload_over_10mb_is_413(gw: Any, issuer: DevIssuer) -> None:
    g, rec, _ = gw
    token = issuer.issue("t")
    status, _, body = call(
        g.url + "/v1/packages/p/bundles",
        "POST",
        b"x" * (MAX_PAYLOAD_BYTES + 1),
        {"Authorization": f"Bearer {token}"},
    )
    assert status == 413 and rec.calls == []
    assert json.loads(body)["error"]["code"] == "body_too_large"


def test_local_token_route_issues_verifiable_tokens(gw: Any, issuer: DevIssuer) -> None:
    g, _, _ = gw
    status, _, body = call(
        g.url + "/local/token",
        "POST",
        json.dumps({"tenant": "demo", "scopes": ["log:read"], "ttl": 120}).encode(),
    )
    assert status == 200
    out = json.loads(body)
    claims = issuer.verify(out["token"])
    assert claims["tenant"] == "demo" and claims["scope"] == "log:read"
    assert claims["exp"] - claims["iat"] == 120 and out["expiresAt"].endswith("Z")
    for bad in (
        {},
        {"tenant": ""},
        {"tenant": "a", "ttl": "x"},
        {"tenant": "a", "scopes": [1]},
        {"tenant": "a", "scopes": ["memory:reed"]},  # a typo is refused, not a token without the scope
        {"tenant": ".."},
        {"tenant": "a\n"},
    ):
        assert call(g.url + "/local/token", "POST", json.dumps(bad).encode())[0] == 400
    assert call(g.url + "/local/jwks.json")[0] == 200


def test_shorthand_handler_result(gw: Any) -> None:
    g, rec, _ = gw
    rec.result = {"status": "ok"}
    status, headers, body = call(g.url + "/v1/health")
    assert status == 200 and json.loads(body) == {"status": "ok"}
    assert headers["Content-Type"] == "application/json"


def test_missing_handler_is_500(issuer: DevIssuer) -> None:
    with Gateway(None, issuer, log_stream=io.StringIO()) as g:
        assert call(g.url + "/v1/health")[0] == 500


def test_a_request_that_stops_sending_its_body_is_dropped_after_the_read_timeout(issuer: DevIssuer) -> None:
    import socket
    import time

    rec = Recorder()
    with Gateway(rec, issuer, log_stream=io.StringIO(), read_timeout=0.5) as g:
        with socket.create_connection(("127.0.0.1", g.port), timeout=10) as sock:
            sock.sendall(
                b"POST /v1/packages/p/bundles HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n0123456789"
            )
            started = time.monotonic()
            answer = b""
            while chunk := sock.recv(4096):  # the server gives up on the missing 90 bytes, then closes
                answer += chunk
            waited = time.monotonic() - started
        assert answer.startswith(b"HTTP/1.1 408") and waited < 5
        # the control: a request that sends what it announces is answered
        status, _, _ = call(g.url + "/v1/health")
        assert status == 200
    assert rec.calls and all(e["rawPath"] == "/v1/health" for e, _ in rec.calls)
