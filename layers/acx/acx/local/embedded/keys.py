"""Key files of a data directory: the Ed25519 checkpoint signer, the forget HMAC key, secrets.

Each file is created once, at the data directory's first start, mode 0600, from ``os.urandom`` (never a
fixed value), written to a temporary file, fsynced and renamed. Each holds its key with a SHA-256 of
it: a flipped byte or a cut file is refused loudly (:class:`KeyFileDamaged`) rather than read as
another key, which would sign checkpoints no earlier witness accepts, or key tombstones that no
longer match the text they block.

What it does NOT stop: anyone who can read the data directory can sign checkpoints and confirm
guessed forgotten text; the files are protected by the file system's permissions only.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519

from acx.core.signing import Algorithm

FORMAT = "acx-key-file/v1"


class KeyFileDamaged(RuntimeError):
    """A key file does not hold what it says: refused, never replaced (a new key would orphan every
    signature or tombstone made with the old one)."""


def fsync_dir(path: Path) -> None:
    """Make a rename or a new file in ``path`` durable (the directory entry itself)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_private(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically, mode 0600: temp file, fsync, rename, fsync the directory."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    fsync_dir(path.parent)


def _digest(kind: str, created: str, key: bytes) -> str:
    return hashlib.sha256(f"{kind}\n{created}\n".encode() + key).hexdigest()


def _dump(kind: str, key: bytes, created: str) -> bytes:
    doc = {
        "format": FORMAT,
        "kind": kind,
        "created": created,
        "key": key.hex(),
        "sha256": _digest(kind, created, key),
    }
    return json.dumps(doc, sort_keys=True).encode() + b"\n"


def _load(path: Path, kind: str, size: int) -> tuple[bytes, dt.datetime]:
    try:
        doc = json.loads(path.read_bytes())
        key = bytes.fromhex(doc["key"])
        created = str(doc["created"])
        ok = (
            doc.get("format") == FORMAT
            and doc.get("kind") == kind
            and len(key) == size
            and _digest(kind, created, key) == doc.get("sha256")
        )
        when = dt.datetime.strptime(created, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=dt.UTC)
    except (ValueError, KeyError, TypeError, AttributeError):
        ok = False
    if not ok:
        raise KeyFileDamaged(f"{path} is not an intact {kind} key file: restore it from a backup")
    return key, when


def key_file(path: Path, kind: str, size: int = 32, *, create: bool) -> tuple[bytes, dt.datetime]:
    """(key, creation time) of the ``kind`` key in ``path``; with ``create``, a new random one when
    the file is absent. Without ``create`` an absent file raises ``FileNotFoundError``."""
    if path.exists():
        return _load(path, kind, size)
    if not create:
        raise FileNotFoundError(path)
    key = os.urandom(size)
    now = dt.datetime.now(dt.UTC).replace(microsecond=0)
    write_private(path, _dump(kind, key, now.strftime("%Y-%m-%dT%H:%M:%SZ")))
    return key, now


def key_bytes(path: Path, kind: str, size: int = 32, *, create: bool) -> bytes:
    """The key of :func:`key_file`, without its creation time."""
    return key_file(path, kind, size, create=create)[0]


def ed25519_key(path: Path, *, create: bool) -> ed25519.Ed25519PrivateKey:
    """The Ed25519 private key kept in ``path`` (its 32-byte seed, checksummed)."""
    return ed25519.Ed25519PrivateKey.from_private_bytes(key_bytes(path, "ed25519", create=create))


class FileSigner:
    """A :class:`acx.core.signing.Signer` whose Ed25519 key lives in a key file (what KMS holds on AWS).
    ``created_at`` (the key's creation, kept in the file) is the trust registry's ``notBefore``, as
    the KMS key's CreationDate is on AWS."""

    algorithm: Algorithm = "ed25519"

    def __init__(self, path: Path, *, create: bool = False) -> None:
        seed, self.created_at = key_file(path, "ed25519", create=create)
        self._key = ed25519.Ed25519PrivateKey.from_private_bytes(seed)
        self._spki = self._key.public_key().public_bytes(
            serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
        )

    def public_key_der(self) -> bytes:
        return self._spki

    def sign(self, message: bytes) -> bytes:
        return self._key.sign(message)


class FileKeyer:
    """A :class:`acx.core.forgetting.Keyer` over the forget HMAC key file (the KMS-derived key on AWS)."""

    def __init__(self, path: Path, *, create: bool = False) -> None:
        self._key = key_bytes(path, "forget-hmac", create=create)

    def key(self) -> bytes:
        return self._key
