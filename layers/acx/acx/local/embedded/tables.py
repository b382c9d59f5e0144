"""Jobs, idempotency records and the catalog on the embedded SQLite file: the rest of what DynamoDB
holds (:mod:`acx.adapters.jobs`, :mod:`acx.adapters.idempotency`, :mod:`acx.adapters.catalog`)."""

from __future__ import annotations

import base64
import builtins
import hashlib
import json
import time
from collections.abc import Callable
from typing import Any

import jmespath

from acx.core.faults import IdempotencyInProgress, IdempotencyKeyReused
from acx.core.package import PackageRef
from acx.local.embedded.db import Database

Request = dict[str, Any]
Call = Callable[[Request, bytes], dict[str, Any]]


def _dump(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


def _cursor(*parts: str) -> str:
    return base64.urlsafe_b64encode(_dump(list(parts)).encode()).decode()


def _uncursor(cursor: str, *prefix: str) -> list[str]:
    """The key a cursor we issued names, whose leading parts must be ``prefix`` (a cursor cannot move
    a listing into another tenant's, package's or kind's keys); ``ValueError`` otherwise."""
    try:
        parts = json.loads(base64.urlsafe_b64decode(cursor.encode()))
    except (ValueError, UnicodeDecodeError):
        raise ValueError("invalid cursor") from None
    if (
        not isinstance(parts, list)
        or len(parts) != len(prefix) + 1
        or not all(isinstance(p, str) for p in parts)
        or tuple(parts[: len(prefix)]) != prefix
    ):
        raise ValueError("invalid cursor")
    return parts


class SqliteJobs:
    """Upload and export jobs (:class:`acx.usecases.ports.JobsPort`), as :class:`acx.adapters.jobs.JobStore`
    keeps them: status and creation time beside the other fields as one JSON object."""

    def __init__(self, db: Database, clock: Callable[[], float] = time.time) -> None:
        self.db = db
        self.clock = clock

    @staticmethod
    def _decode(kind: str, job_id: str, status: str, created: int, data: str) -> dict[str, Any]:
        out = dict(json.loads(data))
        out.update(status=status, createdAt=created, kind=kind, jobId=job_id)
        return out

    def create(self, tenant: str, package: str, kind: str, job_id: str, **fields: Any) -> None:
        """A new job; ``ValueError`` if that id exists (the first one stands)."""
        status = fields.pop("status", "pending")
        pk = PackageRef(tenant, package).pk
        with self.db.transaction() as cx:
            if cx.execute(
                "SELECT 1 FROM jobs WHERE pk = ? AND kind = ? AND job_id = ?", (pk, kind, job_id)
            ).fetchone():
                raise ValueError(f"job {kind}#{job_id} exists")
            cx.execute(
                "INSERT INTO jobs (pk, kind, job_id, status, created_at, data) VALUES (?, ?, ?, ?, ?, ?)",
                (pk, kind, job_id, status, int(self.clock()), _dump(fields)),
            )

    def get(self, tenant: str, package: str, kind: str, job_id: str) -> dict[str, Any] | None:
        r = self.db.one(
            "SELECT status, created_at, data FROM jobs WHERE pk = ? AND kind = ? AND job_id = ?",
            (PackageRef(tenant, package).pk, kind, job_id),
        )
        return self._decode(kind, job_id, *r) if r else None

    def finish(
        self,
        tenant: str,
        package: str,
        kind: str,
        job_id: str,
        status: str,
        expect: str | None = "pending",
        **fields: Any,
    ) -> bool:
        """Move a job to ``status`` from ``expect`` (None: from any); False when it is not there or
        another worker moved it first (a redelivery)."""
        pk = PackageRef(tenant, package).pk
        with self.db.transaction() as cx:
            r = cx.execute(
                "SELECT status, data FROM jobs WHERE pk = ? AND kind = ? AND job_id = ?", (pk, kind, job_id)
            ).fetchone()
            if r is None or (expect is not None and r[0] != expect):
                return False
            data = {**json.loads(r[1]), **fields}
            cx.execute(
                "UPDATE jobs SET status = ?, data = ? WHERE pk = ? AND kind = ? AND job_id = ?",
                (status, _dump(data), pk, kind, job_id),
            )
        return True

    def list(self, tenant: str, package: str, kind: str) -> builtins.list[dict[str, Any]]:
        got = self.db.query(
            "SELECT job_id, status, created_at, data FROM jobs WHERE pk = ? AND kind = ? ORDER BY job_id",
            (PackageRef(tenant, package).pk, kind),
        )
        return [self._decode(kind, *r) for r in got]

    def page(
        self, tenant: str, package: str, kind: str, limit: int, cursor: str | None
    ) -> tuple[builtins.list[dict[str, Any]], str | None]:
        """Up to ``limit`` jobs in id order and the cursor after them (opaque; one naming another
        package's or kind's key is refused with ``ValueError``)."""
        pk = PackageRef(tenant, package).pk
        after = _uncursor(cursor, pk, kind)[-1] if cursor else ""
        got = self.db.query(
            "SELECT job_id, status, created_at, data FROM jobs WHERE pk = ? AND kind = ? AND job_id > ? "
            "ORDER BY job_id LIMIT ?",
            (pk, kind, after, limit + 1),
        )
        out = [self._decode(kind, *r) for r in got[:limit]]
        return out, (_cursor(pk, kind, out[-1]["jobId"]) if len(got) > limit and out else None)


class SqliteIdempotency:
    """Runs a request handler once per idempotency key (:class:`acx.usecases.ports.IdempotencyPort`),
    with the rules of powertools' idempotency utility that :class:`acx.adapters.idempotency.IdempotencyStore`
    uses: the key and the payload are JMESPath expressions over the request, hashed; a retry with the
    same key and payload gets the first call's result; one whose payload differs is refused
    (``IdempotencyKeyReused``); one while the first still runs is refused (``IdempotencyInProgress``);
    a call that raises leaves no record (the retry runs again); a record expires after
    ``expires_after_seconds``, and an in-progress one when the Lambda context's remaining time has run.

    It does NOT stop a client that sends a new key for the same body (a new request), nor dedupe past
    a record's expiry.
    """

    def __init__(self, db: Database, clock: Callable[[], float] = time.time) -> None:
        self.db = db
        self.clock = clock

    @staticmethod
    def _hash(value: Any) -> str:
        return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()

    def once(
        self, fn: Call, *, name: str, key: str, payload: str, expires_after_seconds: int
    ) -> Callable[[Request, bytes, Any], dict[str, Any]]:
        key_path, payload_path = jmespath.compile(key), jmespath.compile(payload)

        def call(request: Request, body: bytes, lambda_context: Any) -> dict[str, Any]:
            value = key_path.search(request)
            if value is None or (isinstance(value, list | tuple) and all(v is None for v in value)):
                raise ValueError(f"no idempotency key in the request ({key})")
            record_key = f"{name}#{self._hash(value)}"
            payload_hash = self._hash(payload_path.search(request))
            now = self.clock()
            remaining = getattr(lambda_context, "get_remaining_time_in_millis", None)
            until = now + remaining() / 1000 if callable(remaining) else None
            with self.db.transaction() as cx:
                r = cx.execute(
                    "SELECT status, payload_hash, response, expires, in_progress_until FROM idempotency "
                    "WHERE key = ?",
                    (record_key,),
                ).fetchone()
                live = (
                    r is not None
                    and r[3] >= int(now)
                    and not (r[0] == "INPROGRESS" and r[4] is not None and r[4] < now)
                )
                if live:
                    status, stored_hash, response = r[0], r[1], r[2]
                    if stored_hash != payload_hash:
                        raise IdempotencyKeyReused("Payload does not match stored record for this event key")
                    if status == "INPROGRESS":
                        raise IdempotencyInProgress(
                            f"Execution already in progress with idempotency key {key}"
                        )
                    return dict(json.loads(response)) if response else {}
                cx.execute(
                    "INSERT OR REPLACE INTO idempotency (key, status, payload_hash, response, expires, "
                    "in_progress_until) VALUES (?, 'INPROGRESS', ?, NULL, ?, ?)",
                    (record_key, payload_hash, int(now + expires_after_seconds), until),
                )
            try:
                result = fn(request, body)
            except BaseException:
                with self.db.transaction() as cx:
                    cx.execute("DELETE FROM idempotency WHERE key = ?", (record_key,))
                raise
            with self.db.transaction() as cx:
                cx.execute(
                    "UPDATE idempotency SET status = 'COMPLETED', response = ?, expires = ? WHERE key = ?",
                    (_dump(result), int(self.clock() + expires_after_seconds), record_key),
                )
            return result

        return call


class SqliteCatalog:
    """Read-only listings across packages (:class:`acx.usecases.ports.CatalogPort`): a tenant's
    packages from the heads' (tenant, package) index, and a package's active memories from the active
    rows' index."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def packages(self, tenant: str, limit: int, cursor: str | None) -> tuple[list[str], str | None]:
        after = _uncursor(cursor, tenant)[-1] if cursor else ""
        got = [
            str(r[0])
            for r in self.db.query(
                "SELECT package FROM heads WHERE tenant = ? AND package > ? ORDER BY package LIMIT ?",
                (tenant, after, limit + 1),
            )
        ]
        page = got[:limit]
        return page, (_cursor(tenant, page[-1]) if len(got) > limit and page else None)

    def active_records(self, tenant: str, package: str) -> int:
        r = self.db.one(
            "SELECT COUNT(*) FROM rows WHERE pk = ? AND state = 'active'", (PackageRef(tenant, package).pk,)
        )
        return int(r[0]) if r else 0
