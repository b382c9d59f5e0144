"""The interfaces the use cases are written against, one per role an adapter plays.

The use cases own these: each method states the promise they rely on, and nothing more. The AWS
adapters (:mod:`acx.adapters`) and the in-memory fakes (``tests/fakes.py``) implement them
structurally. :class:`acx.usecases.deps.Deps` is typed with them, and ``_conformance`` below and
``tests.fakes`` (both in mypy's files) assign each implementation to its port, so the type check fails
when one drifts.

Values crossing these interfaces are core types (:mod:`acx.core.rows`, :mod:`acx.core.log`,
:mod:`acx.core.forgetting`). The decisions behind them (which rows a forget erases, what a tombstone
refuses) are pure functions in :mod:`acx.core.erasure` that every log implementation calls.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import IO, TYPE_CHECKING, Any, Protocol

from acx.core import forgetting
from acx.core.append import AppendPlan, LogHead
from acx.core.log import Entry
from acx.core.package import PackageRef
from acx.core.rows import (
    AppendResult,
    Edit,
    FileRow,
    FileWrite,
    ForgetResult,
    ListedRecord,
    LogRow,
    Lookup,
    RecordWrite,
    Tombstones,
    VersionRow,
)

if TYPE_CHECKING:
    from acx.adapters.search_index import Manifest

# ---------------------------------------------------------------------------------------- the log


class PackageHead(Protocol):
    """One read of a package's head: what a request decides on before it writes."""

    @property
    def size(self) -> int:
        """Entries in the package's log (0: no log)."""
        ...

    @property
    def admin_locked(self) -> bool:
        """An operator lock holds the package: writes are refused (423)."""
        ...

    @property
    def may_have_tombstones(self) -> bool:
        """False only when the head proves no forget ever claimed a seq here (no tombstone check)."""
        ...


class LogHeads(Protocol):
    """A package's head, lock and checkpoints."""

    def verifier_key(self) -> str:
        """The signed-note verifier key line of the checkpoint signer."""
        ...

    def package_exists(self, ref: PackageRef) -> bool:
        """The package has a log with at least one entry."""
        ...

    def head(self, ref: PackageRef) -> PackageHead:
        """One consistent read of the head (an absent package: size 0, unlocked)."""
        ...

    def admin_lock(self, ref: PackageRef) -> dict[str, Any] | None:
        """``{locked, seq, contentHash}`` of the operator lock, None if never set (one consistent read)."""
        ...

    def may_have_tombstones(self, ref: PackageRef) -> bool:
        """Advisory read of the head's forget flag; the commit re-checks it under the lease."""
        ...

    def latest_checkpoint(self, ref: PackageRef) -> str | None:
        """The signed checkpoint of the largest size, None for no log."""
        ...

    def checkpoint_at(self, ref: PackageRef, size: int) -> str | None:
        """The signed checkpoint of exactly ``size`` entries, None if none was signed at that size."""
        ...

    def leaf_hashes(self, ref: PackageRef, size: int) -> list[bytes]:
        """RFC 9162 leaf hashes of the first ``size`` entries; raises ``NotFound`` if the log is shorter."""
        ...

    def entries(self, ref: PackageRef, start: int = 0, end: int | None = None) -> Iterator[Entry]:
        """The entries with ``start <= seq < end``, in seq order."""
        ...


class LogRecords(Protocol):
    """The package's rows: memories, files and tombstones, as typed values."""

    def record(self, ref: PackageRef, record_id: str) -> LogRow | None:
        """The row of that id, active or tombstoned; None if there is none."""
        ...

    def lookup(self, ref: PackageRef, ids: set[str], slots: set[str]) -> Lookup:
        """Rows by id and the active rows filling these slots, with the slot pointers read (merge input)."""
        ...

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
        """A page of active records in id order and the cursor after it; ``ValueError`` for a cursor
        this store did not issue. ``trust`` (belief | candidate; None: any) and ``agent`` filter."""
        ...

    def active_listed(self, ref: PackageRef, ids: Iterable[str]) -> dict[str, ListedRecord]:
        """id -> the active row's stored record with its trust state and author (search results)."""
        ...

    def review_queue(
        self, ref: PackageRef, limit: int, cursor: str | None = None
    ) -> tuple[list[LogRow], str | None]:
        """Candidate rows oldest (lowest seq) first and the cursor after them; ``ValueError`` for a
        cursor this store did not issue."""
        ...

    def with_knowledge(self, ref: PackageRef, knowledge: str) -> list[LogRow]:
        """Active rows holding this knowledge key (O(package): forget and reject only)."""
        ...

    def policy(self, ref: PackageRef) -> str | None:
        """The package's review policy (None: never set)."""
        ...

    def cursor_after(self, row: LogRow | ListedRecord) -> str:
        """The opaque cursor that continues a listing after ``row``."""
        ...

    def active_records(self, ref: PackageRef, ids: Iterable[str]) -> dict[str, dict[str, Any]]:
        """id -> record of those ids whose row is active now (absent and forgotten ids left out)."""
        ...

    def active_ids(self, ref: PackageRef, ids: Iterable[str]) -> set[str]:
        """Those ids whose row is active now."""
        ...

    def active_rows(self, ref: PackageRef) -> Iterator[LogRow]:
        """Every active row, in id order (O(package))."""
        ...

    def read_files(self, ref: PackageRef) -> list[tuple[str, str]]:
        """(path, content) of each active knowledge and skill file, in path order."""
        ...

    def tombstone_hits(
        self, ref: PackageRef, probes: Sequence[forgetting.Probe], near: forgetting.NearPolicy
    ) -> list[forgetting.Hit]:
        """The probes a tombstone refuses (:func:`acx.core.erasure.blocked`), by point reads."""
        ...

    def file_forgotten(self, ref: PackageRef, file_keys: Iterable[str]) -> dict[str, int]:
        """file key -> forget seq, for the file keys a tombstone refuses."""
        ...


Guard = Callable[[], None]


class LogWrites(Protocol):
    """The write operations, each one serialized commit: receipt and checkpoint before any row."""

    def append(
        self,
        ref: PackageRef,
        actor: str,
        writes: Sequence[RecordWrite],
        retired: Sequence[str] = (),
        files: Sequence[FileWrite] = (),
        expected: dict[str, int | None] | None = None,
        expected_slots: dict[str, str | None] | None = None,
        guard: Guard | None = None,
        agent: str | None = None,
    ) -> AppendResult:
        """Receipt then write the rows (every entry naming ``agent``); ``Conflict`` if a row or slot
        differs from ``expected``, ``guard`` run under the lease unless the head proves no forget was
        ever claimed."""
        ...

    def forget(
        self,
        ref: PackageRef,
        actor: str,
        record_id: str | None = None,
        content_hash: str | None = None,
        tombstones: Callable[[LogRow], Tombstones] | None = None,
        agent: str | None = None,
    ) -> ForgetResult:
        """Erase the rows :func:`acx.core.erasure.erased_rows` names, tombstones filed first;
        ``NotFound`` for no such row; a done forget answers the first one (``repeated``)."""
        ...

    def forget_file(
        self,
        ref: PackageRef,
        actor: str,
        path: str | None,
        content_hash: str | None,
        file_key: Callable[[str], str],
    ) -> tuple[FileRow, AppendPlan | None]:
        """Erase one file and file its tombstone: the row as it was, and the plan (None: already done)."""
        ...

    def set_admin_lock(self, ref: PackageRef, actor: str, locked: bool, content_hash: str) -> AppendResult:
        """Receipt a lock or unlock entry; its claim moves the head's lock state."""
        ...

    def set_policy(
        self, ref: PackageRef, actor: str, review: str, content_hash: str, agent: str | None = None
    ) -> AppendResult:
        """Receipt a ``policy`` entry, then store the review policy."""
        ...

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
        """Receipt the entries of :func:`acx.core.review.decision_specs` for the candidate read at
        ``seen_seq`` (``Conflict`` if it changed); an approval turns the row into a belief. With
        ``edit`` (approve only), one commit supersedes the candidate by ``edit.write`` (the candidate
        kept as an ended version, as :meth:`LogVersions.supersede` does, ``edit.expected_slots`` and
        ``edit.guard`` checked as there) and approves it: the new row is a belief naming the reviewer.
        ``from_seq`` is the supersede's seq."""
        ...


class VerifiableLog(Protocol):
    """What the verifier reads (:mod:`acx.usecases.verify`): typed entries, rows and witness state."""

    def log_head(self, ref: PackageRef) -> LogHead:
        """Size, chain head and compact range of the package's log."""
        ...

    def entries(self, ref: PackageRef, start: int = 0, end: int | None = None) -> Iterator[Entry]:
        """The entries with ``start <= seq < end``, in seq order."""
        ...

    def all_rows(self, ref: PackageRef) -> Iterator[LogRow | FileRow]:
        """Every memory row, then every file row, active or tombstoned."""
        ...

    def rows_by_key(self, ref: PackageRef, keys: Sequence[str]) -> list[LogRow | FileRow]:
        """The rows of these row keys (``r#<id>``, ``f#<path>``) that exist."""
        ...

    def latest_checkpoint(self, ref: PackageRef) -> str | None:
        """The signed checkpoint of the largest size, None for no log."""
        ...

    def verifier_key(self) -> str:
        """The signed-note verifier key line of the checkpoint signer."""
        ...

    def witness(self, ref: PackageRef) -> dict[str, Any] | None:
        """The verifier's last witnessed state of the package, if any."""
        ...

    def put_witness(self, ref: PackageRef, state: dict[str, Any]) -> bool:
        """Store witnessed state; only ever moves forward (False: a larger size is stored)."""
        ...

    def packages(self) -> Iterator[PackageRef]:
        """Every package with a head (the scheduled verifier's walk)."""
        ...


class LogVersions(Protocol):
    """Memories that change (:mod:`acx.core.versions`): a supersede or invalidate is one more serialized
    commit, receipt first, its entry covering the version it ends; ended versions stay readable."""

    def supersede(
        self,
        ref: PackageRef,
        actor: str,
        write: RecordWrite,
        expected: int,
        extra: tuple[tuple[str, str], ...] = (),
        expected_slots: dict[str, str | None] | None = None,
        guard: Guard | None = None,
    ) -> AppendResult:
        """Write ``write`` as the memory's new version, the current one (at seq ``expected``, else
        ``Conflict``) kept as an ended version; ``guard`` as for :meth:`LogWrites.append`."""
        ...

    def invalidate(
        self,
        ref: PackageRef,
        actor: str,
        record_id: str,
        expected: int,
        content_hash: str,
        extra: tuple[tuple[str, str], ...] = (),
    ) -> AppendResult:
        """End the current version (at seq ``expected``, else ``Conflict``) with no successor: kept as
        an ended version, the row ``ended``."""
        ...

    def memory_versions(self, ref: PackageRef, record_id: str) -> list[VersionRow]:
        """The ended versions of one memory, oldest first."""
        ...

    def all_versions(self, ref: PackageRef) -> Iterator[VersionRow]:
        """Every ended version of the package, by id then seq (O(versions))."""
        ...


class LogPort(LogHeads, LogRecords, LogWrites, LogVersions, VerifiableLog, Protocol):
    """The memory log as the use cases see it: one interface, no stores behind it to reach into."""


# ------------------------------------------------------------------------------------- the rest


class Presigned(Protocol):
    """A presigned request: its URL, lifetime and the headers the client must send."""

    @property
    def url(self) -> str: ...
    @property
    def expires_in(self) -> int: ...
    @property
    def headers(self) -> dict[str, str]: ...


class ObjectsPort(Protocol):
    """One bucket's objects (versioned: ``purge`` removes every version)."""

    def put(self, key: str, body: bytes, content_type: str = "application/json") -> str | None:
        """Store ``body`` under ``key`` (a new version); returns the version id if the bucket has one."""
        ...

    def put_file(self, key: str, fileobj: IO[bytes], content_type: str = "application/json") -> None:
        """Store what ``fileobj`` reads, streamed."""
        ...

    def upload_file(self, key: str, path: str, content_type: str = "application/octet-stream") -> None:
        """Store a local file, streamed."""
        ...

    def get(self, key: str, *, checksum: bool = True) -> bytes:
        """The current bytes of ``key`` (``checksum``: the store verifies them end to end)."""
        ...

    def size(self, key: str) -> int | None:
        """The current size of ``key``, None if it does not exist."""
        ...

    def chunks(self, key: str, size: int = 1024 * 1024) -> Iterator[bytes]:
        """The bytes of ``key`` as it streams in, in chunks of at most ``size``."""
        ...

    def versions(self, prefix: str) -> Iterator[tuple[str, str]]:
        """(key, version id) of every version of every key under ``prefix``, deleted ones included."""
        ...

    def purge(self, key: str) -> int:
        """Delete every version of ``key``; returns how many were deleted."""
        ...

    def delete(self, key: str) -> None:
        """Delete the current version of ``key`` (absent: nothing)."""
        ...

    def presign_put(self, key: str, content_type: str, expires_in: int) -> Presigned:
        """A PUT of ``key`` with that content type, valid ``expires_in`` seconds."""
        ...

    def presign_get(self, key: str, expires_in: int) -> Presigned:
        """A GET of ``key``, valid ``expires_in`` seconds."""
        ...


class JobsPort(Protocol):
    """Upload and export jobs of a package, by kind and id."""

    def create(self, tenant: str, package: str, kind: str, job_id: str, **fields: Any) -> None:
        """A new job (status ``pending`` unless ``status`` is given) with these fields."""
        ...

    def get(self, tenant: str, package: str, kind: str, job_id: str) -> dict[str, Any] | None:
        """The job, None if there is none."""
        ...

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
        """Move the job to ``status`` only from ``expect`` (None: from any); False if it was not there."""
        ...

    def list(self, tenant: str, package: str, kind: str) -> list[dict[str, Any]]:
        """Every job of that kind, in id order."""
        ...

    def page(
        self, tenant: str, package: str, kind: str, limit: int, cursor: str | None
    ) -> tuple[builtins.list[dict[str, Any]], str | None]:
        """A page of jobs and the cursor after it; ``ValueError`` for a cursor it did not issue."""
        ...


class QueuePort(Protocol):
    """A queue of JSON messages (the export queue)."""

    @property
    def configured(self) -> bool:
        """A queue is set for this deployment (else the caller works without one)."""
        ...

    def send(self, message: dict[str, Any]) -> None:
        """Queue one message (at least once)."""
        ...


class AlarmsPort(Protocol):
    """The operators' alarm topic."""

    @property
    def configured(self) -> bool:
        """A topic is set for this deployment."""
        ...

    def publish(self, subject: str, message: dict[str, Any]) -> None:
        """Publish one alarm."""
        ...


IdempotentCall = Callable[[dict[str, Any], bytes, Any], dict[str, Any]]


class IdempotencyPort(Protocol):
    """Runs a request handler once per idempotency key."""

    def once(
        self,
        fn: Callable[[dict[str, Any], bytes], dict[str, Any]],
        *,
        name: str,
        key: str,
        payload: str,
        expires_after_seconds: int,
    ) -> IdempotentCall:
        """``fn`` run once per ``key``; a retry with another ``payload`` raises ``IdempotencyKeyReused``,
        one while the first runs ``IdempotencyInProgress`` (:mod:`acx.core.faults`)."""
        ...


class CatalogPort(Protocol):
    """Read-only listings across packages."""

    def packages(self, tenant: str, limit: int, cursor: str | None) -> tuple[list[str], str | None]:
        """A page of the tenant's package names in order; ``ValueError`` for a foreign cursor."""
        ...

    def active_records(self, tenant: str, package: str) -> int:
        """How many active memories the package holds."""
        ...


class SearchIndexPort(Protocol):
    """A package's search index: a manifest replaced by conditional writes, immutable segments."""

    NOT_MODIFIED: object  # the sentinel ``manifest`` answers when the ETag still holds

    def prefix(self, tenant: str, package: str) -> str:
        """The key prefix of the package's index objects."""
        ...

    def manifest(self, tenant: str, package: str, if_none_match: str | None = None) -> Any:
        """The ``Manifest``; None: no index; ``NOT_MODIFIED``: ``if_none_match`` is still its ETag."""
        ...

    def put_manifest(self, tenant: str, package: str, manifest: Manifest) -> str:
        """Replace the manifest only if it is still ``manifest.etag`` (``ManifestConflict``); its new ETag."""
        ...

    def put_segment(self, tenant: str, package: str, body: bytes) -> str:
        """Store a new segment under a fresh key; returns the key."""
        ...

    def get_segment(self, key: str) -> bytes:
        """A segment's bytes; ``SegmentMissing`` when it is gone."""
        ...

    def segment_keys(self, tenant: str, package: str) -> list[str]:
        """Every segment key under the package, referenced or not."""
        ...

    def purge(self, key: str) -> None:
        """Delete every version of an index object."""
        ...


class IndexHooks(Protocol):
    """What ingest and forget tell the search index (``usecases.search.SearchIndexer``)."""

    def indexed(
        self,
        tenant: str,
        package: str,
        records: list[dict[str, Any]],
        absorbed: dict[str, list[str]],
        *,
        new_package: bool,
    ) -> None:
        """These survivors were committed (``absorbed``: survivor -> ids folded into it)."""
        ...

    def forgotten(self, tenant: str, package: str, record_id: str) -> int:
        """The memory was forgotten: no segment may hold it once this returns."""
        ...

    def drop_index(self, tenant: str, package: str) -> None:
        """Drop the package's index (the next search rebuilds it from the log)."""
        ...


def _conformance() -> None:
    """Never called: mypy checks that each AWS adapter implements its port (a drift fails the check),
    the KMS signer included, which ``deps()`` hands out behind ``OnFirstUse`` (a cast)."""
    from acx.adapters.alarms import AlarmTopic
    from acx.adapters.catalog import Catalog
    from acx.adapters.idempotency import IdempotencyStore
    from acx.adapters.kms import KmsSigner
    from acx.adapters.log_store import LogStore
    from acx.adapters.objects import ObjectStore
    from acx.adapters.queues import MessageQueue
    from acx.adapters.search_index import SearchIndexStore
    from acx.core.signing import Signer

    def check(
        log: LogStore,
        objects: ObjectStore,
        queue: MessageQueue,
        alarms: AlarmTopic,
        idempotency: IdempotencyStore,
        catalog: Catalog,
        index: SearchIndexStore,
        signer: KmsSigner,
    ) -> None:
        _log: LogPort = log
        _objects: ObjectsPort = objects
        _queue: QueuePort = queue
        _alarms: AlarmsPort = alarms
        _idempotency: IdempotencyPort = idempotency
        _catalog: CatalogPort = catalog
        _index: SearchIndexPort = index
        _signer: Signer = signer
