"""A development JWT issuer for the local stack, validating tokens the way the HTTP API JWT authorizer does.

The deployed API trusts an external identity provider through API Gateway's JWT authorizer; locally
there is none, so this module mints short-lived tokens with a key generated per stack run (nothing
to leak, nothing to rotate) and checks them with the same rules the authorizer applies: ``kid`` in
the key set, allowed ``alg``, signature, ``iss``, ``aud`` (or ``client_id``), ``exp``, ``nbf`` and
``iat``. Any failure raises :class:`InvalidToken`; callers map it to 401 without saying why, as AWS
does.

Note: AWS's JWT authorizer itself accepts only RSA-signed tokens. ``EdDSA`` (the default here) keeps
key generation instant; pass ``algorithm="RS256"`` to mint tokens exactly like an AWS-compatible IdP.
"""

from __future__ import annotations

import base64
import hashlib
import json
import time
import uuid
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

import jwt
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

from acx.contract import SCOPES

Algorithm = Literal["EdDSA", "ES256", "RS256"]

#: Every scope of the API contract (admin included): a dev token with these can call every route.
ALL_SCOPES: tuple[str, ...] = SCOPES

DEFAULT_ISSUER = "https://acx.local/issuer"
DEFAULT_AUDIENCE = "acx-api"


class InvalidToken(Exception):
    """The token failed one of the authorizer's checks (the reason is for logs, never for clients)."""


class TokenExpired(InvalidToken):
    """A valid token past its ``exp``: the one reason a client is told (AWS's authorizer says it too,
    in ``WWW-Authenticate``), because the fix is the user's: log in again."""


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


class DevIssuer:
    """Mints and verifies dev tokens with one in-memory key (a new key per instance)."""

    def __init__(
        self,
        issuer: str = DEFAULT_ISSUER,
        audience: str = DEFAULT_AUDIENCE,
        algorithm: Algorithm = "EdDSA",
    ) -> None:
        self.issuer = issuer
        self.audience = audience
        self.algorithm: Algorithm = algorithm
        key: ed25519.Ed25519PrivateKey | ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey
        if algorithm == "EdDSA":
            key = ed25519.Ed25519PrivateKey.generate()
        elif algorithm == "ES256":
            key = ec.generate_private_key(ec.SECP256R1())
        elif algorithm == "RS256":
            key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        else:
            raise ValueError(f"unsupported algorithm {algorithm!r}")
        self._private = key
        self._public = key.public_key()
        self._jwk = self._public_jwk()
        self.kid: str = self._jwk["kid"]

    @classmethod
    def persistent(
        cls, key_file: Path, issuer: str = DEFAULT_ISSUER, audience: str = DEFAULT_AUDIENCE
    ) -> DevIssuer:
        """An EdDSA issuer whose key lives in ``key_file`` (a checksummed key file, mode 0600: see
        :mod:`acx.local.embedded.keys`), created on first use,
        so the key id and every token it minted stay valid across restarts of the local stack.

        Anyone who can read the file can mint tokens for any tenant: it is a development key, for a
        stack on loopback, never an identity provider.
        """
        from acx.local.embedded.keys import ed25519_key

        key = ed25519_key(key_file, create=True)
        self = cls.__new__(cls)
        self.issuer, self.audience, self.algorithm = issuer, audience, "EdDSA"
        self._private = key
        self._public = key.public_key()
        self._jwk = self._public_jwk()
        self.kid = self._jwk["kid"]
        return self

    def _public_jwk(self) -> dict[str, Any]:
        algo = jwt.get_algorithm_by_name(self.algorithm)
        jwk: dict[str, Any] = json.loads(algo.to_jwk(self._public))  # type: ignore[arg-type]
        # RFC 7638 thumbprint over the required members, in lexicographic order.
        required = {"OKP": ("crv", "kty", "x"), "EC": ("crv", "kty", "x", "y"), "RSA": ("e", "kty", "n")}
        members = {k: jwk[k] for k in required[jwk["kty"]]}
        thumb = hashlib.sha256(json.dumps(members, separators=(",", ":"), sort_keys=True).encode()).digest()
        jwk.update({"kid": _b64url(thumb), "alg": self.algorithm, "use": "sig"})
        return jwk

    def issue(
        self,
        tenant: str,
        scopes: Iterable[str] = ALL_SCOPES,
        sub: str = "dev",
        ttl: int = 3600,
        *,
        now: int | None = None,
        agent: str | None = None,
    ) -> str:
        """A signed token for ``tenant`` carrying ``scopes`` (space-separated ``scope`` claim) and, when
        given, the agent id in ``agent_id`` (the default AgentClaim). A reviewer's token is one with
        ``memory:review`` and another ``sub`` than the agents whose candidates it decides."""
        if not isinstance(tenant, str) or not tenant:
            raise ValueError("tenant must be a non-empty string")
        if ttl <= 0:
            raise ValueError("ttl must be positive")
        iat = int(time.time()) if now is None else now
        claims = {
            "iss": self.issuer,
            "aud": self.audience,
            "sub": sub,
            "tenant": tenant,
            "scope": " ".join(scopes),
            "iat": iat,
            "exp": iat + ttl,
            "jti": uuid.uuid4().hex,
        }
        if agent is not None:
            claims["agent_id"] = agent
        return jwt.encode(
            claims, self._private, algorithm=self.algorithm, headers={"kid": self.kid, "typ": "JWT"}
        )

    def verify(self, token: str) -> dict[str, Any]:
        """The token's claims when every authorizer check passes; raises :class:`InvalidToken` otherwise."""
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError as exc:
            raise InvalidToken(f"malformed token: {exc}") from None
        if header.get("kid") != self.kid:
            raise InvalidToken("unknown kid")
        if header.get("alg") != self.algorithm:
            raise InvalidToken("algorithm not allowed")
        try:
            claims: dict[str, Any] = jwt.decode(
                token,
                self._public,  # type: ignore[arg-type]
                algorithms=[self.algorithm],
                audience=None,  # aud or client_id is checked below, as the authorizer does
                issuer=self.issuer,
                options={"require": ["exp", "iss"], "verify_aud": False},
            )
        except jwt.ExpiredSignatureError:
            raise TokenExpired("token expired") from None
        except jwt.PyJWTError as exc:
            raise InvalidToken(str(exc)) from None
        aud = claims.get("aud")
        audiences = [aud] if isinstance(aud, str) else list(aud) if isinstance(aud, list) else []
        if self.audience not in audiences and claims.get("client_id") != self.audience:
            raise InvalidToken("audience mismatch")
        return claims

    def jwks(self) -> dict[str, Any]:
        """The public key set (what the authorizer would fetch from the issuer's jwks_uri)."""
        return {"keys": [dict(self._jwk)]}


def scopes_of(claims: dict[str, Any]) -> list[str] | None:
    """The scopes the authorizer reports for ``claims``: from ``scope`` or ``scp``; None when absent."""
    raw = claims.get("scope", claims.get("scp"))
    if raw is None:
        return None
    if isinstance(raw, str):
        return [s for s in raw.split(" ") if s]
    if isinstance(raw, list):
        return [str(s) for s in raw]
    return None


def stringify_claims(claims: dict[str, Any]) -> dict[str, str]:
    """Claims as API Gateway hands them to Lambda: every value a string, lists as ``[a b]``."""
    out: dict[str, str] = {}
    for key, value in claims.items():
        if isinstance(value, str):
            out[key] = value
        elif isinstance(value, bool):
            out[key] = "true" if value else "false"
        elif isinstance(value, list):
            out[key] = "[" + " ".join(str(v) for v in value) + "]"
        elif isinstance(value, dict):
            out[key] = json.dumps(value, separators=(",", ":"))
        else:
            out[key] = str(value)
    return out
