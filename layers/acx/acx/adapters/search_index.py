"""Search indexes in S3: per package, a manifest and immutable segments, beside the canonical JSON.

Layout in the data bucket: ``indexes/<tenant>/<package>/manifest.json`` (which segments are live,
the engine that built them, ids retired by merges) and ``indexes/<tenant>/<package>/seg-<uuid>.bin``.
The manifest is replaced with S3 conditional writes (``If-Match`` its ETag, ``If-None-Match: *`` when
creating it), so two writers never lose each other's segment: the loser gets ``ManifestConflict``
and retries on the fresh manifest. Readers revalidate a cached manifest with ``If-None-Match``
(304: nothing changed, the cached index stays).

What it does NOT stop: anyone with write access to the bucket can replace a segment; a segment is
derived data (rebuilt from the log at will), so results are always re-read from the log rows.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

import orjson
from botocore.exceptions import ClientError

from acx.adapters.objects import VERIFY_CHECKSUM, ObjectStore

MANIFEST_VERSION = 1


class ManifestConflict(Exception):
    """Someone else replaced the manifest since it was read: re-read and retry."""


class SegmentMissing(LookupError):
    """A segment object has no current version (a forget or compaction purged it after the manifest
    that names it was read): the caller rebuilds or purges, it never serves a partial index."""


@dataclass
class Manifest:
    """Which segments make up a package's index, and how it was built."""

    engine: str
    dim: int
    segments: list[str] = field(default_factory=list)
    docs: list[int] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    retired_into: dict[str, str] = field(default_factory=dict)
    etag: str | None = None

    def to_bytes(self) -> bytes:
        return orjson.dumps(
            {
                "v": MANIFEST_VERSION,
                "engine": {"id": self.engine, "dim": self.dim},
                "segments": [{"key": k, "docs": n} for k, n in zip(self.segments, self.docs, strict=True)],
                "deleted": self.deleted,
                "retiredInto": self.retired_into,
            }
        )

    @classmethod
    def from_bytes(cls, data: bytes, etag: str | None) -> Manifest:
        doc: dict[str, Any] = orjson.loads(data)
        if doc.get("v") != MANIFEST_VERSION:
            raise ValueError(f"unknown index manifest version {doc.get('v')!r}")
        return cls(
            engine=str(doc["engine"]["id"]),
            dim=int(doc["engine"]["dim"]),
            segments=[str(s["key"]) for s in doc["segments"]],
            docs=[int(s["docs"]) for s in doc["segments"]],
            deleted=[str(i) for i in doc.get("deleted", [])],
            retired_into={str(k): str(v) for k, v in doc.get("retiredInto", {}).items()},
            etag=etag,
        )


class SearchIndexStore:
    """The index objects of every package in one bucket (the data bucket)."""

    NOT_MODIFIED = object()

    def __init__(self, objects: ObjectStore) -> None:
        self.objects = objects
        self.s3 = objects.s3
        self.bucket = objects.bucket

    @staticmethod
    def prefix(tenant: str, package: str) -> str:
        return f"indexes/{tenant}/{package}/"

    def manifest(self, tenant: str, package: str, if_none_match: str | None = None) -> Any:
        """The manifest, None when the package has no index, or ``NOT_MODIFIED`` (ETag still current)."""
        args: dict[str, Any] = {
            "Bucket": self.bucket,
            "Key": self.prefix(tenant, package) + "manifest.json",
            **VERIFY_CHECKSUM,
        }
        if if_none_match:
            args["IfNoneMatch"] = if_none_match
        try:
            resp = self.s3.get_object(**args)
        except ClientError as exc:
            code = str(exc.response.get("Error", {}).get("Code"))
            status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
            if code == "304" or status == 304:
                return self.NOT_MODIFIED
            if code in ("NoSuchKey", "404", "NotFound"):
                return None
            raise
        return Manifest.from_bytes(resp["Body"].read(), resp.get("ETag"))

    def put_manifest(self, tenant: str, package: str, manifest: Manifest) -> str:
        """Replace the manifest iff it is still the one read (``manifest.etag``; None = create)."""
        args: dict[str, Any] = {
            "Bucket": self.bucket,
            "Key": self.prefix(tenant, package) + "manifest.json",
            "Body": manifest.to_bytes(),
            "ContentType": "application/json",
        }
        if manifest.etag is None:
            args["IfNoneMatch"] = "*"
        else:
            args["IfMatch"] = manifest.etag
        try:
            resp = self.s3.put_object(**args)
        except ClientError as exc:
            code = str(exc.response.get("Error", {}).get("Code"))
            if code in ("PreconditionFailed", "ConditionalRequestConflict", "412", "409"):
                raise ManifestConflict(code) from None
            raise
        return str(resp["ETag"])

    def put_segment(self, tenant: str, package: str, body: bytes) -> str:
        key = f"{self.prefix(tenant, package)}seg-{uuid.uuid4().hex}.bin"
        self.objects.put(key, body, "application/octet-stream")
        return key

    def get_segment(self, key: str) -> bytes:
        """A segment's bytes, without S3's checksum check (the one read that skips it): a segment is
        derived data whose hits are re-read from the log rows, ``Packed.parse`` refuses bytes whose
        sections do not add up, and TLS authenticates the bytes in transit. What that does NOT catch:
        a segment damaged at rest in a way that still parses, which can misrank results until the
        next rebuild or compaction (never show a forgotten or another tenant's memory)."""
        try:
            return self.objects.get(key, checksum=False)
        except ClientError as exc:
            if str(exc.response.get("Error", {}).get("Code")) in ("NoSuchKey", "404", "NotFound"):
                raise SegmentMissing(key) from None
            raise

    def segment_keys(self, tenant: str, package: str) -> list[str]:
        """Every segment key with any stored version (live, replaced or orphaned by a failed writer)."""
        return sorted({k for k, _ in self.objects.versions(self.prefix(tenant, package) + "seg-")})

    def purge(self, key: str) -> None:
        """Delete every version of a segment: a forgotten memory's terms must not survive in one."""
        self.objects.purge(key)
