"""Small in-memory fakes of the ports use cases are written against (no moto, no boto3).

They keep only the behaviour the use cases rely on: a chained log (real entries and signed
checkpoints, rows by id in key order with an opaque cursor, slot pointers, tombstones), jobs with a
status, a versioned bucket, queue, alarms, catalog and index. The AWS adapters themselves are tested
against moto in tests/integration; these fakes let each use case's own rules (validation, 404 vs 423,
what is echoed) be tested alone and fast. mypy checks each one against its port
(:mod:`acx.usecases.ports`): ``fake_deps`` and ``_conformance`` assign them, with no ignore.
"""

from __future__ import annotations

import base64
import builtins
import dataclasses
import hashlib
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from acx.adapters.search_index import Manifest, ManifestConflict, SegmentMissing
from acx.config import Settings
from acx.core import erasure, forgetting, merkle
from acx.core import log as logcore
from acx.core.append import AppendPlan, EntrySpec, LogHead, plan_append
from acx.core.canonical import dumps_record, sha256_hex
from acx.core.checkpoint import NoteSigner
from acx.core.faults import Locked
from acx.core.log import Entry
from acx.core.package import PackageRef
from acx.core.records import zone_for
from acx.core.review import attribution, check_admitted, decision_specs
from acx.core.rows import (
    AppendResult,
    Conflict,
    Edit,
    FileRow,
    FileWrite,
    ForgetResult,
    ListedRecord,
    LogRow,
    Lookup,
    NotFound,
    RecordWrite,
    RowReads,
    Tombstones,
    VersionRow,
)
from acx.core.signing import LocalEd25519Signer
from acx.usecases import ingest
from acx.usecases.deps import Deps
from acx.usecases.ingest import IngestSummary
from acx.usecases.ports import (
    AlarmsPort,
    CatalogPort,
    IndexHooks,
    JobsPort,
    LogPort,
    ObjectsPort,
    QueuePort,
    SearchIndexPort,
)
from tests.factories import bundle_json


@dataclass
class FakeJobs:
    """``JobStore``: jobs by (tenant, package, kind, id); ``finish`` moves a job only from ``expect``."""

    jobs: dict[tuple[str, str, str, str], dict[str, Any]] = field(default_factory=dict)

    def create(self, tenant: str, package: str, kind: str, job_id: str, **fields: Any) -> None:
        status = fields.pop("status", "pending")
        self.jobs[(tenant, package, kind, job_id)] = {
            "jobId": job_id,
            "kind": kind,
            "status": status,
            "createdAt": len(self.jobs),
            **fields,
        }

    def get(self, tenant: str, package: str, kind: str, job_id: str) -> dict[str, Any] | None:
        job = self.jobs.get((tenant, package, kind, job_id))
        return dict(job) if job is not None else None

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
        job = self.jobs.get((tenant, package, kind, job_id))
        if job is None or (expect is not None and job["status"] != expect):
            return False
        job.update(status=status, **fields)
        return True

    def list(self, tenant: str, package: str, kind: str) -> builtins.list[dict[str, Any]]:
        return [
            dict(j) for (t, p, k, _), j in sorted(self.jobs.items()) if (t, p, k) == (tenant, package, kind)
        ]

    def page(
        self, tenant: str, package: str, kind: str, limit: int, cursor: str | None
    ) -> tuple[builtins.list[dict[str, Any]], str | None]:
        jobs = self.list(tenant, package, kind)
        if cursor is not None and cursor not in {j["jobId"] for j in jobs}:
            raise ValueError("invalid cursor")
        start = next((i + 1 for i, j in enumerate(jobs) if j["jobId"] == cursor), 0)
        page = jobs[start : start + limit]
        more = start + limit < len(jobs)
        return page, (page[-1]["jobId"] if more and page else None)


@dataclass
class Presigned:
    url: str
    expires_in: int
    headers: dict[str, str]


@dataclass
class FakeObjects:
    """``ObjectStore`` of a versioned bucket: ``objects`` holds each key's current bytes, ``history``
    every version ever written (``purge`` removes them all, ``delete`` only the current one)."""

    objects: dict[str, bytes] = field(default_factory=dict)
    history: dict[str, list[bytes]] = field(default_factory=dict)
    presigned: list[tuple[str, str, int]] = field(default_factory=list)
    purged: list[str] = field(default_factory=list)

    def put(self, key: str, body: bytes, content_type: str = "application/json") -> str:
        self.objects[key] = bytes(body)
        self.history.setdefault(key, []).append(bytes(body))
        return str(len(self.history[key]))

    def put_file(self, key: str, fileobj: Any, content_type: str = "application/json") -> None:
        self.put(key, fileobj.read(), content_type)

    def upload_file(self, key: str, path: str, content_type: str = "application/octet-stream") -> None:
        with open(path, "rb") as f:
            self.put(key, f.read(), content_type)

    def get(self, key: str, *, checksum: bool = True) -> bytes:
        return self.objects[key]

    def size(self, key: str) -> int | None:
        return len(self.objects[key]) if key in self.objects else None

    def chunks(self, key: str, size: int = 1024 * 1024) -> Any:
        body = self.objects[key]
        return iter([body[i : i + size] for i in range(0, len(body), size)] or [b""])

    def keys(self, prefix: str) -> Any:
        return iter(sorted(k for k in self.objects if k.startswith(prefix)))

    def versions(self, prefix: str) -> Any:
        return iter(
            [
                (k, str(i))
                for k, vs in sorted(self.history.items())
                if k.startswith(prefix)
                for i in range(len(vs))
            ]
        )

    def purge(self, key: str) -> int:
        self.objects.pop(key, None)
        self.purged.append(key)
        return len(self.history.pop(key, []))

    def delete(self, key: str) -> None:
        self.objects.pop(key, None)

    def presign_put(self, key: str, content_type: str, expires_in: int) -> Presigned:
        self.presigned.append((key, content_type, expires_in))
        return Presigned(f"https://uploads.example/{key}?sig", expires_in, {"Content-Type": content_type})

    def presign_get(self, key: str, expires_in: int) -> Presigned:
        self.presigned.append((key, "GET", expires_in))
        return Presigned(f"https://cartridges.example/{key}?sig", expires_in, {})


def fake_deps(**settings: Any) -> Deps:
    """A :class:`Deps` of fakes over a :class:`ChainedLog`, signing with a local Ed25519 key;
    ``settings`` are environment names (``UPLOAD_URL_TTL=60``)."""
    data = FakeObjects()
    cfg = Settings(**settings)
    return Deps(
        settings=cfg,
        log=ChainedLog(cfg.publisher_id),
        data=data,
        uploads=FakeObjects(),
        cartridges=FakeObjects(),
        jobs=FakeJobs(),
        signer=LocalEd25519Signer(),
        index_store=FakeIndexStore(data),
    )


# ---- a log that chains: entries, checkpoints, rows and tombstones as the verifier will read them ----


class ChainedRows:
    """``ChainedLog``'s rows: memory rows of each package in id order (like the ``r#`` sort key), file
    rows, slot pointers and tombstones."""

    def __init__(self) -> None:
        self.by_package: dict[PackageRef, dict[str, LogRow]] = {}
        self.files: dict[PackageRef, dict[str, FileRow]] = {}
        self.slots: dict[PackageRef, dict[str, str]] = {}
        self.stones: dict[PackageRef, dict[str, int]] = {}  # "k#"/"i#"/"f#" + key -> forget seq
        self.bands: dict[PackageRef, dict[str, dict[str, tuple[tuple[int, ...], int]]]] = {}
        self.policies: dict[PackageRef, str] = {}
        self.ended: dict[PackageRef, dict[str, VersionRow]] = {}  # ended versions by v# key

    def versions(self, ref: PackageRef, record_id: str) -> list[VersionRow]:
        return [v for v in self.all_versions(ref) if v.id == record_id]

    def all_versions(self, ref: PackageRef) -> Iterator[VersionRow]:
        mine = self.ended.get(ref, {})
        return iter([mine[k] for k in sorted(mine)])

    def put(self, ref: PackageRef, record: dict[str, Any], *, active: bool = True) -> LogRow:
        """Plant a row with no receipt (tests of the read paths and of the verifier)."""
        rows = self.of(ref)
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
        trust: str | None = None,
        agent: str | None = None,
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
            if (trust and row.trust != trust) or (agent and row.agent != agent):
                continue
            assert row.record is not None
            out.append(ListedRecord(rid, dumps_record(row.record), row.trust, row.actor, row.agent))
            if len(out) >= limit:
                return out, base64.urlsafe_b64encode(f"r#{rid}".encode()).decode()
        return out, None

    @staticmethod
    def cursor_after(row: LogRow | ListedRecord) -> str:
        return base64.urlsafe_b64encode(row.key.encode()).decode()

    def of(self, ref: PackageRef) -> dict[str, LogRow]:
        return self.by_package.setdefault(ref, {})

    def lookup(self, ref: PackageRef, ids: set[str], slots: set[str]) -> Lookup:
        rows = self.of(ref)
        pointers = {slot: self.slots.get(ref, {}).get(slot) for slot in slots}
        by_slot = {}
        for slot, rid in pointers.items():
            row = rows.get(rid) if rid is not None else None
            if row is not None and row.active and row.slot == slot:
                by_slot[slot] = row
        return Lookup({i: rows[i] for i in ids if i in rows}, by_slot, pointers)

    def unchanged(self, ref: PackageRef, seqs: dict[str, int | None], slots: dict[str, str | None]) -> bool:
        rows = self.of(ref)
        for rid, seq in seqs.items():
            row = rows.get(rid)
            if (row.seq if row is not None and row.active else None) != seq:
                return False
        return all(self.slots.get(ref, {}).get(slot) == rid for slot, rid in slots.items())

    def active_records(self, ref: PackageRef, ids: Iterable[str]) -> dict[str, dict[str, Any]]:
        rows = self.of(ref)
        out: dict[str, dict[str, Any]] = {}
        for i in ids:
            row = rows.get(i)
            if row is not None and row.active and row.record:
                out[i] = row.record
        return out

    def active_ids(self, ref: PackageRef, ids: Iterable[str]) -> set[str]:
        return set(self.active_records(ref, ids))

    def active_listed(self, ref: PackageRef, ids: Iterable[str]) -> dict[str, ListedRecord]:
        rows = self.of(ref)
        return {
            i: ListedRecord(i, dumps_record(rows[i].record), rows[i].trust, rows[i].actor, rows[i].agent)
            for i in ids
            if i in rows and rows[i].active and rows[i].record
        }

    def review_queue(
        self, ref: PackageRef, limit: int, cursor: str | None = None
    ) -> tuple[list[LogRow], str | None]:
        """LogStore's queue: candidates by seq; the cursor is ``q#<seq>`` of the last one."""
        if cursor is not None and not (cursor.startswith("q#") and cursor[2:].isdigit()):
            raise ValueError("invalid cursor")
        after = int(cursor[2:]) if cursor else -1
        queue = sorted(
            (r for r in self.of(ref).values() if r.active and r.trust == "candidate"), key=lambda r: r.seq
        )
        page = [r for r in queue if r.seq > after][:limit]
        more = len([r for r in queue if r.seq > after]) > limit
        return page, (f"q#{page[-1].seq:012d}" if more and page else None)

    def policy(self, ref: PackageRef) -> str | None:
        return self.policies.get(ref)

    def rows(self, ref: PackageRef) -> Iterator[LogRow]:
        return iter([self.of(ref)[k] for k in sorted(self.of(ref))])

    def iter_active(self, ref: PackageRef) -> Iterator[LogRow]:
        return (r for r in self.rows(ref) if r.active)

    def with_knowledge(self, ref: PackageRef, knowledge: str) -> list[LogRow]:
        return [r for r in self.rows(ref) if erasure.holds_knowledge(r, knowledge)]

    def with_version_knowledge(self, ref: PackageRef, knowledge: str) -> list[LogRow]:
        """Rows (not forgotten) whose ended versions hold this knowledge key."""
        ids = {v.id for v in self.all_versions(ref) if v.knowledge == knowledge}
        return [r for r in self.rows(ref) if r.id in ids and not r.forgotten]

    def get_file(self, ref: PackageRef, path: str) -> FileRow | None:
        return self.files.get(ref, {}).get(path)

    def read_files(self, ref: PackageRef) -> list[tuple[str, str]]:
        files = self.files.get(ref, {})
        return [(p, f.content) for p, f in sorted(files.items()) if f.active and f.content is not None]

    def tombstone_hits(
        self, ref: PackageRef, probes: Sequence[forgetting.Probe], near: forgetting.NearPolicy
    ) -> list[forgetting.Hit]:
        stones = self.stones.get(ref, {})
        found = {k: stones[k] for k in erasure.tombstone_keys(probes, near) if k in stones}
        return erasure.blocked(probes, found, self.bands.get(ref, {}), near)

    def file_forgotten(self, ref: PackageRef, file_keys: Iterable[str]) -> dict[str, int]:
        stones = self.stones.get(ref, {})
        return {k: stones[f"f#{k}"] for k in file_keys if f"f#{k}" in stones}

    def file_tombstones(self, ref: PackageRef, stones: Tombstones, seq: int) -> None:
        mine = self.stones.setdefault(ref, {})
        for prefix, keys in (("k#", stones.knowledge), ("i#", stones.ids), ("f#", stones.files)):
            mine.update((prefix + k, seq) for k in keys)
        for kk, sk in stones.sketches:
            for bk in forgetting.band_keys(sk):
                self.bands.setdefault(ref, {}).setdefault(bk, {})[kk[:16]] = (tuple(sk), seq)


class ChainedReceipts:
    def __init__(self) -> None:
        self.entries: dict[PackageRef, list[Entry]] = {}

    def leaf_hashes(self, ref: PackageRef, size: int) -> list[bytes]:
        return [merkle.leaf_hash(bytes.fromhex(e.hash)) for e in self.entries.get(ref, [])[:size]]


class ChainedCheckpoints:
    def __init__(self) -> None:
        self.by_size: dict[PackageRef, dict[int, str]] = {}

    def at(self, ref: PackageRef, size: int) -> str | None:
        return self.by_size.get(ref, {}).get(size)


@dataclass(frozen=True)
class FakeHead:
    """``ChainedLog.head``: the ``PackageHead`` a use case decides on."""

    log: LogHead
    admin_locked: bool = False
    may_have_tombstones: bool = False

    @property
    def size(self) -> int:
        return self.log.size


class ChainedLog(RowReads):
    """The log port with real entries: each operation is planned by ``core.append.plan_append`` and
    signed as a C2SP checkpoint (a local Ed25519 key), so the verifier and the proofs read it as they
    read DynamoDB. Rows, slot pointers and tombstones follow ``LogStore``'s rules (the same
    :mod:`acx.core.erasure` decisions); there is no lease, sharding or batching (those are the
    adapter's, tested on moto).

    ``conflicts``: how many of the next appends raise ``Conflict`` (another writer won the claim).
    ``locks``: the operator lock of each package (tests may set it); ``lock_entries``: every
    ``set_admin_lock`` call, in order.
    """

    def __init__(self, publisher_id: str = "dev.acx.local") -> None:
        self.publisher_id = publisher_id
        self.notes = NoteSigner(publisher_id, LocalEd25519Signer())
        self.rows = ChainedRows()
        self.receipts = ChainedReceipts()
        self.checkpoints = ChainedCheckpoints()
        self.heads: dict[PackageRef, LogHead] = {}
        self.witnesses: dict[PackageRef, dict[str, Any]] = {}
        self.locks: dict[PackageRef, bool] = {}
        self.lock_entries: list[tuple[PackageRef, str, bool, str]] = []
        self.conflicts = 0
        self.appends = 0
        self.now = "2026-01-01T00:00:00Z"  # createdAt of the next entries (tests of valid time move it)

    def create(self, ref: PackageRef, size: int = 0) -> None:
        """The package, with ``size`` entries that write no row if it has fewer."""
        self.heads.setdefault(ref, LogHead.empty())
        have = self.heads[ref].size
        if size > have:
            fill = [EntrySpec("remember", "save", sha256_hex({"fill": i}), None) for i in range(have, size)]
            self._commit(ref, "test", fill)

    # the log port's reads
    def verifier_key(self) -> str:
        return self.notes.verifier_key()

    def package_exists(self, ref: PackageRef) -> bool:
        return ref in self.heads

    def head(self, ref: PackageRef) -> FakeHead:
        return FakeHead(self.log_head(ref), bool(self.locks.get(ref)), self.may_have_tombstones(ref))

    def log_head(self, ref: PackageRef) -> LogHead:
        return self.heads.get(ref, LogHead.empty())

    def latest_checkpoint(self, ref: PackageRef) -> str | None:
        return self.checkpoints.at(ref, self.log_head(ref).size)

    def checkpoint_at(self, ref: PackageRef, size: int) -> str | None:
        return self.checkpoints.at(ref, size)

    def leaf_hashes(self, ref: PackageRef, size: int) -> list[bytes]:
        leaves = self.receipts.leaf_hashes(ref, size)
        if len(leaves) != size:
            raise NotFound(f"log has {len(leaves)} entries, not {size}")
        return leaves

    def entries(self, ref: PackageRef, start: int = 0, end: int | None = None) -> Iterator[Entry]:
        return iter(self.receipts.entries.get(ref, [])[start:end])

    # the verifier's reads
    def all_rows(self, ref: PackageRef) -> Iterator[LogRow | FileRow]:
        files = self.rows.files.get(ref, {})
        return iter([*self.rows.rows(ref), *(files[p] for p in sorted(files))])

    def rows_by_key(self, ref: PackageRef, keys: Sequence[str]) -> list[LogRow | FileRow]:
        wanted = set(keys)
        return [r for r in self.all_rows(ref) if r.key in wanted]

    def witness(self, ref: PackageRef) -> dict[str, Any] | None:
        return self.witnesses.get(ref)

    def put_witness(self, ref: PackageRef, state: dict[str, Any]) -> bool:
        self.witnesses[ref] = state
        return True

    def packages(self) -> Iterator[PackageRef]:
        return iter(sorted(self.heads, key=lambda r: r.pk))

    def admin_lock(self, ref: PackageRef) -> dict[str, Any] | None:
        return {"locked": self.locks[ref]} if ref in self.locks else None

    def all_versions(self, ref: PackageRef) -> Iterator[VersionRow]:
        return self.rows.all_versions(ref)

    def memory_versions(self, ref: PackageRef, record_id: str) -> list[VersionRow]:
        return self.rows.versions(ref, record_id)

    def may_have_tombstones(self, ref: PackageRef) -> bool:
        """LogStore's head flag: true once a forget was appended here (or a test planted tombstones)."""
        forgot = any(e.operation == "forget" for e in self.receipts.entries.get(ref, []))
        return forgot or bool(self.rows.stones.get(ref)) or bool(self.rows.bands.get(ref))

    # the one commit
    def _commit(self, ref: PackageRef, actor: str, specs: list[EntrySpec]) -> AppendPlan:
        plan = plan_append(self.log_head(ref), specs, actor=actor, chain=ref.chain_key, created_at=self.now)
        self.receipts.entries.setdefault(ref, []).extend(plan.entries)
        self.heads[ref] = plan.head
        text = self.notes.sign(plan.checkpoint(ref.origin(self.publisher_id)))
        self.checkpoints.by_size.setdefault(ref, {})[plan.size] = text
        return plan

    def append(
        self,
        ref: PackageRef,
        actor: str,
        writes: Sequence[RecordWrite],
        retired: Sequence[str] = (),
        files: Sequence[FileWrite] = (),
        expected: dict[str, int | None] | None = None,
        expected_slots: dict[str, str | None] | None = None,
        guard: Callable[[], None] | None = None,
        agent: str | None = None,
    ) -> AppendResult:
        if not writes and not files:
            raise ValueError("an operation must write at least one record or file")
        if self.locks.get(ref):
            raise Locked("package is locked")
        if self.conflicts:
            self.conflicts -= 1
            raise Conflict("another writer claimed first")
        if not self.rows.unchanged(ref, expected or {}, expected_slots or {}):
            raise Conflict("a row changed since it was read")
        check_admitted(self.policy(ref), writes)
        if guard is not None and self.may_have_tombstones(ref):
            guard()  # LogStore skips it where the head proves no forget was ever claimed
        self.appends += 1
        specs = [
            EntrySpec(
                "remember",
                w.zone,
                logcore.content_hash(w.record),
                f"r#{w.id}",
                extra=attribution(agent, w.trust),
            )
            for w in writes
        ]
        specs += [
            EntrySpec(
                "remember",
                "file",
                logcore.file_content_hash(f.path, f.content),
                f"f#{f.path}",
                extra=attribution(agent),
            )
            for f in files
        ]
        plan = self._commit(ref, actor, specs)
        rows, slots = self.rows.of(ref), self.rows.slots.setdefault(ref, {})
        for rid in retired:
            rows.pop(rid, None)
        for w, e in zip(writes, plan.entries, strict=False):
            old = rows.get(w.id)
            if old is not None and old.slot and slots.get(old.slot) == w.id:
                del slots[old.slot]
            rows[w.id] = LogRow(
                w.id, e.seq, e.content_hash, e.hash, "active", w.record, w.slot, w.zone,
                tags=list(w.record.get("tags", [])), past_slots=list(w.past_slots),
                past_ids=list(w.past_ids), knowledge=w.knowledge, past_keys=list(w.past_keys),
                trust=e.payload.get("trust", "belief"), actor=e.payload["actor"],
                agent=e.payload.get("agent"),
            )  # fmt: skip
            slots[w.slot] = w.id
        for f, e in zip(files, plan.entries[len(writes) :], strict=True):
            self.rows.files.setdefault(ref, {})[f.path] = FileRow(
                f.path, e.seq, e.content_hash, e.hash, "active", f.content, f.file_key
            )
        size = plan.size
        return AppendResult(plan.first_seq, size - 1, size, self.checkpoints.at(ref, size) or "")

    def forget(
        self,
        ref: PackageRef,
        actor: str,
        record_id: str | None = None,
        content_hash: str | None = None,
        tombstones: Callable[[LogRow], Tombstones] | None = None,
        agent: str | None = None,
    ) -> ForgetResult:
        rows = self.rows.of(ref)
        target = rows.get(record_id) if record_id is not None else None
        if record_id is None and content_hash is not None:
            target = erasure.target_by_content_hash(self.rows.rows(ref), content_hash)
        if target is None or (content_hash is not None and target.content_hash != content_hash):
            raise NotFound("no record with that id or content hash")
        same = self.rows.with_knowledge(ref, target.knowledge) if target.knowledge else []
        held = self.rows.with_version_knowledge(ref, target.knowledge) if target.knowledge else []
        victims = erasure.erased_rows(target, [*same, *held], {r.id for r in held})
        if not victims:  # already forgotten: the first forget's answer, nothing appended
            first, last = target.forget_op or (target.seq, target.seq)
            keys = erasure.refused_keys(target)
            entry = self.receipts.entries[ref][target.seq]
            covers = {"seq": entry.payload["covers"]["seq"], "hash": entry.payload["covers"]["hash"]}
            cp = self.checkpoints.at(ref, last + 1) or ""
            return ForgetResult(
                target.id, target.content_hash, first, cp, covers, target.slot, [], last, True, keys
            )
        ended = [
            x for v in victims for i in dict.fromkeys([v.id, *v.past_ids]) for x in self.rows.versions(ref, i)
        ]
        stones = [tombstones(v) for v in [*victims, *(x.as_row() for x in ended)]] if tombstones else []
        specs = [
            EntrySpec(
                "forget",
                v.zone or "save",
                v.content_hash,
                v.key,
                logcore.Covers(v.seq, v.entry_hash),
                attribution(agent),
            )
            for v in victims
        ]
        plan = self._commit(ref, actor, specs)
        for x in ended:
            self.rows.ended[ref].pop(x.key, None)
        self.rows.file_tombstones(ref, Tombstones.union(stones), plan.first_seq)
        op = (plan.first_seq, plan.size - 1)
        for v, e in zip(victims, plan.entries, strict=True):
            rows[v.id] = dataclasses.replace(
                v, seq=e.seq, entry_hash=e.hash, state="tombstoned", record=None, tags=[],
                forgotten_seq=v.seq, forget_op=op,
            )  # fmt: skip
            if v.slot and self.rows.slots.get(ref, {}).get(v.slot) == v.id:
                del self.rows.slots[ref][v.slot]
        t = victims[0]
        return ForgetResult(
            t.id, t.content_hash, plan.first_seq, self.checkpoints.at(ref, plan.size) or "",
            {"seq": t.seq, "hash": t.entry_hash}, t.slot, [v.id for v in victims[1:]], plan.size - 1,
            knowledge=list(dict.fromkeys(k for st in stones for k in st.knowledge)),
        )  # fmt: skip

    def _current(self, ref: PackageRef, record_id: str, expected: int) -> LogRow:
        row = self.rows.of(ref).get(record_id)
        if row is None or not row.active or row.seq != expected or row.record is None:
            raise Conflict("the memory changed since it was read")
        return row

    def _keep(self, ref: PackageRef, old: LogRow, end_seq: int) -> None:
        assert old.record is not None
        v = VersionRow(
            old.id, old.seq, old.content_hash, old.entry_hash, old.record, end_seq, old.zone, old.knowledge
        )
        self.rows.ended.setdefault(ref, {})[v.key] = v

    def supersede(
        self,
        ref: PackageRef,
        actor: str,
        write: RecordWrite,
        expected: int,
        extra: tuple[tuple[str, str], ...] = (),
        expected_slots: dict[str, str | None] | None = None,
        guard: Callable[[], None] | None = None,
    ) -> AppendResult:
        """LogStore.supersede's rules: the old version kept, the row rewritten, the slot moved."""
        if self.locks.get(ref):
            raise Locked("package is locked")
        if self.conflicts:
            self.conflicts -= 1
            raise Conflict("another writer claimed first")
        old = self._current(ref, write.id, expected)
        if not self.rows.unchanged(ref, {}, expected_slots or {}):
            raise Conflict("a slot changed since it was read")
        check_admitted(self.policy(ref), [write])
        if guard is not None and self.may_have_tombstones(ref):
            guard()
        covers = logcore.Covers(old.seq, old.entry_hash)
        spec = EntrySpec("supersede", write.zone, logcore.content_hash(write.record), old.key, covers, extra)
        plan = self._commit(ref, actor, [spec])
        e = plan.entries[0]
        self._keep(ref, old, e.seq)
        slots = self.rows.slots.setdefault(ref, {})
        if old.slot and slots.get(old.slot) == old.id:
            del slots[old.slot]
        slots[write.slot] = write.id
        self.rows.of(ref)[write.id] = LogRow(
            write.id, e.seq, e.content_hash, e.hash, "active", write.record, write.slot, write.zone,
            tags=list(write.record.get("tags", [])), past_slots=list(write.past_slots),
            past_ids=list(write.past_ids), knowledge=write.knowledge, past_keys=list(write.past_keys),
            trust=e.payload.get("trust", "belief"), actor=e.payload["actor"], agent=e.payload.get("agent"),
        )  # fmt: skip
        return AppendResult(
            plan.first_seq, plan.size - 1, plan.size, self.checkpoints.at(ref, plan.size) or ""
        )

    def invalidate(
        self,
        ref: PackageRef,
        actor: str,
        record_id: str,
        expected: int,
        content_hash: str,
        extra: tuple[tuple[str, str], ...] = (),
    ) -> AppendResult:
        if self.locks.get(ref):
            raise Locked("package is locked")
        old = self._current(ref, record_id, expected)
        covers = logcore.Covers(old.seq, old.entry_hash)
        spec = EntrySpec("invalidate", old.zone or "save", content_hash, old.key, covers, extra)
        plan = self._commit(ref, actor, [spec])
        e = plan.entries[0]
        self._keep(ref, old, e.seq)
        if old.slot and self.rows.slots.get(ref, {}).get(old.slot) == old.id:
            del self.rows.slots[ref][old.slot]
        self.rows.of(ref)[record_id] = dataclasses.replace(
            old, seq=e.seq, content_hash=e.content_hash, entry_hash=e.hash, state="ended", record=None,
            slot=None, tags=[], past_slots=[*old.past_slots, *([old.slot] if old.slot else [])],
        )  # fmt: skip
        return AppendResult(
            plan.first_seq, plan.size - 1, plan.size, self.checkpoints.at(ref, plan.size) or ""
        )

    def forget_file(
        self,
        ref: PackageRef,
        actor: str,
        path: str | None,
        content_hash: str | None,
        file_key: Callable[[str], str],
    ) -> tuple[FileRow, AppendPlan | None]:
        files = self.rows.files.get(ref, {})
        f = files.get(path) if path is not None else None
        if path is None:
            f = next((x for x in files.values() if x.content_hash == content_hash), None)
        if f is None or (content_hash is not None and f.content_hash != content_hash):
            raise NotFound("no file with that path or content hash")
        if not f.active:
            return f, None
        assert f.content is not None
        spec = EntrySpec("forget", "file", f.content_hash, f.key, logcore.Covers(f.seq, f.entry_hash))
        plan = self._commit(ref, actor, [spec])
        self.rows.file_tombstones(ref, Tombstones(files=(f.file_key or file_key(f.content),)), plan.first_seq)
        e = plan.entries[0]
        files[f.path] = dataclasses.replace(
            f, seq=e.seq, entry_hash=e.hash, state="tombstoned", content=None, forgotten_seq=f.seq
        )
        return f, plan

    def set_admin_lock(self, ref: PackageRef, actor: str, locked: bool, content_hash: str) -> AppendResult:
        self.lock_entries.append((ref, actor, locked, content_hash))
        spec = EntrySpec("lock" if locked else "unlock", "package", content_hash, None)
        plan = self._commit(ref, actor, [spec])
        self.locks[ref] = locked
        checkpoint = self.checkpoints.at(ref, plan.size) or ""
        return AppendResult(plan.first_seq, plan.size - 1, plan.size, checkpoint)

    # review (LogStore.policy, set_policy, review: the same entries, no lease)
    def policy(self, ref: PackageRef) -> str | None:
        return self.rows.policy(ref)

    def set_policy(
        self, ref: PackageRef, actor: str, review: str, content_hash: str, agent: str | None = None
    ) -> AppendResult:
        if self.locks.get(ref):
            raise Locked("package is locked")
        plan = self._commit(
            ref, actor, [EntrySpec("policy", "package", content_hash, None, extra=attribution(agent))]
        )
        self.rows.policies[ref] = review
        return AppendResult(
            plan.first_seq, plan.size - 1, plan.size, self.checkpoints.at(ref, plan.size) or ""
        )

    def review(
        self,
        ref: PackageRef,
        actor: str,
        record_id: str,
        decision: str,
        seen_seq: int,
        agent: str | None = None,
        edit: Edit | None = None,
    ) -> AppendResult:
        """LogStore.review's rules: the entries of ``core.review.decision_specs``; an approve makes the
        row a belief naming the reviewer; an edit supersedes the candidate (kept as an ended version)
        by the corrected version, a belief, in the same commit."""
        if self.locks.get(ref):
            raise Locked("package is locked")
        if self.conflicts:
            self.conflicts -= 1
            raise Conflict("another writer claimed first")
        row = self.rows.of(ref).get(record_id)
        if row is None or not row.active or row.seq != seen_seq or row.trust != "candidate":
            raise Conflict("the candidate changed since it was read")
        specs = decision_specs(row, decision, agent, edit.write if edit is not None else None)
        if edit is not None:
            if not self.rows.unchanged(ref, {}, edit.expected_slots):
                raise Conflict("a slot changed since it was read")
            if edit.guard is not None and self.may_have_tombstones(ref):
                edit.guard()
        plan = self._commit(ref, actor, specs)
        if edit is not None:
            e, w = plan.entries[0], edit.write
            self._keep(ref, row, e.seq)
            slots = self.rows.slots.setdefault(ref, {})
            if row.slot and slots.get(row.slot) == row.id:
                del slots[row.slot]
            slots[w.slot] = w.id
            self.rows.of(ref)[w.id] = LogRow(
                w.id, e.seq, e.content_hash, e.hash, "active", w.record, w.slot, w.zone,
                tags=list(w.record.get("tags", [])), past_slots=list(w.past_slots),
                past_ids=list(w.past_ids), knowledge=w.knowledge, past_keys=list(w.past_keys),
                actor=actor, agent=e.payload.get("agent"), reviewer=actor,
            )  # fmt: skip
        elif decision == "approve":
            self.rows.of(ref)[record_id] = dataclasses.replace(row, trust="belief", reviewer=actor)
        return AppendResult(
            plan.first_seq, plan.size - 1, plan.size, self.checkpoints.at(ref, plan.size) or ""
        )


def ingest_records(deps: Deps, ref: PackageRef, *records: dict[str, Any], **extra: Any) -> IngestSummary:
    """Run ``usecases.ingest`` on a bundle of ``records`` (and ``extra`` members: knowledge, skills)."""
    return ingest.ingest_bundle(deps, ref.tenant, ref.package, "agent", bundle_json(list(records), **extra))


def chained_deps(**settings: Any) -> Deps:
    """:func:`fake_deps` (whose log is a :class:`ChainedLog`)."""
    return fake_deps(**settings)


@dataclass
class FakeIndex:
    """``IndexHooks`` (``usecases.deps``): records every call; ``fail`` makes ``indexed`` raise."""

    calls: list[tuple[str, Any]] = field(default_factory=list)
    fail: bool = False

    def indexed(
        self,
        tenant: str,
        package: str,
        records: list[dict[str, Any]],
        absorbed: dict[str, list[str]],
        *,
        new_package: bool,
    ) -> None:
        if self.fail:
            raise RuntimeError("index store down")
        self.calls.append(("indexed", ([r["id"] for r in records], absorbed, new_package)))

    def forgotten(self, tenant: str, package: str, record_id: str) -> int:
        self.calls.append(("forgotten", record_id))
        return 1

    def drop_index(self, tenant: str, package: str) -> None:
        self.calls.append(("drop_index", package))


@dataclass
class FakeQueue:
    """``MessageQueue``: ``url`` None is an unconfigured queue; sent messages are kept in order."""

    url: str | None = "https://sqs.example/export"
    sent: list[dict[str, Any]] = field(default_factory=list)

    @property
    def configured(self) -> bool:
        return bool(self.url)

    def send(self, message: dict[str, Any]) -> None:
        self.sent.append(message)


@dataclass
class FakeAlarms:
    """``AlarmTopic``: ``topic_arn`` None is an unconfigured topic; published alarms are kept."""

    topic_arn: str | None = "arn:aws:sns:us-east-1:123456789012:acx-alarms"
    published: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    @property
    def configured(self) -> bool:
        return bool(self.topic_arn)

    def publish(self, subject: str, message: dict[str, Any]) -> None:
        self.published.append((subject, message))


class FakeCatalog:
    """``Catalog``: a tenant's packages (from the log's heads) in key order, and active record counts."""

    def __init__(self, log: ChainedLog) -> None:
        self.log = log

    def packages(self, tenant: str, limit: int, cursor: str | None) -> tuple[list[str], str | None]:
        names = sorted(r.package for r in self.log.heads if r.tenant == tenant)
        if cursor is not None and cursor not in names:
            raise ValueError("invalid cursor")
        start = names.index(cursor) + 1 if cursor is not None else 0
        page = names[start : start + limit]
        return page, (page[-1] if start + limit < len(names) and page else None)

    def active_records(self, tenant: str, package: str) -> int:
        return sum(1 for _ in self.log.rows.iter_active(PackageRef(tenant, package)))


class FakeIndexStore:
    """``SearchIndexPort`` over :class:`FakeObjects`: the manifest's conditional GET and PUT answered
    with content ETags, segments as objects. ``conflicts``: how many of the next manifest writes lose
    the race (``ManifestConflict``)."""

    NOT_MODIFIED: object = object()

    def __init__(self, objects: FakeObjects) -> None:
        self.fakes = objects
        self.conflicts = 0

    @staticmethod
    def prefix(tenant: str, package: str) -> str:
        return f"indexes/{tenant}/{package}/"

    def _key(self, tenant: str, package: str) -> str:
        return self.prefix(tenant, package) + "manifest.json"

    def put_segment(self, tenant: str, package: str, body: bytes) -> str:
        key = f"{self.prefix(tenant, package)}seg-{uuid.uuid4().hex}.bin"
        self.fakes.put(key, body, "application/octet-stream")
        return key

    def get_segment(self, key: str) -> bytes:
        if key not in self.fakes.objects:
            raise SegmentMissing(key)
        return self.fakes.objects[key]

    def segment_keys(self, tenant: str, package: str) -> list[str]:
        return sorted({k for k, _ in self.fakes.versions(self.prefix(tenant, package) + "seg-")})

    def purge(self, key: str) -> None:
        self.fakes.purge(key)

    def manifest(self, tenant: str, package: str, if_none_match: str | None = None) -> Any:
        body = self.fakes.objects.get(self._key(tenant, package))
        if body is None:
            return None
        etag = hashlib.md5(body).hexdigest()  # noqa: S324 - an ETag, as S3 computes it
        if if_none_match == etag:
            return self.NOT_MODIFIED
        return Manifest.from_bytes(body, etag)

    def put_manifest(self, tenant: str, package: str, manifest: Manifest) -> str:
        current = self.manifest(tenant, package)
        if self.conflicts or (current.etag if current is not None else None) != manifest.etag:
            self.conflicts = max(0, self.conflicts - 1)
            raise ManifestConflict("412")
        body = manifest.to_bytes()
        self.fakes.put(self._key(tenant, package), body)
        return hashlib.md5(body).hexdigest()  # noqa: S324


def _conformance(
    log: ChainedLog,
    objects: FakeObjects,
    jobs: FakeJobs,
    index: FakeIndex,
    queue: FakeQueue,
    alarms: FakeAlarms,
    catalog: FakeCatalog,
    index_store: FakeIndexStore,
) -> None:
    """Never called: mypy checks that each fake implements its port (a drift fails the check)."""
    _log: LogPort = log
    _objects: ObjectsPort = objects
    _jobs: JobsPort = jobs
    _index: IndexHooks = index
    _queue: QueuePort = queue
    _alarms: AlarmsPort = alarms
    _catalog: CatalogPort = catalog
    _index_store: SearchIndexPort = index_store
