"""S3 objects: canonical bundles, reports, uploads and cartridges. The only S3 code in the service."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import IO, Any

from botocore.exceptions import ClientError

# Every GetObject asks for the checksum S3 stored with the object, and botocore checks the body
# against it. The S3 client is made with ``response_checksum_validation="when_required"``
# (acx.adapters.aws), under which botocore validates exactly the responses whose request set
# ``ChecksumMode=ENABLED``: what its default, "when_supported", does for every GetObject.
VERIFY_CHECKSUM: dict[str, str] = {"ChecksumMode": "ENABLED"}

# DeleteObjects takes at most 1,000 keys per request (S3 API reference).
DELETE_BATCH = 1000
PURGE_ATTEMPTS = 4


class PurgeIncomplete(Exception):
    """S3 kept some versions of an object after every retry of DeleteObjects.

    DeleteObjects answers 200 even when keys fail: each failure is an entry of the response's
    ``Errors`` list (Key, VersionId, Code, Message). The message names the bucket, key, how many
    versions are left and their error codes; never the object's content.
    """

    def __init__(self, bucket: str, key: str, failures: list[dict[str, str]]) -> None:
        self.bucket = bucket
        self.key = key
        self.failures = failures
        codes = sorted({f.get("Code", "?") for f in failures})
        super().__init__(f"s3://{bucket}/{key}: {len(failures)} version(s) not deleted ({', '.join(codes)})")


@dataclass(frozen=True)
class PresignedUrl:
    url: str
    expires_in: int
    headers: dict[str, str]


class ObjectStore:
    """One bucket. Writes use SSE-KMS when the bucket's default says so (set in template.yaml)."""

    def __init__(self, s3_client: Any, bucket: str, sleep: Callable[[float], None] = time.sleep) -> None:
        self.s3 = s3_client
        self.bucket = bucket
        self._sleep = sleep

    def put(self, key: str, body: bytes, content_type: str = "application/json") -> str | None:
        """Store ``body``; returns the new version id (None on unversioned buckets)."""
        response = self.s3.put_object(Bucket=self.bucket, Key=key, Body=body, ContentType=content_type)
        return response.get("VersionId")

    def upload_file(self, key: str, path: str, content_type: str = "application/octet-stream") -> None:
        # boto3's S3 transfer, called as a function: the service's clients are plain botocore clients
        # (acx.adapters.aws.session), which have no injected upload_file; it is the same code.
        from boto3.s3.inject import upload_file

        upload_file(self.s3, path, self.bucket, key, ExtraArgs={"ContentType": content_type})

    def put_file(self, key: str, fileobj: IO[bytes], content_type: str = "application/json") -> None:
        """Store a file's bytes: multipart above 16 MiB, 8 MiB parts, two in flight (bounded memory)."""
        from boto3.s3.inject import upload_fileobj  # see upload_file
        from boto3.s3.transfer import TransferConfig

        config = TransferConfig(
            multipart_threshold=16 * 1024 * 1024, multipart_chunksize=8 * 1024 * 1024, max_concurrency=2
        )
        upload_fileobj(
            self.s3, fileobj, self.bucket, key, ExtraArgs={"ContentType": content_type}, Config=config
        )

    def get(self, key: str, *, checksum: bool = True) -> bytes:
        """The object's bytes, checked against the checksum S3 stored with it (botocore computes
        the CRC while reading). ``checksum=False`` only for derived data that is re-read from its
        source anyway (the search index's segments: 50 MB at 100k records, ~0.02 s of CPU)."""
        extra = VERIFY_CHECKSUM if checksum else {}
        return self.s3.get_object(Bucket=self.bucket, Key=key, **extra)["Body"].read()  # type: ignore[no-any-return]

    def size(self, key: str) -> int | None:
        """Size of the object, or None when it does not exist."""
        try:
            return int(self.s3.head_object(Bucket=self.bucket, Key=key)["ContentLength"])
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in ("404", "NoSuchKey", "NotFound"):
                return None
            raise

    def chunks(self, key: str, size: int = 1024 * 1024) -> Iterator[bytes]:
        """The object's bytes in chunks of ``size``: a 100 MiB upload is never held at once."""
        body = self.s3.get_object(Bucket=self.bucket, Key=key, **VERIFY_CHECKSUM)["Body"]
        try:
            yield from body.iter_chunks(size)
        finally:
            body.close()

    def keys(self, prefix: str) -> Iterator[str]:
        paginator = self.s3.get_paginator("list_objects_v2")
        for page in paginator.paginate(Bucket=self.bucket, Prefix=prefix):
            for item in page.get("Contents", []):
                yield item["Key"]

    def versions(self, prefix: str) -> Iterator[tuple[str, str]]:
        """Every (key, version id) under ``prefix``, including delete markers and old versions."""
        paginator = self.s3.get_paginator("list_object_versions")
        for page in paginator.paginate(Bucket=self.bucket, Prefix=prefix):
            for item in page.get("Versions", []) + page.get("DeleteMarkers", []):
                yield item["Key"], item.get("VersionId") or "null"

    def purge(self, key: str) -> int:
        """Delete every version of ``key`` (plaintext must not survive in an old version).

        Versions that DeleteObjects lists in ``Errors`` are retried with backoff; if any is still
        there after PURGE_ATTEMPTS rounds, PurgeIncomplete is raised (so the caller fails and is
        retried, never reporting the object gone). It does NOT stop someone who copied the object
        elsewhere (another bucket, a download) before the purge.
        """
        targets = [{"Key": k, "VersionId": v} for k, v in self.versions(key) if k == key]
        if not targets:
            self.s3.delete_object(Bucket=self.bucket, Key=key)
            return 0
        failures: list[dict[str, str]] = []
        for start in range(0, len(targets), DELETE_BATCH):
            failures += self._delete_versions(targets[start : start + DELETE_BATCH])
        if failures:
            raise PurgeIncomplete(self.bucket, key, failures)
        return len(targets)

    def _delete_versions(self, batch: list[dict[str, str]]) -> list[dict[str, str]]:
        """DeleteObjects on ``batch`` until no entry fails or the attempts run out; the last failures."""
        pending = batch
        failures: list[dict[str, str]] = []
        for attempt in range(PURGE_ATTEMPTS):
            if attempt:
                self._sleep(0.2 * 2 ** (attempt - 1))
            response = self.s3.delete_objects(Bucket=self.bucket, Delete={"Objects": pending, "Quiet": True})
            failures = [
                {k: str(e.get(k, "")) for k in ("Key", "VersionId", "Code")}
                for e in response.get("Errors") or []
            ]
            if not failures:
                return []
            failed = {(f["Key"], f["VersionId"] or "null") for f in failures}
            pending = [t for t in pending if (t["Key"], t["VersionId"]) in failed]
            if not pending:  # S3 named versions we did not send: report them, do not loop
                break
        return failures

    def delete(self, key: str) -> None:
        self.s3.delete_object(Bucket=self.bucket, Key=key)

    def presign_put(self, key: str, content_type: str, expires_in: int) -> PresignedUrl:
        """A SigV4 PUT URL bound to one key and content type; the size limit is enforced at ingest."""
        url = self.s3.generate_presigned_url(
            "put_object",
            Params={"Bucket": self.bucket, "Key": key, "ContentType": content_type},
            ExpiresIn=expires_in,
            HttpMethod="PUT",
        )
        return PresignedUrl(url, expires_in, {"Content-Type": content_type})

    def presign_get(self, key: str, expires_in: int) -> PresignedUrl:
        """A SigV4 GET URL for one object. Anyone holding the URL can fetch it until it expires."""
        url = self.s3.generate_presigned_url(
            "get_object", Params={"Bucket": self.bucket, "Key": key}, ExpiresIn=expires_in
        )
        return PresignedUrl(url, expires_in, {})
