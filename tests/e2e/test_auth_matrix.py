"""Auth matrix over HTTP on the local stack: every protected route of docs/API.md, every kind of caller.

For each route: no token (401), an expired token (401), a token signed by another key (401), an
``alg: none`` token (401), another tenant's token (404, or for the routes that create things in the
caller's own namespace the same answer as an unknown package of the caller: indistinguishable, and
never a byte of the owner's data), a token missing the route's scope (403) and the right token (2xx,
or the route's documented 4xx for the input). No 401/403/404 response carries a URL (presigned URLs
are only issued after the auth check) and no unauthorized call leaves a job behind.
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jwt
import pytest

from acx.core.canonical import sha256_hex
from acx.local.jwt_issuer import DevIssuer
from tests.api_docs import documented_routes
from tests.factories import memory
from tests.http import send

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
OWNER = "matrix-owner"
INTRUDER = "matrix-intruder"
PKG = "matrix-pkg"
UNKNOWN_PKG = "matrix-no-such-pkg"
SCOPES = (
    "memory:write",
    "memory:read",
    "memory:forget",
    "cartridge:export",
    "log:read",
    "admin",
    "memory:review",
)
PUBLIC = {
    ("GET", "/v1/health"),
    ("GET", "/v1/openapi.json"),
    ("GET", "/v1/trust-registry"),
    ("GET", "/console"),
    ("GET", "/console/{asset}"),
}
P = "/v1/packages/{pkg}"


def record(i: int) -> dict[str, Any]:
    return memory(
        f"owner-rec-{i}-Kx7Qw",
        title=f"Owner-only title {i} Platypus-Juniper",
        summary=f"Owner-only summary {i}: rotate the Walrus-Tangerine runbook.",
        repoLabel="platform",
        projectLabel="matrix",
        timestamp="2026-05-01T00:00:00Z",
        xpAwarded=i,
        tags=["matrix"],
    )


RECORDS = [record(i) for i in range(3)]
BUNDLE = {"schemaVersion": "acx.memory-bundle/1", "records": RECORDS, "knowledge": [], "skills": []}


def http(
    stack: Any, method: str, path: str, token: str | None = None, body: Any = None, query: str = ""
) -> tuple[int, bytes]:
    url = stack.endpoint + path + (f"?{query}" if query else "")
    return send(url, method, token=token, body=body, timeout=30)


@dataclass
class Case:
    """One documented route, with the input each caller sends and what the owner should get."""

    method: str
    template: str
    scope: str
    path_args: dict[str, str] = field(default_factory=dict)
    query: str = ""
    body: Any = None
    ok: tuple[int, ...] = (200,)
    # creates in the caller's own namespace: the intruder's answer equals its unknown-package answer
    creates: bool = False
    # lists the caller's tenant (no package in the path): the intruder sees only its own
    tenant_list: bool = False
    intruder_body: Any = None
    check_ok: Callable[[Any], None] | None = None

    def path(self, pkg: str) -> str:
        return self.template.replace("{pkg}", pkg).format(**self.path_args)


@dataclass
class Seed:
    upload_id: str
    cartridge_id: str
    checkpoint: str
    chain_head: str
    manifest_hash: str

    def secrets(self) -> list[bytes]:
        """Bytes of the owner's data that must never reach another tenant (or any refused caller)."""
        out = [OWNER.encode(), self.checkpoint.splitlines()[2].encode(), self.chain_head.encode()]
        out += [self.manifest_hash.encode(), self.manifest_hash.removeprefix("sha256:").encode()]
        for r in RECORDS:
            out += [
                r["title"].encode(),
                r["summary"].encode(),
                sha256_hex(r).encode(),
                b"Platypus",
                b"Walrus",
            ]
        return out


@pytest.fixture(scope="module")
def stack(local_stack: Any) -> Any:
    """The local stack; the gateway must route every documented route (see test_gateway_routes)."""
    from acx.local.gateway import Route

    gateway = local_stack._gateway
    known = {(r.method, r.template) for r in gateway.routes}
    missing = [Route(m, t, s) for (m, t), s in documented_routes().items() if (m, t) not in known]
    if missing:  # only until acx.local.gateway.ROUTES lists them: keeps the matrix meaningful
        gateway.routes = tuple(gateway.routes) + tuple(missing)
    return local_stack


@pytest.fixture(scope="module")
def seed(stack: Any) -> Seed:
    token = stack.token(OWNER, SCOPES)
    status, raw = http(stack, "POST", f"/v1/packages/{PKG}/bundles", token, BUNDLE)
    assert status == 201, raw
    status, raw = http(stack, "POST", f"/v1/packages/{PKG}/cartridges", token, {})
    assert status == 201, raw
    exported = json.loads(raw)
    status, raw = http(stack, "POST", f"/v1/packages/{PKG}/uploads", token, {})
    assert status == 201, raw
    upload = json.loads(raw)
    status, raw = http(stack, "GET", f"/v1/packages/{PKG}/log", token)
    assert status == 200, raw
    head = json.loads(raw)
    chain_head = head["checkpoint"].splitlines()[3].removeprefix("chain-head ")
    return Seed(
        upload["uploadId"], exported["cartridgeId"], head["checkpoint"], chain_head, exported["manifestHash"]
    )


def cases(seed: Seed) -> list[Case]:
    """Every protected route, in an order that keeps the owner's state usable (forget/lock last)."""

    def url_issued(body: Any) -> None:
        assert body["url"].startswith("http") and body["method"] == "PUT"

    def cartridge_url(body: Any) -> None:
        assert body["status"] == "ready" and body["url"]

    return [
        Case("GET", "/v1/packages", "memory:read", tenant_list=True),
        Case(
            "POST",
            f"{P}/bundles",
            "memory:write",
            body=BUNDLE,
            ok=(201,),
            creates=True,
            intruder_body={"schemaVersion": "acx.memory-bundle/1", "records": "not-a-list"},
        ),
        Case("POST", f"{P}/uploads", "memory:write", body={}, ok=(201,), creates=True, check_ok=url_issued),
        Case("GET", f"{P}/uploads/{{uploadId}}", "memory:write", {"uploadId": seed.upload_id}),
        Case("GET", f"{P}/uploads", "memory:write"),
        Case("GET", f"{P}/memories", "memory:read", query="limit=10"),
        Case("GET", f"{P}/memories/{{id}}", "memory:read", {"id": RECORDS[0]["id"]}),
        Case("GET", f"{P}/memories/{{id}}/history", "memory:read", {"id": RECORDS[0]["id"]}),
        Case(
            "PUT",
            f"{P}/memories/{{id}}",
            "memory:write",
            {"id": RECORDS[1]["id"]},
            body={"record": dict(RECORDS[1], summary="Corrected by the matrix.")},
        ),
        Case(
            "POST",
            f"{P}/memories/{{id}}/invalidate",
            "memory:write",
            {"id": RECORDS[1]["id"]},
            body={"reason": "x"},
        ),
        Case("GET", f"{P}/cartridges", "cartridge:export"),
        Case("GET", f"{P}/log/entries", "log:read"),
        Case("GET", f"{P}/memories/search", "memory:read", query="q=platypus+walrus&k=5"),
        Case(
            "GET",
            f"{P}/cartridges/{{cartridgeId}}",
            "cartridge:export",
            {"cartridgeId": seed.cartridge_id},
            check_ok=cartridge_url,
        ),
        Case("POST", f"{P}/cartridges", "cartridge:export", body={}, ok=(201,)),
        Case("GET", f"{P}/log", "log:read"),
        Case("GET", f"{P}/log/verify", "log:read"),
        Case("GET", f"{P}/log/proof/inclusion", "log:read", query="index=0&size=2"),
        Case("GET", f"{P}/log/proof/consistency", "log:read", query="from=1&to=2"),
        Case("GET", f"{P}/policy", "memory:read"),
        # the intruder's invalid body (422) creates no package of its own that later cases would find
        Case(
            "PUT",
            f"{P}/policy",
            "admin",
            body={"review": "none"},
            creates=True,
            intruder_body={"review": "x"},
        ),
        Case("GET", f"{P}/review", "memory:review"),
        # a belief: nothing to decide (409); the intruder's answer is the unknown package's 404
        Case(
            "POST",
            f"{P}/review/{{id}}",
            "memory:review",
            {"id": RECORDS[1]["id"]},
            body={"decision": "approve"},
            ok=(409,),
        ),
        # an unknown content hash: the documented 404 for the input (the package exists)
        Case("DELETE", f"{P}/memories", "memory:forget", query=f"contentHash={'0' * 64}", ok=(404,)),
        Case("DELETE", f"{P}/memories/{{id}}", "memory:forget", {"id": RECORDS[2]["id"]}),
        # no such file in the package: the documented 404 for the input
        Case("DELETE", f"{P}/files/{{path+}}", "memory:forget", {"path+": "knowledge/nope.md"}, ok=(404,)),
        Case("DELETE", f"{P}/files", "memory:forget", query=f"contentHash={'0' * 64}", ok=(404,)),
        Case("POST", f"{P}/lock", "admin", body={"reason": "matrix"}),
        Case("POST", f"{P}/unlock", "admin", body={}),
    ]


def forge_other_key(claims_of: DevIssuer, tenant: str, scopes: tuple[str, ...]) -> list[str]:
    """Tokens with the right iss/aud/claims that the gateway's key did not sign."""
    other = DevIssuer(issuer=claims_of.issuer, audience=claims_of.audience)
    own_kid_forged = jwt.encode(  # the real kid in the header, signed with another key
        jwt.decode(other.issue(tenant, scopes), options={"verify_signature": False}),
        other._private,
        algorithm=other.algorithm,
        headers={"kid": claims_of.kid, "typ": "JWT"},
    )
    now = int(time.time())
    claims = {
        "iss": claims_of.issuer,
        "aud": claims_of.audience,
        "sub": "x",
        "tenant": tenant,
        "scope": " ".join(scopes),
        "iat": now,
        "exp": now + 600,
    }

    def b64(obj: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).rstrip(b"=").decode()

    alg_none = f"{b64({'alg': 'none', 'kid': claims_of.kid, 'typ': 'JWT'})}.{b64(claims)}."
    return [other.issue(tenant, scopes), own_kid_forged, alg_none]


def upload_jobs(stack: Any, tenant: str) -> int:
    return len(stack.deps.jobs.list(tenant, PKG, "upload"))


def assert_no_url_and_no_owner_data(raw: bytes, seed: Seed, what: str) -> None:
    for needle in (b"X-Amz-", b'"url"', b"https://", b"http://", *seed.secrets()):
        assert needle not in raw, f"{what}: response holds {needle!r}: {raw[:300]!r}"


def test_documented_routes_are_all_in_the_matrix(seed: Seed) -> None:
    protected = {k for k, s in documented_routes().items() if s != "none"}
    covered = {(c.method, c.template) for c in cases(seed)}
    assert protected == covered
    assert {k for k, s in documented_routes().items() if s == "none"} == PUBLIC
    assert {c.scope for c in cases(seed)} == {
        documented_routes()[(c.method, c.template)] for c in cases(seed)
    }
    for c in cases(seed):
        assert documented_routes()[(c.method, c.template)] == c.scope, c.template


def test_local_gateway_routes_every_documented_route() -> None:
    """The local gateway's route table (not the fixture-patched one) matches docs/API.md."""
    from acx.local.gateway import ROUTES

    assert {(r.method, r.template): (r.scope or "none") for r in ROUTES} == documented_routes()


def test_public_routes_answer_without_a_token(stack: Any) -> None:
    for method, path in sorted(PUBLIC):
        path = path.replace("{asset}", "console.js")
        for token in (None, "not-a-jwt"):
            status, raw = http(stack, method, path, token)
            assert status == 200, (path, token, raw[:200])
            if path.startswith("/v1/"):
                json.loads(raw)
            else:  # the console's static files: the same bytes for anyone, no data in them
                assert raw and b"Bearer" in raw, path


def test_auth_matrix(stack: Any, seed: Seed) -> None:
    issuer: DevIssuer = stack.issuer
    owner_jobs_before = upload_jobs(stack, OWNER)
    intruder_all = stack.token(INTRUDER, SCOPES)
    expired = issuer.issue(OWNER, SCOPES, ttl=60, now=int(time.time()) - 3600)
    forged = forge_other_key(issuer, OWNER, SCOPES)
    started = time.monotonic()
    for case in cases(seed):
        what = f"{case.method} {case.template}"
        path = case.path(PKG)
        send = case.body

        # 401: no token, an expired token, tokens the gateway's key did not sign
        for label, token in [
            ("no token", None),
            ("expired", expired),
            ("empty", ""),
            *[(f"forged#{i}", t) for i, t in enumerate(forged)],
        ]:
            status, raw = http(stack, case.method, path, token, send, case.query)
            assert status == 401, (what, label, status, raw[:200])
            assert_no_url_and_no_owner_data(raw, seed, f"{what} {label}")
            error = json.loads(raw)["error"]  # the service's one error shape, saying what to do
            assert error["code"] == ("token_expired" if label == "expired" else "unauthorized"), (what, raw)
            assert "acx login" in error["message"], (what, raw)

        # 403: the owner's own token without the route's scope (every other scope)
        lacking = stack.token(OWNER, tuple(s for s in SCOPES if s != case.scope))
        status, raw = http(stack, case.method, path, lacking, send, case.query)
        assert status == 403, (what, status, raw[:200])
        assert_no_url_and_no_owner_data(raw, seed, f"{what} missing scope")
        refusal = json.loads(raw)
        assert refusal["error"]["code"] == "forbidden" and refusal["scope"] == case.scope, (what, raw)
        assert case.scope in refusal["error"]["message"], (what, raw)

        # another tenant: the owner's package answers exactly as an unknown package of the intruder's
        intruder_send = case.intruder_body if case.intruder_body is not None else send
        other = http(stack, case.method, path, intruder_all, intruder_send, case.query)
        unknown = http(stack, case.method, case.path(UNKNOWN_PKG), intruder_all, intruder_send, case.query)
        if case.tenant_list:
            assert other[0] == 200, (what, other)
            assert all(p["package"] != PKG for p in json.loads(other[1])["packages"]), (what, other)
        elif case.creates:
            # packages live in the caller's tenant: the intruder reaches its own namespace, never the owner's
            assert other[0] == unknown[0], (what, other, unknown)
            if other[0] >= 300:
                assert json.loads(other[1])["error"]["code"] == json.loads(unknown[1])["error"]["code"]
            else:
                assert f"/{INTRUDER}/".encode() in other[1] and f"/{OWNER}/".encode() not in other[1]
        else:
            assert other[0] == 404, (what, other)
            assert other == unknown, (what, other, unknown)  # same status, same body: indistinguishable
            assert json.loads(other[1])["error"]["code"] == "not_found"
            assert_no_url_and_no_owner_data(other[1], seed, f"{what} other tenant")
        for needle in seed.secrets():
            assert needle not in other[1], (what, needle)

        # the right token
        status, raw = http(stack, case.method, path, stack.token(OWNER, (case.scope,)), send, case.query)
        assert status in case.ok, (what, status, raw[:300])
        if case.check_ok is not None:
            case.check_ok(json.loads(raw))

    # no refused call created an upload job (and so no URL) for the owner: only the right one did
    assert upload_jobs(stack, OWNER) == owner_jobs_before + 1
    # the intruder's one 201 landed in its own namespace (same package name, its own partition key)
    assert upload_jobs(stack, INTRUDER) == 1
    assert time.monotonic() - started < 60


def test_locked_package_refuses_writes_over_http_and_keeps_reads(stack: Any, seed: Seed) -> None:
    admin = stack.token(OWNER, ("admin",))
    everything = stack.token(OWNER, SCOPES)
    status, raw = http(stack, "POST", f"/v1/packages/{PKG}/lock", admin, {"reason": "e2e"})
    assert status == 200 and json.loads(raw)["locked"] is True
    try:
        for method, path, body, query in [
            ("POST", f"/v1/packages/{PKG}/bundles", BUNDLE, ""),
            ("POST", f"/v1/packages/{PKG}/uploads", {}, ""),
            ("POST", f"/v1/packages/{PKG}/cartridges", {}, ""),
            ("DELETE", f"/v1/packages/{PKG}/memories/{RECORDS[0]['id']}", None, ""),
        ]:
            status, raw = http(stack, method, path, everything, body, query)
            assert status == 423 and json.loads(raw)["error"]["code"] == "locked", (path, raw[:200])
            assert b"X-Amz-" not in raw
        for path, query in [(f"/v1/packages/{PKG}/memories", ""), (f"/v1/packages/{PKG}/log/verify", "")]:
            status, raw = http(stack, "GET", path, everything, None, query)
            assert status == 200, (path, raw[:200])
        assert json.loads(raw)["status"] == "ok"
        # the intruder cannot see, lock or unlock the owner's package (404, like an unknown one)
        intruder = stack.token(INTRUDER, ("admin",))
        assert http(stack, "POST", f"/v1/packages/{PKG}/unlock", intruder, {})[0] == 404
    finally:
        status, raw = http(stack, "POST", f"/v1/packages/{PKG}/unlock", admin, {})
        assert status == 200, raw
