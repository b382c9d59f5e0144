"""Typed values that cross the log store boundary: writes going in, rows and lookups coming out."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

from acx.core import forgetting
from acx.core.forgetting import Hit
from acx.core.records import zone_of

if TYPE_CHECKING:
    from acx.core.package import PackageRef


class CorruptStore(Exception):
    """A stored item that cannot be decoded: never read as empty (raised by stores, seen by use cases)."""


class NotFound(Exception):
    """No such record, file or log range (the use cases answer 404)."""


class Conflict(Exception):
    """Another writer changed a row the caller based its merge on: re-read, re-merge, retry."""


class Forgotten(Exception):
    """A tombstone refuses part of the operation (checked under the lease, in the commit)."""

    def __init__(self, hits: list[Hit], files: list[str] | None = None) -> None:
        super().__init__(f"{len(hits)} record(s) and {len(files or [])} file(s) were forgotten")
        self.hits = hits
        self.files = files or []


@dataclass(frozen=True)
class Tombstones:
    """The keyed hashes a forget files: exact keys, id keys, file keys, and near-copy sketches."""

    knowledge: tuple[str, ...] = ()
    ids: tuple[str, ...] = ()
    files: tuple[str, ...] = ()
    sketches: tuple[tuple[str, tuple[int, ...]], ...] = ()  # (knowledge key, sketch)

    @classmethod
    def union(cls, parts: Sequence[Tombstones]) -> Tombstones:
        def merged(name: str) -> tuple[Any, ...]:
            return tuple(dict.fromkeys(x for p in parts for x in getattr(p, name)))

        sketches = tuple({kk: sk for p in parts for kk, sk in p.sketches}.items())
        return cls(merged("knowledge"), merged("ids"), merged("files"), sketches)


@dataclass(frozen=True)
class RecordWrite:
    """One memory to write: the (validated) record, its content slot and its knowledge key, plus the
    history a later forget tombstones (older slots, folded ids, their knowledge keys)."""

    record: dict[str, Any]
    slot: str
    knowledge: str | None = None
    past_slots: tuple[str, ...] = ()
    past_ids: tuple[str, ...] = ()
    past_keys: tuple[str, ...] = ()
    trust: str = "belief"  # the state it enters with (acx.core.review.entry_state)

    @property
    def id(self) -> str:
        return str(self.record["id"])

    @property
    def zone(self) -> str:
        return zone_of(self.record)


@dataclass(frozen=True)
class Edit:
    """An edit-and-approve's corrected version (:func:`acx.core.review.decision_specs`): ``write``
    supersedes the candidate in the decision's commit and is approved by it. ``expected_slots`` and
    ``guard`` are those of any supersede (the slot the text takes is still free, and no tombstone
    refuses it), checked under the same lease."""

    write: RecordWrite
    expected_slots: dict[str, str | None] = field(default_factory=dict)
    guard: Callable[[], None] | None = None


@dataclass(frozen=True)
class FileWrite:
    path: str
    content: str
    file_key: str | None = None  # keyed hash of the normalised content (the file tombstone rule)


@dataclass(frozen=True)
class LogRow:
    """A memory row as stored: ``record`` is None once forgotten (state ``tombstoned``) or once its
    validity ended with no successor (state ``ended``: its last version moved to a :class:`VersionRow`)."""

    id: str
    seq: int
    content_hash: str
    entry_hash: str
    state: str  # active | ended | tombstoned
    record: dict[str, Any] | None
    slot: str | None = None
    zone: str | None = None
    cbf: str | None = None
    tags: list[str] = field(default_factory=list)
    past_slots: list[str] = field(default_factory=list)
    past_ids: list[str] = field(default_factory=list)
    knowledge: str | None = None
    past_keys: list[str] = field(default_factory=list)
    forgotten_seq: int | None = None
    forget_op: tuple[int, int] | None = None  # seqs of the forget operation that tombstoned it
    holds_plaintext: bool = False  # the stored item still carries a body or tags
    trust: str = "belief"  # candidate | belief (rows written before trust existed: belief)
    actor: str | None = None  # who wrote this version (tenant/subject), and for which agent
    agent: str | None = None
    reviewer: str | None = None  # who approved it (a belief that passed review)

    @property
    def key(self) -> str:
        return f"r#{self.id}"

    @property
    def active(self) -> bool:
        return self.state == "active"

    @property
    def forgotten(self) -> bool:
        return self.state == "tombstoned"


@dataclass(frozen=True)
class VersionRow:
    """An ended version of a memory (``v#<id>#<seq>``): the content of the entry at ``seq`` that a
    ``supersede`` or ``invalidate`` entry at ``end_seq`` ended. Kept for history and as-of reads;
    a forget of the memory deletes it."""

    id: str
    seq: int
    content_hash: str
    entry_hash: str
    record: dict[str, Any]
    end_seq: int
    zone: str | None = None
    knowledge: str | None = None

    @property
    def key(self) -> str:
        return version_key(self.id, self.seq)

    def as_row(self) -> LogRow:
        """The version as a row of its memory (what a forget's tombstones are computed from)."""
        return LogRow(
            self.id, self.seq, self.content_hash, self.entry_hash, "active", self.record,
            zone=self.zone, knowledge=self.knowledge,
        )  # fmt: skip


def version_key(record_id: str, seq: int) -> str:
    """The sort key of a memory's ended version: by id, then seq (zero-padded: sorts in log order)."""
    return f"v#{record_id}#{seq:012d}"


@dataclass(frozen=True)
class ListedRecord:
    """An active memory as a listing page reads it: its id and its stored canonical JSON (RFC 8785
    UTF-8 bytes of one JSON object, checked well-formed by the store), which a page sends as it is.

    ``record`` parses those bytes strictly (:func:`acx.core.canonical.loads`) on first use, for the
    callers that want the value: a listing that only forwards the page never parses it."""

    id: str
    canonical: bytes
    trust: str = "belief"
    actor: str | None = None
    agent: str | None = None

    @property
    def key(self) -> str:
        return f"r#{self.id}"

    @cached_property
    def record(self) -> dict[str, Any]:
        from acx.core.canonical import CanonicalError, loads

        try:
            value = loads(self.canonical)
        except CanonicalError as exc:
            raise CorruptStore(f"row {self.key} does not decode: {exc}") from None
        if not isinstance(value, dict):
            raise CorruptStore(f"row {self.key} is not a JSON object")
        return value


@dataclass(frozen=True)
class FileRow:
    """A knowledge or skill file row: ``content`` is None once forgotten."""

    path: str
    seq: int
    content_hash: str
    entry_hash: str
    state: str
    content: str | None
    file_key: str | None = None
    forgotten_seq: int | None = None

    @property
    def key(self) -> str:
        return f"f#{self.path}"

    @property
    def active(self) -> bool:
        return self.state == "active"


@dataclass(frozen=True)
class Lookup:
    """What a writer read before merging: rows by id (any state), active rows by slot, and the record
    id each queried slot's index item names (None: no item), all of which the claim re-checks."""

    by_id: dict[str, LogRow]
    by_slot: dict[str, LogRow]
    pointers: dict[str, str | None]

    def seen_seqs(self, ids: set[str]) -> dict[str, int | None]:
        """id -> seq of its active row (None: absent or forgotten): the claim's expected state."""
        out: dict[str, int | None] = {}
        for rid in ids:
            row = self.by_id.get(rid)
            out[rid] = row.seq if row is not None and row.active else None
        for row in self.by_slot.values():
            out.setdefault(row.id, row.seq)
        return out


@dataclass(frozen=True)
class InclusionProof:
    index: int
    size: int
    leaf_hash: bytes
    proof: list[bytes]

    def to_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "size": self.size,
            "leafHash": self.leaf_hash.hex(),
            "proof": [p.hex() for p in self.proof],
        }


@dataclass(frozen=True)
class ConsistencyProof:
    first: int
    second: int
    proof: list[bytes]

    def to_dict(self) -> dict[str, Any]:
        return {"from": self.first, "to": self.second, "proof": [p.hex() for p in self.proof]}


@dataclass(frozen=True)
class AppendResult:
    """What a write operation (append, lock) committed: its seqs and the signed checkpoint after it."""

    from_seq: int
    to_seq: int
    size: int
    checkpoint: str


@dataclass(frozen=True)
class ForgetResult:
    """What a forget committed, or (``repeated``) the first forget's entry when it was already done."""

    record_id: str
    content_hash: str
    seq: int
    checkpoint: str
    covers: dict[str, Any]
    slot: str | None = None
    also: list[str] = field(default_factory=list)  # other rows of the same knowledge, erased too
    to_seq: int | None = None
    repeated: bool = False  # already forgotten: the first forget's entry, no new one
    knowledge: list[str] = field(default_factory=list)  # knowledge keys now refused


class RowReads:
    """The log port's record reads for a log whose rows live in a row store (``self.rows``): the
    DynamoDB ``RowStore`` behind ``LogStore``, the in-memory rows behind the tests' fake log. One
    set of forwards, so the adapter and the fake cannot drift apart in what they read."""

    rows: Any

    def record(self, ref: PackageRef, record_id: str) -> LogRow | None:
        return self.rows.get(ref, record_id)

    def lookup(self, ref: PackageRef, ids: set[str], slots: set[str]) -> Lookup:
        return self.rows.lookup(ref, ids, slots)

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
        return self.rows.list_active(ref, zone, tag, limit, cursor, trust, agent)

    def active_listed(self, ref: PackageRef, ids: Iterable[str]) -> dict[str, ListedRecord]:
        return self.rows.active_listed(ref, ids)

    def review_queue(
        self, ref: PackageRef, limit: int, cursor: str | None = None
    ) -> tuple[list[LogRow], str | None]:
        return self.rows.review_queue(ref, limit, cursor)

    def with_knowledge(self, ref: PackageRef, knowledge: str) -> list[LogRow]:
        return self.rows.with_knowledge(ref, knowledge)

    def cursor_after(self, row: LogRow | ListedRecord) -> str:
        return self.rows.cursor_after(row)

    def active_records(self, ref: PackageRef, ids: Iterable[str]) -> dict[str, dict[str, Any]]:
        return self.rows.active_records(ref, ids)

    def active_ids(self, ref: PackageRef, ids: Iterable[str]) -> set[str]:
        return self.rows.active_ids(ref, ids)

    def active_rows(self, ref: PackageRef) -> Iterator[LogRow]:
        return self.rows.iter_active(ref)

    def read_files(self, ref: PackageRef) -> list[tuple[str, str]]:
        return self.rows.read_files(ref)

    def tombstone_hits(
        self, ref: PackageRef, probes: Sequence[forgetting.Probe], near: forgetting.NearPolicy
    ) -> list[forgetting.Hit]:
        return self.rows.tombstone_hits(ref, probes, near)

    def file_forgotten(self, ref: PackageRef, file_keys: Iterable[str]) -> dict[str, int]:
        return self.rows.file_forgotten(ref, file_keys)
