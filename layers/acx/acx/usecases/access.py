"""Who is calling: the tenant and scopes from the JWT claims the authorizer already checked.

The HTTP API's JWT authorizer (or the local gateway) validated the signature, issuer, audience and
expiry; this re-checks the claims the service relies on (defence in depth). It does NOT stop a
holder of a valid stolen token: that is the identity provider's and token lifetime's job.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from acx.usecases.errors import ServiceError

SCOPES = ("memory:write", "memory:read", "memory:forget", "cartridge:export", "log:read", "admin")
PACKAGE_ID = re.compile(r"^[a-z0-9-]{1,64}$")
TENANT_ID = re.compile(r"^[A-Za-z0-9._-]{1,64}$")


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
            raise ServiceError(403, "forbidden", f"token lacks the scope {scope}")


def principal_from_event(event: dict[str, Any]) -> Principal:
    """Read the authorizer's claims from an API Gateway v2 event; 401 when they are missing or malformed."""
    jwt = ((event.get("requestContext") or {}).get("authorizer") or {}).get("jwt") or {}
    claims = jwt.get("claims") or {}
    tenant = claims.get("tenant")
    subject = claims.get("sub")
    if (
        not isinstance(tenant, str)
        or not TENANT_ID.match(tenant)
        or not isinstance(subject, str)
        or not subject
    ):
        raise ServiceError(401, "unauthorized", "token has no valid tenant or sub claim")
    raw_scopes: Any = jwt.get("scopes") or claims.get("scope") or ""
    if isinstance(raw_scopes, str):
        # API Gateway renders list claims as "[a b]"; a plain OAuth scope claim is space separated.
        raw_scopes = raw_scopes.strip("[]").replace(",", " ").split()
    return Principal(tenant, subject[:128], frozenset(s for s in raw_scopes if s in SCOPES))


def check_package_id(package: str) -> str:
    if not PACKAGE_ID.match(package):
        raise ServiceError(400, "invalid_package", "package id must be 1-64 characters of [a-z0-9-]", "pkg")
    return package
