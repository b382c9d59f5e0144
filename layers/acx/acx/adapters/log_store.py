"""The memory log's write operations: append, forget, forget a file, set the operator lock; and the
reads the use cases share, over the stores the log is composed of.

Each operation prepares what it writes (entry specs and row requests, read under the lease: the rows
it merged from, the tombstones that refuse it, the rows a forget erases) and hands it to the one
serialized commit, :class:`acx.adapters.log_commit.Committer` (lease, claim + receipt + checkpoint in
one transaction, rows, release). Reads that do not write (lookup, listing, files, proofs) live in the
row, receipt and checkpoint stores (``rows``, ``receipts``, ``checkpoints``, ``sequencer``). About
Kept as one module: the four operations share the commit and the result types.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from acx.adapters.dynamo import BARRIER, Contention, CorruptStore, Dynamo, LogStoreError, RowsIncomplete
from acx.adapters.log_commit import Committer, Prepared, StoreRefused
from acx.adapters.log_receipts import CheckpointStore, ReceiptStore
from acx.adapters.log_rows import DEFAULT_ROW_SHARDS, Request, RowStore, ShardLayout, prepare
from acx.adapters.log_sequencer import HeadState, LeaseExpired, PackageLocked, Sequencer
from acx.config import Settings
from acx.core import log as logcore
from acx.core.append import AppendPlan, EntrySpec, LogHead
from acx.core.checkpoint import Checkpoint
from acx.core.package import PackageRef
from acx.core.rows import Conflict, FileRow, FileWrite, Forgotten, LogRow, NotFound, RecordWrite, Tombstones

MAX_ENTRIES_PER_OPERATION = 6000  # several receipt items, one transaction, far below 4 MB

__all__ = [
    "AppendResult",
    "Conflict",
    "Contention",
    "CorruptStore",
    "ForgetResult",
    "Forgotten",
    "LeaseExpired",
    "LogStore",
    "LogStoreError",
    "NotFound",
    "PackageLocked",
    "RowsIncomplete",
    "StoreRefused",
]


@dataclass(frozen=True)
class AppendResult:
    from_seq: int
    to_seq: int
    size: int
    checkpoint: str


@dataclass(frozen=True)
class ForgetResult:
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


Guard = Callable[[], None]  # runs under the lease before the claim; raises to refuse (e.g. Forgotten)


class LogStore:
    """Receipts, rows, heads and checkpoints of every package, over a boto3 DynamoDB client.

    ``sign`` turns a checkpoint into a signed note (C2SP); ``verifier_key`` gives its public key line
    (see :class:`acx.core.checkpoint.NoteSigner`, which provides both).
    """

    def __init__(
        self,
        dynamodb_client: Any,
        settings: Settings,
        sign: Callable[[Checkpoint], str],
        verifier_key: Callable[[], str],
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], None] = time.sleep,
        lease_seconds: float = 30.0,
        lease_margin: float = 5.0,
        wait_budget: float = 60.0,
        hook: Callable[[str], None] | None = None,
        row_shards: int = DEFAULT_ROW_SHARDS,
    ) -> None:
        self.dynamo = Dynamo(dynamodb_client, sleep, clock=clock)
        self._verifier_key = verifier_key
        self.sequencer = Sequencer(
            self.dynamo, settings.heads_table, clock, lease_seconds, lease_margin, row_shards
        )
        self.rows = RowStore(
            self.dynamo, settings.records_table, ShardLayout(dynamodb_client, settings.heads_table)
        )
        self.receipts = ReceiptStore(self.dynamo, settings.receipts_table)
        self.checkpoints = CheckpointStore(self.dynamo, settings.heads_table)
        self.committer = Committer(
            self.dynamo,
            self.sequencer,
            self.receipts,
            self.checkpoints,
            sign,
            settings.publisher_id,
            clock,
            wait_budget,
            hook,
        )

    @property
    def db(self) -> Any:
        return self.dynamo.client

    @property
    def hook(self) -> Callable[[str], None]:
        """Fault injection at the commit's boundaries (see :class:`Committer`)."""
        return self.committer.hook

    @hook.setter
    def hook(self, value: Callable[[str], None]) -> None:
        self.committer.hook = value

    @property
    def time_left(self) -> Callable[[], float] | None:
        """Seconds the caller has left, bounding row retries under throttling (see :class:`Committer`)."""
        return self.committer.time_left

    @time_left.setter
    def time_left(self, value: Callable[[], float] | None) -> None:
        self.committer.time_left = value

    @property
    def lease_seconds(self) -> float:
        return self.sequencer.lease_seconds

    @lease_seconds.setter
    def lease_seconds(self, value: float) -> None:
        self.sequencer.lease_seconds = value

    def verifier_key(self) -> str:
        """Signed-note verifier key of the checkpoint signer."""
        return self._verifier_key()

    # ------------------------------------------------------------------ reads the use cases share

    def head(self, ref: PackageRef) -> HeadState:
        return self.sequencer.read(ref)

    def package_exists(self, ref: PackageRef) -> bool:
        return self.sequencer.exists(ref)

    def latest_checkpoint(self, ref: PackageRef) -> str | None:
        return self.checkpoints.latest(ref)

    # the verifier's Store (acx.usecases.verify.Store)

    def log_head(self, ref: PackageRef) -> LogHead:
        return self.sequencer.read(ref).log

    def may_have_tombstones(self, ref: PackageRef) -> bool:
        """Whether a forget was ever claimed here (or it is unknown): an advisory read before the
        lease, so a caller can prepare its tombstone check's probes; the check itself decides on the
        head read under the lease (a forget claimed in between is caught there)."""
        return self.sequencer.read(ref).may_have_tombstones

    def entries(self, ref: PackageRef, start: int = 0, end: int | None = None) -> Iterator[logcore.Entry]:
        return self.receipts.entries(ref, start, end)

    def all_rows(self, ref: PackageRef) -> Iterator[LogRow | FileRow]:
        yield from self.rows.rows(ref)
        yield from self.rows.files(ref)

    def rows_by_key(self, ref: PackageRef, keys: Sequence[str]) -> list[LogRow | FileRow]:
        return self.rows.by_keys(ref, keys)

    def witness(self, ref: PackageRef) -> dict[str, Any] | None:
        return self.checkpoints.witness(ref)

    def put_witness(self, ref: PackageRef, state: dict[str, Any]) -> bool:
        return self.checkpoints.put_witness(ref, state)

    def packages(self) -> Iterator[PackageRef]:
        return self.checkpoints.packages()

    # ------------------------------------------------------------------ the commit

    def _commit(
        self, ref: PackageRef, actor: str, prepare_: Callable[[HeadState], Prepared], admin_op: bool = False
    ) -> tuple[AppendPlan, str]:
        return self.committer.commit(ref, actor, prepare_, admin_op)

    # ------------------------------------------------------------------ append

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
        """One write operation: receipt first, then rows. See the module docstring for the protocol.

        ``retired``: ids whose rows are removed because a survivor absorbed them. ``expected``: id ->
        seq seen at lookup (None = absent); ``expected_slots``: slot -> record id its index item named
        (None = absent); any difference raises :class:`Conflict` before the receipt is written.
        ``guard`` runs under the lease before the claim (the tombstone check), unless the head read
        under that lease proves no forget was ever claimed here (tombstones are only written after a
        forget's claim, which flags the head in its transaction). Operations over
        ``MAX_ENTRIES_PER_OPERATION`` are split in several. Every entry names ``agent`` (the writer's
        agent id, if any); a record written as a candidate (``RecordWrite.trust``) says so in its entry.
        """
        if not writes and not files:
            raise ValueError("an operation must write at least one record or file")
        rows = {f"r#{w.id}": prepare(w) for w in writes}
        by_file = {f"f#{f.path}": f for f in files}
        specs = [
            EntrySpec("remember", r.write.zone, r.content_hash, k, extra=attribution(agent, r.write.trust))
            for k, r in rows.items()
        ]
        specs += [
            EntrySpec(
                "remember", "file", logcore.file_content_hash(f.path, f.content), k, extra=attribution(agent)
            )
            for k, f in by_file.items()
        ]
        if len(rows) != len(writes) or len(by_file) != len(files):
            raise ValueError("an operation writes each record id and file path at most once")
        if len({w.slot for w in writes}) != len(writes) or {w.id for w in writes} & set(retired):
            raise ValueError("writes must have distinct slots, and a retired id cannot be written")
        first: int | None = None
        plan: AppendPlan | None = None
        text = ""
        for i in range(0, len(specs), MAX_ENTRIES_PER_OPERATION):
            part = specs[i : i + MAX_ENTRIES_PER_OPERATION]
            lo = i

            def prepare_(head: HeadState, part: list[EntrySpec] = part, lo: int = lo) -> Prepared:
                if lo == 0:  # the checks and the guard run once, under the first part's lease
                    if not self.rows.unchanged(ref, expected or {}, expected_slots or {}):
                        raise Conflict("a row changed since it was read")
                    if guard is not None and head.may_have_tombstones:
                        guard()  # skipped only when the head proves no forget ever claimed here

                def requests(entries: list[logcore.Entry]) -> Iterable[Request]:
                    return self.rows.write_requests(ref, entries, rows, by_file, retired if lo == 0 else ())

                return Prepared(part, requests)

            plan, text = self._commit(ref, actor, prepare_)
            first = plan.first_seq if first is None else first
        assert first is not None and plan is not None
        return AppendResult(first, plan.size - 1, plan.size, text)

    # ------------------------------------------------------------------ forget

    def _find(self, ref: PackageRef, record_id: str | None, content_hash: str | None) -> LogRow:
        if record_id is not None:
            row = self.rows.get(ref, record_id)
            if row is not None and (content_hash is None or row.content_hash == content_hash):
                return row
            raise NotFound("no record with that id")
        if content_hash is None:
            raise ValueError("forget needs a record id or a content hash")
        # No index by content hash: a filtered Query over this package's rows (forget is rare).
        found = None  # a tombstoned row keeps the content hash (its forget entry carries it)
        for row in self.rows.rows(ref):
            if row.content_hash == content_hash:
                if row.active:
                    return row
                found = found or row
        if found is None:
            raise NotFound("no record with that content hash")
        return found

    def forget(
        self,
        ref: PackageRef,
        actor: str,
        record_id: str | None = None,
        content_hash: str | None = None,
        tombstones: Callable[[LogRow], Tombstones] | None = None,
        agent: str | None = None,
    ) -> ForgetResult:
        """Receipt ``forget`` entries covering the record's entry (and every other active row with the
        same knowledge key, both tiers), then erase their plaintext and file the tombstones, all in
        one serialized commit. Forgetting a forgotten record answers the first forget (``repeated``)."""
        found: dict[str, Any] = {}

        def prepare_(head: HeadState) -> Prepared:
            target = self._find(ref, record_id, content_hash)
            found.clear()
            found["target"] = target
            victims = [target] if target.active else []
            if target.knowledge:
                victims += [r for r in self.rows.with_knowledge(ref, target.knowledge) if r.id != target.id]
            if not victims:
                raise _Repeat()  # (a first forget cut short left other rows of its knowledge: erased now)
            found["victims"] = victims
            stones = [tombstones(v) for v in victims] if tombstones else []
            found["keys"] = list(dict.fromkeys(k for st in stones for k in st.knowledge))
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

            def requests(entries: list[logcore.Entry]) -> Iterable[Request]:
                # Tombstones land before any erasure: a forget cut short between them is finished by
                # its repeat (rows still active are forgotten again), never left erased but unrefused.
                out = self.rows.tombstone_requests(ref, Tombstones.union(stones), entries[0].seq)
                out.append(BARRIER)
                op = (entries[0].seq, entries[-1].seq)
                for v, e in zip(victims, entries, strict=True):
                    out += self.rows.erase_requests(ref, v, e, op)
                return _unique(out)  # one BatchWriteItem may not name a key twice

            return Prepared(specs, requests)

        try:
            plan, text = self._commit(ref, actor, prepare_)
        except _Repeat:
            return self._repeat(ref, found["target"])
        victims: list[LogRow] = found["victims"]
        t = victims[0]  # the target, or (finishing a forget cut short) the first row it left
        return ForgetResult(
            t.id,
            t.content_hash,
            plan.first_seq,
            text,
            {"seq": t.seq, "hash": t.entry_hash},
            t.slot,
            [v.id for v in victims[1:]],
            plan.size - 1,
            knowledge=found["keys"],
        )

    def _repeat(self, ref: PackageRef, row: LogRow) -> ForgetResult:
        """The answer of the forget that tombstoned ``row``: its entry and the checkpoint after it."""
        entry = next(iter(self.receipts.entries(ref, row.seq, row.seq + 1)), None)
        if entry is None or entry.operation != "forget" or entry.covers is None:
            raise CorruptStore(f"tombstoned row {row.key} has no forget entry")
        first, last = row.forget_op or (row.seq, row.seq)
        cp = self.checkpoints.at(ref, last + 1) or ""
        covers = {"seq": entry.covers.seq, "hash": entry.covers.hash}
        keys = [k for k in [row.knowledge, *row.past_keys] if k]
        return ForgetResult(row.id, row.content_hash, first, cp, covers, row.slot, [], last, True, keys)

    def forget_file(
        self,
        ref: PackageRef,
        actor: str,
        path: str | None,
        content_hash: str | None,
        file_key: Callable[[str], str],
    ) -> tuple[FileRow, AppendPlan | None]:
        """Receipt a ``forget`` entry for one file, erase its content, file its content tombstone.
        Returns the file row as it was and the plan (None: already forgotten, no new entry)."""
        found: dict[str, FileRow] = {}

        def prepare_(head: HeadState) -> Prepared:
            f = self.rows.get_file(ref, path) if path is not None else None
            if path is None:
                f = next((x for x in self.rows.files(ref) if x.content_hash == content_hash), None)
            if f is None or (content_hash is not None and f.content_hash != content_hash):
                raise NotFound("no file with that path or content hash")
            found["file"] = f
            if not f.active:
                raise _Repeat()
            assert f.content is not None
            stones = Tombstones(files=(f.file_key or file_key(f.content),))
            spec = EntrySpec("forget", "file", f.content_hash, f.key, logcore.Covers(f.seq, f.entry_hash))

            def requests(entries: list[logcore.Entry]) -> Iterable[Request]:
                e = entries[0]  # the tombstone first (see forget)
                return [
                    *self.rows.tombstone_requests(ref, stones, e.seq),
                    BARRIER,
                    *self.rows.erase_file_requests(ref, f, e),
                ]

            return Prepared([spec], requests)

        try:
            plan = self._commit(ref, actor, prepare_)[0]
            return found["file"], plan
        except _Repeat:
            return found["file"], None

    # ------------------------------------------------------------------ operator lock (scope admin)
    #
    # The state lives on the head item as ``adminLock = {locked, seq, contentHash}`` (apart from the
    # writers' lease ``lock``). A ``lock``/``unlock`` entry is receipted through ``_commit`` like any
    # write, and its seq claim sets the state in the same transaction; every other claim is conditional
    # on "not locked", so no write can take a seq after a lock entry. The entries have no row key, so
    # the verifier neither expects a row for them nor reports them as orphans.

    def admin_lock(self, ref: PackageRef) -> dict[str, Any] | None:
        return self.sequencer.admin_lock(ref)

    def set_admin_lock(self, ref: PackageRef, actor: str, locked: bool, content_hash: str) -> AppendResult:
        """Receipt one ``lock``/``unlock`` entry (hashes only); its seq claim moves the head's lock state."""
        spec = EntrySpec("lock" if locked else "unlock", "package", content_hash, None)
        plan, text = self._commit(
            ref, actor, lambda head: Prepared([spec], lambda entries: []), admin_op=True
        )
        return AppendResult(plan.first_seq, plan.size - 1, plan.size, text)

    # ------------------------------------------------------------------ review (acx.core.review)

    def policy(self, ref: PackageRef) -> str | None:
        return self.rows.policy(ref)

    def set_policy(
        self, ref: PackageRef, actor: str, review: str, content_hash: str, agent: str | None = None
    ) -> AppendResult:
        """Receipt one ``policy`` entry (the hash of the canonical policy), then store the setting
        (receipt before row: a setting never changes without the entry that says who changed it)."""
        spec = EntrySpec("policy", "package", content_hash, None, extra=attribution(agent))
        plan, text = self._commit(
            ref,
            actor,
            lambda head: Prepared([spec], lambda es: self.rows.policy_requests(ref, review, es[0])),
        )
        return AppendResult(plan.first_seq, plan.size - 1, plan.size, text)

    def review(
        self,
        ref: PackageRef,
        actor: str,
        record_id: str,
        decision: str,
        seen_seq: int,
        agent: str | None = None,
    ) -> AppendResult:
        """Receipt one ``review`` entry covering the candidate's entry (``decision``: approve | reject),
        under the lease and only if the row is still the candidate read at ``seen_seq`` (else
        :class:`Conflict`); an approval then turns the row into a belief naming the reviewer. A
        rejection writes only the entry: the caller forgets the memory next (the tombstone path)."""

        def prepare_(head: HeadState) -> Prepared:
            row = self.rows.get(ref, record_id)
            if row is None or not row.active or row.seq != seen_seq or row.trust != "candidate":
                raise Conflict("the candidate changed since it was read")
            extra = (("decision", decision), *attribution(agent))
            cover = logcore.Covers(row.seq, row.entry_hash)
            spec = EntrySpec("review", row.zone or "save", row.content_hash, None, cover, extra)

            def requests(entries: list[logcore.Entry]) -> Iterable[Request]:
                if decision == "approve":
                    return self.rows.approve_requests(ref, row, entries[0])
                return []  # reject: the forget that follows tombstones the row (its queue item is skipped)

            return Prepared([spec], requests)

        plan, text = self._commit(ref, actor, prepare_)
        return AppendResult(plan.first_seq, plan.size - 1, plan.size, text)


def attribution(agent: str | None, trust: str = "belief") -> tuple[tuple[str, str], ...]:
    """The optional payload fields of an entry (:data:`acx.core.log.OPTIONAL`): the writer's agent id,
    and ``trust`` for a candidate (a belief's entry carries none: entries from before trust existed
    read the same)."""
    out: tuple[tuple[str, str], ...] = (("agent", agent),) if agent else ()
    return (*out, ("trust", "candidate")) if trust == "candidate" else out


def _unique(requests: list[Request]) -> list[Request]:
    """The requests with each item key once (the first request for a key wins)."""
    seen: set[tuple[str, str, str]] = set()
    out = []
    for table, req in requests:
        if (table, req) == BARRIER:
            out.append(BARRIER)
            continue
        item = req["PutRequest"]["Item"] if "PutRequest" in req else req["DeleteRequest"]["Key"]
        k = (table, item["pk"]["S"], item["sk"]["S"])
        if k not in seen:
            seen.add(k)
            out.append((table, req))
    return out


class _Repeat(Exception):
    """Internal: the forget target is already forgotten (answer the first forget, append nothing)."""
