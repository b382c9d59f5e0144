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

    @property
    def actor(self) -> str:
        return f"{self.tenant}/{self.subject}"

    def require(self, scope: str) -> None:
        if scope not in self.scopes:
            raise ServiceError(403, ERR_FORBIDDEN, f"token lacks the scope {scope}", extra={"scope": scope})


def principal_from_event(event: dict[str, Any]) -> Principal:
    """Read the authorizer's claims from an API Gateway v2 event; 401 when they are missing or malformed.

    The tenant must be a string matching the contract's pattern in full (no trailing newline, no
    ``.``/``..``: it becomes an S3 key segment). API Gateway hands every claim over as a string, so a
    boolean or number tenant claim arrives as ``"true"``/``"7"``: refusing non-string claims is the
    gateway's job (the local one does); in AWS the identity provider must issue string tenants.
    """
    jwt = ((event.get("requestContext") or {}).get("authorizer") or {}).get("jwt") or {}
    claims = jwt.get("claims") or {}
    tenant = claims.get("tenant")
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
    raw_scopes: Any = jwt.get("scopes") or claims.get("scope") or ""
    if isinstance(raw_scopes, str):
        # API Gateway renders list claims as "[a b]"; a plain OAuth scope claim is space separated.
        raw_scopes = raw_scopes.strip("[]").replace(",", " ").split()
    return Principal(tenant, subject[:128], frozenset(s for s in raw_scopes if s in SCOPES))


def check_package_id(package: str) -> str:
    if not is_package_id(package):
        raise ServiceError(
            400,
            ERR_INVALID_PACKAGE,
            "package id must be 1-64 characters of [a-z0-9-], starting with a letter or digit",
            "$.pkg",
        )
    return package
