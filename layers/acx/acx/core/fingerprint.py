"""Repository identity, codebase fingerprints and content addresses (ACX v0.1 §7).

The codebase fingerprint ties a field-learned memory to one repository without revealing which: it
is an HMAC keyed by the installation's secret salt. The content address identifies what a memory
says (not where it came from), so the merge can fold copies of the same lesson.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from typing import Any

from acx.core.canonical import dumps_record
from acx.core.records import zone_of

MIN_SALT_BYTES = 32
_SCHEME_RE = re.compile(r"^([a-z][a-z0-9+.-]*)://(.*)$", re.DOTALL)
_DEFAULT_PORTS = {"https": ":443", "http": ":80", "ssh": ":22", "git+ssh": ":22", "ssh+git": ":22"}
# ECMAScript String.prototype.trim whitespace (WhiteSpace + LineTerminator), which is not Python's.
_JS_WHITESPACE = (
    "\t\n\x0b\x0c\r \xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000\ufeff"
)


def canonical_repo_identity(origin: str) -> str:
    """Reduce a git origin URL to ``host/path`` (or pass ``commit:<sha>`` through), per the standard."""
    text = origin.strip().lower()
    if not text:
        raise ValueError("empty repository origin")
    if text.startswith("commit:"):
        return text
    match = _SCHEME_RE.match(text)
    if match is not None:
        scheme, rest = match.group(1), match.group(2)
        authority, slash, path = rest.partition("/")
        authority = authority.rpartition("@")[2]
        port = _DEFAULT_PORTS.get(scheme)
        if port is not None and authority.endswith(port):
            authority = authority[: -len(port)]
        identity = authority + slash + path
    else:
        # scp-like form: [user@]host:path
        head, slash, tail = text.partition("/")  # only a user@ before the first slash is credentials
        identity = head.rpartition("@")[2] + slash + tail if "@" in head else text
        host, colon, path = identity.partition(":")
        if colon and "/" not in host:
            identity = f"{host}/{path.lstrip('/')}"
    identity = identity.rstrip("/")
    if identity.endswith(".git"):
        identity = identity[:-4].rstrip("/")
    if not identity:
        raise ValueError("repository origin has no host or path")
    return identity


def codebase_fingerprint(salt: bytes, identity: str) -> str:
    """``cbf1_`` + 40 hex of HMAC-SHA-256(salt, identity); the salt must be at least 32 bytes."""
    if len(salt) < MIN_SALT_BYTES:
        raise ValueError(f"installation salt must be at least {MIN_SALT_BYTES} bytes")
    return "cbf1_" + hmac.new(salt, identity.encode("utf-8"), hashlib.sha256).hexdigest()[:40]


def _text(record: dict[str, Any], name: str) -> str:
    value = record.get(name)
    return value.strip(_JS_WHITESPACE).lower() if isinstance(value, str) else ""


def _utf16_key(text: str) -> bytes:
    return text.encode("utf-16-be", "surrogatepass")


def artifact_object(record: dict[str, Any]) -> dict[str, Any]:
    """The normalised content object the artifact fingerprint is taken over."""
    tags = record.get("tags")
    timestamp = record.get("timestamp")
    impact = record.get("impact")
    xp = record.get("xpAwarded")
    return {
        "title": _text(record, "title"),
        "summary": _text(record, "summary"),
        "sourceType": _text(record, "sourceType"),
        "repoId": record.get("repoId"),
        "projectLabel": _text(record, "projectLabel"),
        "timestamp": "" if timestamp is None else timestamp,
        "impact": "neutral" if impact is None else impact,
        "xpAwarded": 0 if xp is None else xp,
        # JavaScript's default sort compares UTF-16 code units; so does comparing UTF-16-BE bytes.
        "tags": sorted((t.lower() for t in tags), key=_utf16_key) if tags else [],
    }


def content_address(record: dict[str, Any]) -> str:
    """Full sha1 hex over the canonical artifact object: the record's content, tier aside."""
    return hashlib.sha1(dumps_record(artifact_object(record)), usedforsecurity=False).hexdigest()


def artifact_fingerprint(record: dict[str, Any]) -> str:
    """The 10-hex interchange ``artifactFingerprint`` (40 bits; not unique enough for a slot key)."""
    return content_address(record)[:10]


def slot_key(record: dict[str, Any]) -> str:
    """The merge's content slot: content address, zone and codebase, so tiers never fold together."""
    return f"{content_address(record)}|{zone_of(record)}|{record.get('codebaseFingerprint') or ''}"
