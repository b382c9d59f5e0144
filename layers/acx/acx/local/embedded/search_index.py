"""Search indexes on the directory bucket: the manifest replaced by compare-and-swap on its ETag.

The same layout and promises as :mod:`acx.adapters.search_index` (S3 conditional writes): the
manifest's ETag is the SHA-256 of its bytes, ``put_manifest`` replaces it only while it is still the
one read (``ManifestConflict`` otherwise), under a lock of this process; the data directory's lock
keeps every other process out, so no second writer exists to race it.
"""

from __future__ import annotations

import hashlib
import threading
import uuid
from typing import Any

from acx.adapters.search_index import Manifest, ManifestConflict, SegmentMissing
from acx.local.embedded.objects import DirectoryObjects, NoSuchKey


class DirectorySearchIndex:
    """The index objects of every package in the data bucket (implements ``SearchIndexPort``)."""

    NOT_MODIFIED: object = object()

    def __init__(self, objects: DirectoryObjects) -> None:
        self.objects = objects
        self._lock = threading.Lock()

    @staticmethod
    def prefix(tenant: str, package: str) -> str:
        return f"indexes/{tenant}/{package}/"

    def _key(self, tenant: str, package: str) -> str:
        return self.prefix(tenant, package) + "manifest.json"

    def _read(self, tenant: str, package: str) -> tuple[bytes, str] | None:
        try:
            body = self.objects.get(self._key(tenant, package))
        except NoSuchKey:
            return None
        return body, '"' + hashlib.sha256(body).hexdigest() + '"'

    def manifest(self, tenant: str, package: str, if_none_match: str | None = None) -> Any:
        """The manifest, None when there is none, ``NOT_MODIFIED`` while ``if_none_match`` holds."""
        got = self._read(tenant, package)
        if got is None:
            return None
        body, etag = got
        if if_none_match is not None and if_none_match == etag:
            return self.NOT_MODIFIED
        return Manifest.from_bytes(body, etag)

    def put_manifest(self, tenant: str, package: str, manifest: Manifest) -> str:
        """Replace the manifest iff its ETag is still ``manifest.etag`` (None: iff there is none)."""
        body = manifest.to_bytes()
        with self._lock:
            got = self._read(tenant, package)
            if (got[1] if got is not None else None) != manifest.etag:
                raise ManifestConflict("412")
            self.objects.put(self._key(tenant, package), body)
        return '"' + hashlib.sha256(body).hexdigest() + '"'

    def put_segment(self, tenant: str, package: str, body: bytes) -> str:
        key = f"{self.prefix(tenant, package)}seg-{uuid.uuid4().hex}.bin"
        self.objects.put(key, body, "application/octet-stream")
        return key

    def get_segment(self, key: str) -> bytes:
        """A segment's bytes (checksum checked: reading it locally costs little)."""
        try:
            return self.objects.get(key)
        except NoSuchKey:
            raise SegmentMissing(key) from None

    def segment_keys(self, tenant: str, package: str) -> list[str]:
        return sorted({k for k, _ in self.objects.versions(self.prefix(tenant, package) + "seg-")})

    def purge(self, key: str) -> None:
        """Every version of the index object goes: a forgotten memory's terms must not survive."""
        self.objects.purge(key)
