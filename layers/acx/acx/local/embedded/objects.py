"""A bucket as a directory: what S3 holds for the service, on the local file system.

Layout: ``<root>/<bucket>/<seg>/.../<last>@o/`` per key, each ``/``-separated segment percent-encoded
(dots too, so no segment is ``.`` or ``..``; a long one is hashed), the key itself in the object
directory's ``.key`` file. Each version is one file ``<seq>-<sha256>.v`` (``seq``: nanoseconds, unique
and increasing in this process), a delete marker ``<seq>-d.x``: the current version is the largest
``seq``, as in a versioned S3 bucket, and ``purge`` removes every version.

A write is atomic and durable before it returns: temporary file, fsync, rename, fsync of the
directory. A reader sees the old version or the new one, never a part. The SHA-256 in the name is
checked on every read with ``checksum`` (what S3's stored checksum does) and by :meth:`check` at start:
a damaged object is refused loudly (:class:`ObjectDamaged`), never served.

What it does NOT stop: anyone with write access to the directory can replace an object together with
its checksum; the file system's permissions are the boundary.
"""

from __future__ import annotations

import hashlib
import os
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any
from urllib.parse import quote

from acx.local.embedded.keys import fsync_dir
from acx.local.presigned import PresignedUrl, Presigner

OBJECT_SUFFIX = "@o"
KEY_FILE = ".key"
TMP_PREFIX = ".tmp-"
CHUNK = 1024 * 1024

_seq_lock = threading.Lock()
_last_seq = 0


def _next_seq() -> int:
    """A version number larger than any this process handed out before (nanoseconds since the epoch)."""
    global _last_seq
    with _seq_lock:
        _last_seq = max(time.time_ns(), _last_seq + 1)
        return _last_seq


class NoSuchKey(KeyError):
    """The key has no current version (never written, deleted or purged)."""


class ObjectDamaged(RuntimeError):
    """A stored version's bytes do not match the checksum it was written with."""


def _segment(seg: str) -> str:
    if not seg:
        return "@e"
    enc = quote(seg, safe="-_").replace(".", "%2E")
    if len(enc) > 200:
        return "@h" + hashlib.sha256(seg.encode()).hexdigest()
    return enc


def _version_name(name: str) -> tuple[int, str] | None:
    """(seq, sha256 or "" for a delete marker) of a version file name; None for any other file."""
    stem, dot, ext = name.rpartition(".")
    if not dot or ext not in ("v", "x"):
        return None
    seq, _, digest = stem.partition("-")
    if not seq.isdigit():
        return None
    return int(seq), ("" if ext == "x" else digest)


class DirectoryObjects:
    """One bucket under ``root`` (implements :class:`acx.usecases.ports.ObjectsPort`)."""

    def __init__(self, root: Path, bucket: str, presigner: Presigner, *, fsync: bool = True) -> None:
        self.root = Path(root)
        self.bucket = bucket
        self.base = self.root / bucket
        self.presigner = presigner
        self.fsync = fsync
        self.base.mkdir(parents=True, exist_ok=True, mode=0o700)

    # -- layout
    def _dir(self, key: str) -> Path:
        *parents, last = key.split("/")
        path = self.base
        for seg in parents:
            path = path / _segment(seg)
        return path / (_segment(last) + OBJECT_SUFFIX)

    def _prepare(self, key: str) -> Path:
        """The object's directory, created (and made durable) on its first write."""
        path = self._dir(key)
        if path.is_dir():
            return path
        missing = []
        p = path
        while not p.exists():
            missing.append(p)
            p = p.parent
        path.mkdir(parents=True, exist_ok=True, mode=0o700)
        self._write(path / KEY_FILE, key.encode())
        if self.fsync:
            for made in reversed(missing):
                fsync_dir(made.parent)
        return path

    def _write(self, target: Path, body: bytes) -> None:
        tmp = target.with_name(f"{TMP_PREFIX}{uuid.uuid4().hex}")
        with open(tmp, "wb") as f:
            f.write(body)
            if self.fsync:
                f.flush()
                os.fsync(f.fileno())
        os.replace(tmp, target)
        if self.fsync:
            fsync_dir(target.parent)

    def _versions(self, path: Path) -> list[tuple[int, str, Path]]:
        try:
            names = os.listdir(path)
        except FileNotFoundError:
            return []
        out = []
        for name in names:
            parsed = _version_name(name)
            if parsed is not None:
                out.append((parsed[0], parsed[1], path / name))
        out.sort()
        return out

    def _current(self, key: str) -> tuple[str, Path]:
        versions = self._versions(self._dir(key))
        if not versions or not versions[-1][1]:
            raise NoSuchKey(key)
        return versions[-1][1], versions[-1][2]

    # -- writes
    def put(self, key: str, body: bytes, content_type: str = "application/json") -> str | None:
        """Store ``body`` as the key's new version; returns its version id."""
        path = self._prepare(key)
        seq = _next_seq()
        self._write(path / f"{seq:020d}-{hashlib.sha256(body).hexdigest()}.v", bytes(body))
        return str(seq)

    def put_file(self, key: str, fileobj: IO[bytes], content_type: str = "application/json") -> None:
        """Store what ``fileobj`` reads, a chunk at a time (bounded memory)."""
        self.put_stream(key, iter(lambda: fileobj.read(CHUNK), b""))

    def put_stream(self, key: str, chunks: Iterator[bytes]) -> tuple[str, int, str]:
        """Store the chunks as one new version; (version id, size, sha256). Nothing is stored if the
        iterator raises (the temporary file is removed)."""
        path = self._prepare(key)
        tmp = path / f"{TMP_PREFIX}{uuid.uuid4().hex}"
        digest, size = hashlib.sha256(), 0
        try:
            with open(tmp, "wb") as f:
                for chunk in chunks:
                    digest.update(chunk)
                    size += len(chunk)
                    f.write(chunk)
                if self.fsync:
                    f.flush()
                    os.fsync(f.fileno())
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        seq = _next_seq()
        os.replace(tmp, path / f"{seq:020d}-{digest.hexdigest()}.v")
        if self.fsync:
            fsync_dir(path)
        return str(seq), size, digest.hexdigest()

    def upload_file(self, key: str, path: str, content_type: str = "application/octet-stream") -> None:
        with open(path, "rb") as f:
            self.put_file(key, f, content_type)

    def delete(self, key: str) -> None:
        """A delete marker on top (older versions stay until purged), as in a versioned bucket."""
        path = self._dir(key)
        versions = self._versions(path)
        if not versions or not versions[-1][1]:
            return
        self._write(path / f"{_next_seq():020d}-d.x", b"")

    def purge(self, key: str) -> int:
        """Remove every version of ``key`` (and its directory); how many were removed."""
        path = self._dir(key)
        versions = self._versions(path)
        for _, _, file in versions:
            file.unlink(missing_ok=True)
        if path.is_dir():
            for leftover in path.iterdir():
                leftover.unlink(missing_ok=True)
            path.rmdir()
            if self.fsync:
                fsync_dir(path.parent)
        return len(versions)

    # -- reads
    def get(self, key: str, *, checksum: bool = True) -> bytes:
        """The current bytes; ``checksum``: compared with the SHA-256 they were written with."""
        digest, file = self._current(key)
        try:
            body = file.read_bytes()
        except FileNotFoundError:  # purged between listing and reading
            raise NoSuchKey(key) from None
        if checksum and hashlib.sha256(body).hexdigest() != digest:
            raise ObjectDamaged(f"{self.bucket}/{key}: stored bytes do not match their checksum")
        return body

    def size(self, key: str) -> int | None:
        try:
            return self._current(key)[1].stat().st_size
        except (NoSuchKey, FileNotFoundError):
            return None

    def chunks(self, key: str, size: int = CHUNK) -> Iterator[bytes]:
        """The current bytes in chunks; the checksum is checked as they stream, and a mismatch raises
        after the last chunk (the consumer must not commit what it read before that)."""
        digest, file = self._current(key)
        h = hashlib.sha256()
        with open(file, "rb") as f:
            while chunk := f.read(size):
                h.update(chunk)
                yield chunk
        if h.hexdigest() != digest:
            raise ObjectDamaged(f"{self.bucket}/{key}: stored bytes do not match their checksum")

    def _object_dirs(self, prefix: str) -> Iterator[Path]:
        """Every object directory whose key may start with ``prefix`` (walks only below the prefix's
        complete segments)."""
        *parents, _ = prefix.split("/")
        start = self.base
        for seg in parents:
            start = start / _segment(seg)
        if not start.is_dir():
            return
        for dirpath, dirnames, _ in os.walk(start):
            dirnames.sort()
            for name in list(dirnames):
                if name.endswith(OBJECT_SUFFIX):
                    yield Path(dirpath) / name

    def _key_of(self, path: Path) -> str | None:
        try:
            return (path / KEY_FILE).read_text(encoding="utf-8")
        except FileNotFoundError:
            return None

    def keys(self, prefix: str) -> Iterator[str]:
        """Keys under ``prefix`` with a current version, in key order."""
        found = []
        for path in self._object_dirs(prefix):
            key = self._key_of(path)
            versions = self._versions(path)
            if key is not None and key.startswith(prefix) and versions and versions[-1][1]:
                found.append(key)
        yield from sorted(found)

    def versions(self, prefix: str) -> Iterator[tuple[str, str]]:
        """(key, version id) of every version under ``prefix``, delete markers included."""
        found = []
        for path in self._object_dirs(prefix):
            key = self._key_of(path)
            if key is not None and key.startswith(prefix):
                found += [(key, str(seq)) for seq, _, _ in self._versions(path)]
        yield from sorted(found)

    # -- presigned URLs (checked by the gateway's object path)
    def presign_put(self, key: str, content_type: str, expires_in: int) -> PresignedUrl:
        return self.presigner.sign("PUT", self.bucket, key, content_type, expires_in)

    def presign_get(self, key: str, expires_in: int) -> PresignedUrl:
        """Anyone holding the URL can fetch the object until it expires."""
        return self.presigner.sign("GET", self.bucket, key, "", expires_in)

    # -- at start
    def check(self) -> int:
        """Verify every stored version against its checksum; ``ObjectDamaged`` names the first bad one.
        Temporary files (writes that never returned) are left alone: nothing is deleted at start.
        Returns the versions checked."""
        checked = 0
        for dirpath, _, filenames in os.walk(self.base):
            for name in filenames:
                path = Path(dirpath) / name
                parsed = _version_name(name)
                if parsed is None or not parsed[1]:
                    continue
                h = hashlib.sha256()
                with open(path, "rb") as f:
                    while chunk := f.read(CHUNK):
                        h.update(chunk)
                if h.hexdigest() != parsed[1]:
                    raise ObjectDamaged(f"{path}: stored bytes do not match their checksum")
                checked += 1
        return checked

    def any_object(self) -> bool:
        """Whether the bucket holds any object directory (a data directory in use)."""
        return next(self._object_dirs(""), None) is not None


def conformance(objects: DirectoryObjects) -> Any:
    """Never called: mypy checks the class against its port."""
    from acx.usecases.ports import ObjectsPort

    port: ObjectsPort = objects
    return port
