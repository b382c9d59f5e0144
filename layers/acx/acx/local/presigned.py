"""Check a SigV4 presigned S3 URL the way S3 does, before the local gateway lets it reach moto.

moto accepts any presigned URL (no signature, no expiry check), so locally a user could PUT their
upload body to another tenant's pending upload key. The gateway calls :func:`check_presigned` on
every request carrying ``X-Amz-Signature`` and answers 403 unless the signature recomputed with the
stack's credentials matches: that binds the URL to its method, bucket, object key, the signed
headers' values (``content-type``: the one content type it was issued for; ``host``) and its
expiry, which is checked against ``X-Amz-Date``.

Does NOT stop: a holder of the URL replaying it (any number of times) until it expires, exactly as
S3 allows; someone who knows the stack's credentials (they are the fixed fake ones moto uses, so
anyone on this host can sign URLs; the stack listens on loopback only).
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from urllib.parse import parse_qsl, quote

MAX_EXPIRES = 7 * 24 * 3600  # S3's limit for SigV4 presigned URLs


@dataclass(frozen=True)
class PresignRefused(Exception):
    """Why S3 would refuse the URL (S3's error code; the message names no secret)."""

    code: str
    message: str


def _uri_encode(value: str) -> str:
    return quote(value, safe="-_.~")


def _signing_key(secret: str, date: str, region: str, service: str) -> bytes:
    key = hmac.new(("AWS4" + secret).encode(), date.encode(), hashlib.sha256).digest()
    for part in (region, service, "aws4_request"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    return key


def check_presigned(
    method: str,
    raw_path: str,
    raw_query: str,
    headers: Mapping[str, str],
    credentials: tuple[str, str],
    *,
    now: datetime | None = None,
) -> None:
    """Raise :class:`PresignRefused` unless this request is a valid, unexpired presigned request.

    ``raw_path`` is the path exactly as sent (percent-encoded); ``headers`` maps lowercase names to
    values; ``credentials`` = (access key id, secret access key) the URLs are signed with.
    """
    pairs = parse_qsl(raw_query, keep_blank_values=True)
    q: dict[str, str] = {}
    for k, v in pairs:
        if k.startswith("X-Amz-") and k in q:
            raise PresignRefused("AuthorizationQueryParametersError", f"{k} is given twice")
        q[k] = v
    required = ("X-Amz-Algorithm", "X-Amz-Credential", "X-Amz-Date", "X-Amz-Expires", "X-Amz-SignedHeaders")
    for name in (*required, "X-Amz-Signature"):
        if not q.get(name):
            raise PresignRefused("AuthorizationQueryParametersError", f"{name} is missing")
    if q["X-Amz-Algorithm"] != "AWS4-HMAC-SHA256":
        raise PresignRefused("AuthorizationQueryParametersError", "X-Amz-Algorithm must be AWS4-HMAC-SHA256")
    scope = q["X-Amz-Credential"].split("/")
    if len(scope) != 5 or scope[4] != "aws4_request":
        raise PresignRefused("AuthorizationQueryParametersError", "X-Amz-Credential is malformed")
    access_key, date, region, service, _ = scope
    if access_key != credentials[0]:
        raise PresignRefused("InvalidAccessKeyId", "the access key id is not known")
    try:
        signed_at = datetime.strptime(q["X-Amz-Date"], "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC)
        expires = int(q["X-Amz-Expires"])
    except ValueError:
        raise PresignRefused(
            "AuthorizationQueryParametersError", "X-Amz-Date or X-Amz-Expires is malformed"
        ) from None
    if not 1 <= expires <= MAX_EXPIRES:
        raise PresignRefused("AuthorizationQueryParametersError", f"X-Amz-Expires must be 1..{MAX_EXPIRES}")
    if date != q["X-Amz-Date"][:8]:
        raise PresignRefused("AuthorizationQueryParametersError", "credential date differs from X-Amz-Date")
    current = now or datetime.now(UTC)
    if (current - signed_at).total_seconds() > expires:
        raise PresignRefused("AccessDenied", "Request has expired")
    if (signed_at - current).total_seconds() > 15 * 60:
        raise PresignRefused("AccessDenied", "Request is not valid yet")
    signed_names = q["X-Amz-SignedHeaders"].split(";")
    if "host" not in signed_names:
        raise PresignRefused("AuthorizationQueryParametersError", "host must be a signed header")
    canonical_headers = ""
    for name in signed_names:
        value = headers.get(name)
        if value is None:
            raise PresignRefused("SignatureDoesNotMatch", f"signed header {name} is missing")
        canonical_headers += f"{name}:{' '.join(value.strip().split())}\n"
    canonical_query = "&".join(
        f"{_uri_encode(k)}={_uri_encode(v)}" for k, v in sorted(pairs) if k != "X-Amz-Signature"
    )
    canonical_request = "\n".join(
        [
            method.upper(),
            raw_path or "/",  # S3 signs the path as sent (no second encoding, no normalisation)
            canonical_query,
            canonical_headers,
            q["X-Amz-SignedHeaders"],
            "UNSIGNED-PAYLOAD",  # what every SigV4 query-signed S3 request signs
        ]
    )
    string_to_sign = "\n".join(
        [
            "AWS4-HMAC-SHA256",
            q["X-Amz-Date"],
            "/".join(scope[1:]),
            hashlib.sha256(canonical_request.encode()).hexdigest(),
        ]
    )
    expected = hmac.new(
        _signing_key(credentials[1], date, region, service), string_to_sign.encode(), hashlib.sha256
    ).hexdigest()
    if not hmac.compare_digest(expected, q["X-Amz-Signature"]):
        raise PresignRefused(
            "SignatureDoesNotMatch",
            "The request signature we calculated does not match the signature you provided",
        )
