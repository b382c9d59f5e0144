"""Tokens shaped as Cognito, Okta, Azure AD and Auth0 issue them, over HTTP on the local stack.

Each provider is a deployment configuration (template parameters ScopePrefix, ScopesClaim,
TenantClaim; env SCOPE_PREFIX, SCOPES_CLAIM, TENANT_CLAIM for the handlers): a gateway in front of
the local stack's API handler applies the route scopes as API Gateway would with that ScopePrefix
(it reads ``scope`` or ``scp``), and the handler re-checks scopes and the tenant from the
configured claims. Claim shapes follow each provider's documented access tokens:
Cognito ``scope`` space-separated with ``<resource-server>/`` names, ``client_id`` instead of
``aud``, tenant added by a pre-token-generation trigger as ``custom:tenant``; Okta ``scp`` array;
Azure AD ``scp`` space-separated string; Auth0 ``permissions`` array (RBAC) next to ``scope``.
"""

from __future__ import annotations

import io
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import jwt
import pytest

from acx.local.gateway import Gateway, routes_from_template
from acx.local.jwt_issuer import DevIssuer
from tests.http import send_json
from tests.integration.service import bundle, record

pytestmark = pytest.mark.e2e


@dataclass(frozen=True)
class Provider:
    name: str
    scope_prefix: str
    scopes_claim: str
    tenant_claim: str

    def claims(self, issuer: DevIssuer, tenant: str, scopes: list[str], **extra: Any) -> dict[str, Any]:
        now = int(time.time())
        base: dict[str, Any] = {
            "iss": issuer.issuer,
            "sub": f"{self.name}-user",
            "iat": now,
            "exp": now + 600,
        }
        scoped = [self.scope_prefix + s for s in scopes]
        if self.name == "cognito":
            base |= {"client_id": issuer.audience, "token_use": "access", "scope": " ".join(scoped)}
        elif self.name == "okta":
            base |= {"aud": issuer.audience, "scp": scoped, "cid": "0oa1example"}
        elif self.name == "azure-ad":
            base |= {"aud": issuer.audience, "scp": " ".join(scoped), "ver": "2.0"}
        elif self.name == "auth0":
            base |= {"aud": [issuer.audience], "scope": " ".join(scoped), "permissions": scoped}
        base[self.tenant_claim] = tenant
        return base | extra


COGNITO = Provider("cognito", "acx/", "scope", "custom:tenant")
OKTA = Provider("okta", "", "scp", "tenant")
AZURE = Provider("azure-ad", "", "scp", "extn.tenant")
AUTH0 = Provider("auth0", "", "permissions", "https://acx.example.com/tenant")


@dataclass
class Front:
    """A gateway configured for one provider, in front of the local stack's API handler."""

    gateway: Gateway
    issuer: DevIssuer
    provider: Provider

    def token(self, claims: dict[str, Any]) -> str:
        return jwt.encode(
            claims, self.issuer._private, algorithm=self.issuer.algorithm, headers={"kid": self.issuer.kid}
        )

    def call(self, method: str, path: str, token: str, body: Any = None) -> tuple[int, Any]:
        return send_json(self.gateway.url + path, method, token=token, body=body, timeout=30)


@pytest.fixture(params=[COGNITO, OKTA, AZURE, AUTH0], ids=lambda p: p.name)
def front(
    request: pytest.FixtureRequest, local_stack: Any, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Front]:
    from acx.config import settings

    provider: Provider = request.param
    monkeypatch.setenv("SCOPE_PREFIX", provider.scope_prefix)
    monkeypatch.setenv("SCOPES_CLAIM", provider.scopes_claim)
    monkeypatch.setenv("TENANT_CLAIM", provider.tenant_claim)
    settings.cache_clear()
    issuer = DevIssuer(issuer=f"https://{provider.name}.example.com/", audience="acx-client")
    gateway = Gateway(
        local_stack.handlers["api"],
        issuer,
        port=0,
        routes=routes_from_template(scope_prefix=provider.scope_prefix),
        log_stream=io.StringIO(),  # access lines stay out of the test output
    ).start()
    try:
        yield Front(gateway, issuer, provider)
    finally:
        gateway.stop()
        monkeypatch.undo()
        settings.cache_clear()


def _bundle(tag: str) -> dict[str, Any]:
    return bundle(
        [
            record(
                1,
                id=f"idp-{tag}",
                title=f"Lesson from {tag}",
                summary=f"Retry with jittered backoff ({tag}).",
            )
        ]
    )


def test_the_providers_token_writes_and_reads_in_its_tenant(front: Front) -> None:
    p = front.provider
    tenant = f"idp-{p.name}-{uuid.uuid4().hex[:6]}"
    token = front.token(p.claims(front.issuer, tenant, ["memory:write", "memory:read"]))
    status, body = front.call("POST", "/v1/packages/idp/bundles", token, _bundle(p.name))
    assert status == 201, body
    status, body = front.call("GET", "/v1/packages/idp/memories", token)
    assert status == 200 and [r["id"] for r in body["records"]] == [f"idp-{p.name}"], body
    # Another tenant, same provider: nothing of the first tenant is visible.
    other = front.token(p.claims(front.issuer, tenant + "-x", ["memory:read"]))
    assert front.call("GET", "/v1/packages/idp/memories", other)[0] == 404


def test_a_scope_the_token_lacks_is_refused(front: Front) -> None:
    p = front.provider
    token = front.token(p.claims(front.issuer, f"idp-{p.name}", ["memory:read"]))
    status, _ = front.call("POST", "/v1/packages/idp/bundles", token, _bundle("denied"))
    assert status == 403


def test_scopes_without_the_configured_prefix_do_not_count(front: Front) -> None:
    p = front.provider
    if not p.scope_prefix:
        pytest.skip("this provider's scopes carry no prefix")
    bare = p.claims(front.issuer, f"idp-{p.name}", [])
    bare["scope" if p.scopes_claim == "scope" else p.scopes_claim] = "memory:read"
    assert front.call("GET", "/v1/packages/idp/memories", front.token(bare))[0] == 403


def test_a_token_without_the_configured_tenant_claim_is_401(front: Front) -> None:
    p = front.provider
    claims = p.claims(front.issuer, "idp-x", ["memory:read"])
    claims["tenant" if p.tenant_claim != "tenant" else "org"] = claims.pop(p.tenant_claim)
    status, body = front.call("GET", "/v1/packages/idp/memories", front.token(claims))
    assert status == 401 and body["error"]["code"] == "unauthorized", body


def test_auth0_permissions_are_what_the_handler_trusts_not_the_requested_scope(front: Front) -> None:
    """Auth0 RBAC: ``scope`` lists what the client asked for (API Gateway checks it), ``permissions``
    what the user was granted. A scope asked for but not granted passes the authorizer and is
    refused by the handler."""
    if front.provider is not AUTH0:
        pytest.skip("Auth0 only")
    claims = AUTH0.claims(front.issuer, "idp-auth0-rbac", ["memory:read"])
    claims["scope"] = "memory:read memory:write"  # asked for write; not granted
    status, body = front.call("POST", "/v1/packages/idp/bundles", front.token(claims), _bundle("rbac"))
    assert status == 403 and "memory:write" in body["error"]["message"], body
