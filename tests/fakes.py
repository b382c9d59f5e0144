"""Small in-memory fakes of the interfaces use cases are written against (no moto, no boto3).

They keep only the behaviour the use cases rely on: rows by id in key order with an opaque cursor,
the head's size, lock and checkpoint, jobs with a status, objects with a size. The DynamoDB and S3
adapters themselves are tested against moto in tests/integration; these fakes let each use case's own
rules (validation, 404 vs 423, what is echoed) be tested alone and fast.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from typing import Any

from acx.config import Settings
from acx.core.canonical import dumps_record
from acx.core.package import PackageRef
from acx.core.records import zone_for
from acx.core.rows import ListedRecord, LogRow
from acx.usecases.deps import Deps


@dataclass
class Head:
    size: int = 0


@dataclass
class Appended:
    from_seq: int
    to_seq: int
    size: int
    checkpoint: str


class FakeRows:
    """``log.rows``: memory rows of each package, listed in id order like the ``r#`` sort key."""

    def __init__(self) -> None:
        self.by_package: dict[PackageRef, dict[str, LogRow]] = {}

    def put(self, ref: PackageRef, record: dict[str, Any], *, active: bool = True) -> LogRow:
        rows = self.by_package.setdefault(ref, {})
        row = LogRow(
            id=record["id"],
            seq=len(rows),
            content_hash=f"{len(rows):064x}",
            entry_hash=f"{len(rows) + 1:064x}",
            state="active" if active else "tombstoned",
            record=record if active else None,
            zone=zone_for(record.get("portable")),
            tags=list(record.get("tags", [])),
        )
        rows[row.id] = row
        return row

    def get(self, ref: PackageRef, record_id: str) -> LogRow | None:
        return self.by_package.get(ref, {}).get(record_id)

    def list_active(
        self,
        ref: PackageRef,
        zone: str | None = None,
        tag: str | None = None,
        limit: int = 50,
        cursor: str | None = None,
    ) -> tuple[list[ListedRecord], str | None]:
        start = base64.urlsafe_b64decode(cursor.encode()).decode() if cursor else None
        if start is not None and not start.startswith("r#"):
            raise ValueError("invalid cursor")
        out: list[ListedRecord] = []
        for rid in sorted(self.by_package.get(ref, {})):
            if start is not None and f"r#{rid}" <= start:
                continue
            row = self.by_package[ref][rid]
            if row.state != "active" or (zone and row.zone != zone) or (tag and tag not in row.tags):
                continue
            assert row.record is not None
            out.append(ListedRecord(rid, dumps_record(row.record)))
            if len(out) >= limit:
                return out, base64.urlsafe_b64encode(f"r#{rid}".encode()).decode()
        return out, None

    @staticmethod
    def cursor_after(row: LogRow | ListedRecord) -> str:
        return base64.urlsafe_b64encode(row.key.encode()).decode()


class FakeReceipts:
    def __init__(self) -> None:
        self.leaves: dict[PackageRef, list[bytes]] = {}

    def leaf_hashes(self, ref: PackageRef, size: int) -> list[bytes]:
        return self.leaves.get(ref, [])[:size]


class FakeLog:
    """The log store facade as use cases see it: heads, locks, checkpoints, rows and receipts."""

    def __init__(self) -> None:
        self.rows = FakeRows()
        self.receipts = FakeReceipts()
        self.sizes: dict[PackageRef, int] = {}
        self.locks: dict[PackageRef, bool] = {}
        self.lock_entries: list[tuple[PackageRef, str, bool, str]] = []

    def create(self, ref: PackageRef, size: int = 1) -> None:
        self.sizes[ref] = size

    def package_exists(self, ref: PackageRef) -> bool:
        return ref in self.sizes

    def head(self, ref: PackageRef) -> Head:
        return Head(self.sizes.get(ref, 0))

    def latest_checkpoint(self, ref: PackageRef) -> str | None:
        return f"checkpoint {ref.pk} {self.sizes[ref]}" if ref in self.sizes else None

    def verifier_key(self) -> str:
        return "dev.acx.local+00000000+AAAA"

    def admin_lock(self, ref: PackageRef) -> dict[str, Any] | None:
        return {"locked": self.locks[ref]} if ref in self.locks else None

    def set_admin_lock(self, ref: PackageRef, actor: str, locked: bool, content_hash: str) -> Appended:
        self.locks[ref] = locked
        self.lock_entries.append((ref, actor, locked, content_hash))
        seq = self.sizes[ref]
        self.sizes[ref] = seq + 1
        return Appended(seq, seq, seq + 1, self.latest_checkpoint(ref) or "")


@dataclass
class FakeJobs:
    jobs: dict[tuple[str, str, str, str], dict[str, Any]] = field(default_factory=dict)

    def create(self, tenant: str, package: str, kind: str, job_id: str, **fields: Any) -> None:
        self.jobs[(tenant, package, kind, job_id)] = {"jobId": job_id, "status": "pending", **fields}

    def get(self, tenant: str, package: str, kind: str, job_id: str) -> dict[str, Any] | None:
        return self.jobs.get((tenant, package, kind, job_id))

    def finish(self, tenant: str, package: str, kind: str, job_id: str, status: str, **fields: Any) -> None:
        self.jobs.setdefault((tenant, package, kind, job_id), {"jobId": job_id}).update(
            status=status, **fields
        )


@dataclass
class Presigned:
    url: str
    expires_in: int
    headers: dict[str, str]


@dataclass
class FakeObjects:
    objects: dict[str, bytes] = field(default_factory=dict)
    presigned: list[tuple[str, str, int]] = field(default_factory=list)

    def size(self, key: str) -> int | None:
        return len(self.objects[key]) if key in self.objects else None

    def chunks(self, key: str, size: int = 1024 * 1024) -> Any:
        body = self.objects[key]
        return iter([body[i : i + size] for i in range(0, len(body), size)] or [b""])

    def delete(self, key: str) -> None:
        self.objects.pop(key, None)

    def presign_put(self, key: str, content_type: str, expires_in: int) -> Presigned:
        self.presigned.append((key, content_type, expires_in))
        return Presigned(f"https://uploads.example/{key}?sig", expires_in, {"Content-Type": content_type})


def fake_deps(**settings: Any) -> Deps:
    """A :class:`Deps` of fakes; ``settings`` are environment names (``UPLOAD_URL_TTL=60``)."""
    return Deps(
        settings=Settings(**settings),
        log=FakeLog(),  # type: ignore[arg-type]
        data=FakeObjects(),  # type: ignore[arg-type]
        uploads=FakeObjects(),  # type: ignore[arg-type]
        cartridges=FakeObjects(),  # type: ignore[arg-type]
        jobs=FakeJobs(),  # type: ignore[arg-type]
        signer=None,
    )
