"""Presigned object URLs of the local stack: HMAC-SHA256 under a per-data-directory secret.

A URL names the gateway, the bucket and key, and carries ``X-Acx-Expires`` (Unix seconds) and
``X-Acx-Signature``: the HMAC of the method, bucket, key, content type and expiry. The gateway's
object path (:mod:`acx.local.gateway`) serves a request only when :meth:`Presigner.check` recomputes
the same signature, so a URL minted for one upload cannot read, list, overwrite or delete anything
else, nor be used after its expiry or with another content type. The secret is random, created at
the data directory's first start (:mod:`acx.local.embedded.keys`), never a fixed value.

Does NOT stop: a holder of the URL replaying it (any number of times) until it expires, exactly as
S3 allows; anyone who can read the data directory's ``presign.key`` (they can sign any URL).
"""

from __future__ import annotations

import hashlib
import hmac
import time
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import parse_qsl, quote, unquote, urlencode

EXPIRES = "X-Acx-Expires"
SIGNATURE = "X-Acx-Signature"
MAX_EXPIRES = 7 * 24 * 3600  # S3's limit for presigned URLs


@dataclass(frozen=True)
class PresignRefused(Exception):
    """Why the URL is refused, as S3 names it (the message names no secret)."""

    code: str
    message: str


@dataclass(frozen=True)
class PresignedUrl:
    url: str
    expires_in: int
    headers: dict[str, str]


class Presigner:
    """Mints and checks the stack's presigned URLs. ``endpoint`` is the gateway's base URL, set once
    the gateway listens (URLs minted before that have no host and are refused by any client)."""

    def __init__(self, secret: bytes, endpoint: str = "") -> None:
        if len(secret) < 32:
            raise ValueError("the presign secret must be at least 32 bytes")
        self._secret = secret
        self.endpoint = endpoint

    def _signature(self, method: str, bucket: str, key: str, content_type: str, expires: int) -> str:
        msg = "\n".join(("acx-presign/v1", method.upper(), bucket, key, content_type, str(expires)))
        return hmac.new(self._secret, msg.encode(), hashlib.sha256).hexdigest()

    def sign(
        self, method: str, bucket: str, key: str, content_type: str, expires_in: int, now: float | None = None
    ) -> PresignedUrl:
        """A URL for one ``method`` on ``bucket/key``, valid ``expires_in`` seconds."""
        if not 0 < expires_in <= MAX_EXPIRES:
            raise ValueError(f"expires_in must be 1..{MAX_EXPIRES} seconds")
        expires = int(time.time() if now is None else now) + expires_in
        query = urlencode(
            {EXPIRES: str(expires), SIGNATURE: self._signature(method, bucket, key, content_type, expires)}
        )
        url = f"{self.endpoint}/{quote(bucket, safe='')}/{quote(key, safe='/')}?{query}"
        headers = {"Content-Type": content_type} if method.upper() == "PUT" else {}
        return PresignedUrl(url, expires_in, headers)

    def check(
        self,
        method: str,
        raw_path: str,
        raw_query: str,
        headers: Mapping[str, str],
        now: float | None = None,
    ) -> tuple[str, str]:
        """(bucket, key) of a valid, unexpired request; :class:`PresignRefused` otherwise.
        ``headers`` maps lowercase names to values."""
        bucket, _, quoted_key = raw_path.lstrip("/").partition("/")
        params = dict(parse_qsl(raw_query, keep_blank_values=True))
        sig, expires_s = params.get(SIGNATURE), params.get(EXPIRES)
        if not sig or not expires_s or not quoted_key:
            raise PresignRefused("AccessDenied", "Access Denied")
        try:
            expires = int(expires_s)
        except ValueError:
            raise PresignRefused("AuthorizationQueryParametersError", "bad expiry") from None
        content_type = headers.get("content-type", "") if method.upper() == "PUT" else ""
        bucket, key = unquote(bucket), unquote(quoted_key)
        want = self._signature(method, bucket, key, content_type, expires)
        if not hmac.compare_digest(want, sig):
            raise PresignRefused("SignatureDoesNotMatch", "The request signature does not match")
        if (time.time() if now is None else now) > expires:
            raise PresignRefused("AccessDenied", "Request has expired")
        return bucket, key
