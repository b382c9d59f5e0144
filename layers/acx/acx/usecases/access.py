"""Who is calling: the tenant and scopes from the JWT claims the authorizer already checked.

The HTTP API's JWT authorizer (or the local gateway) validated the signature, issuer, audience and
expiry; this re-checks the claims the service relies on (defence in depth). It does NOT stop a
holder of a valid stolen token: that is the identity provider's and token lifetime's job.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from acx.contract import (
    ERR_FORBIDDEN,
    ERR_INVALID_PACKAGE,
    ERR_UNAUTHORIZED,
    SCOPES,
    is_package_id,
    is_tenant_id,
)
from acx.usecases.errors import ServiceError


@dataclass(frozen=True)
class Principal:
    tenant: str
    subject: str
    scopes: frozenset[str]
    agent: str | None = None  # the agent id the token carries (ClaimNames.agent_claim), if any

    @property
    def actor(self) -> str:
        return f"{self.tenant}/{self.subject}"

    def require(self, scope: str) -> None:
        if scope not in self.scopes:
            raise ServiceError(403, ERR_FORBIDDEN, f"token lacks the scope {scope}", extra={"scope": scope})


@dataclass(frozen=True)
class ClaimNames:
    """Where the identity provider puts what the service reads (template parameters ScopePrefix,
    ScopesClaim, TenantClaim). Cognito: prefix ``<resource-server>/``, ``scope``, ``custom:tenant``;
    Okta / Azure AD: ``scp``; Auth0: ``permissions`` and a namespaced tenant claim."""

    scope_prefix: str = ""
    scopes_claim: str = "scope"
    tenant_claim: str = "tenant"
    agent_claim: str = "agent_id"  # template parameter AgentClaim: which agent of the tenant writes


def claim_names() -> ClaimNames:
    """The deployment's claim configuration (env SCOPE_PREFIX, SCOPES_CLAIM, TENANT_CLAIM, AGENT_CLAIM)."""
    from acx.config import settings  # lazy: access loads at the api's init, config does not (bench coldstart)

    cfg = settings()
    return ClaimNames(cfg.scope_prefix, cfg.scopes_claim, cfg.tenant_claim, cfg.agent_claim)


def _claim_values(raw: Any) -> list[str]:
    """A claim holding several values: a JSON array, a space-separated string (RFC 8693 ``scope``),
    or API Gateway's rendering of an array claim as the string ``[a b]``."""
    if isinstance(raw, list):
        return [str(v) for v in raw]
    if not isinstance(raw, str):
        return []
    text = raw.strip()
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1].replace(",", " ")
    return [v.strip('"') for v in text.split() if v.strip('"')]


def token_scopes(jwt: dict[str, Any], names: ClaimNames) -> frozenset[str]:
    """The service scopes a token carries, read from the configured claim, without the prefix.

    For ``scope`` / ``scp`` the authorizer's own list (``jwt.scopes``, what it checked the route
    against) is preferred; any other claim (Auth0's ``permissions``) is read from the claims only.
    A value without the configured prefix is not a service scope (``memory:write`` does not count
    when the prefix is ``acx/``), as API Gateway would not have matched it either.
    """
    claims = jwt.get("claims") or {}
    raw: Any = None
    if names.scopes_claim in ("scope", "scp"):
        raw = jwt.get("scopes")
    if not raw:
        raw = claims.get(names.scopes_claim)
    prefix = names.scope_prefix
    found = (v[len(prefix) :] for v in _claim_values(raw) if v.startswith(prefix))
    return frozenset(s for s in found if s in SCOPES)


def token_tenant(claims: dict[str, Any], names: ClaimNames) -> Any:
    """The raw tenant claim (validated by the caller), from the configured claim name."""
    return claims.get(names.tenant_claim)


def token_agent(claims: dict[str, Any], names: ClaimNames) -> str | None:
    """The agent id the token carries (configured claim, default ``agent_id``), or None: absent, not a
    string, blank or over :data:`acx.core.log.MAX_AGENT` characters (an agent id is attribution, never
    a credential: a malformed one is left out, not refused)."""
    from acx.core.log import MAX_AGENT

    raw = claims.get(names.agent_claim)
    if not isinstance(raw, str) or not raw.strip() or len(raw) > MAX_AGENT:
        return None
    return raw


def principal_from_event(event: dict[str, Any], names: ClaimNames | None = None) -> Principal:
    """Read the authorizer's claims from an API Gateway v2 event; 401 when they are missing or malformed.

    The tenant must be a string matching the contract's pattern in full (no trailing newline, no
    ``.``/``..``: it becomes an S3 key segment). API Gateway hands every claim over as a string, so a
    boolean or number tenant claim arrives as ``"true"``/``"7"``: refusing non-string claims is the
    gateway's job (the local one does); in AWS the identity provider must issue string tenants.
    """
    names = names or claim_names()
    jwt = ((event.get("requestContext") or {}).get("authorizer") or {}).get("jwt") or {}
    claims = jwt.get("claims") or {}
    tenant = token_tenant(claims, names)
    subject = claims.get("sub")
    if (
        not isinstance(tenant, str)
        or not is_tenant_id(tenant)
        or not isinstance(subject, str)
        or not subject.strip()
    ):
        raise ServiceError(
            401,
            ERR_UNAUTHORIZED,
            "token has no valid tenant or sub claim (tenant: 1-64 chars of [A-Za-z0-9._-], "
            "starting with a letter or digit)",
        )
    return Principal(tenant, subject[:128], token_scopes(jwt, names), token_agent(claims, names))


def check_package_id(package: str) -> str:
    if not is_package_id(package):
        raise ServiceError(
            400,
            ERR_INVALID_PACKAGE,
            "package id must be 1-64 characters of [a-z0-9-], starting with a letter or digit",
            "$.pkg",
        )
    return package
