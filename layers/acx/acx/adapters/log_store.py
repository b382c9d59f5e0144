"""The memory log's write operations: append, forget, forget a file, supersede and invalidate a
memory's version, set the operator lock; and the reads the use cases share, over the stores the log
is composed of.

Each operation prepares what it writes (entry specs and row requests, read under the lease: the rows
it merged from, the tombstones that refuse it, the rows a forget erases) and hands it to the one
serialized commit, :class:`acx.adapters.log_commit.Committer` (lease, claim + receipt + checkpoint in
one transaction, rows, release). Reads that do not write (lookup, listing, files, proofs) live in the
row, receipt and checkpoint stores (``rows``, ``receipts``, ``checkpoints``, ``sequencer``); this
class passes them on as the use cases' one log interface (:class:`acx.usecases.ports.LogPort`), so no
use case reaches into those stores. Which rows a forget erases and what a tombstone refuses are
decided by :mod:`acx.core.erasure` (and what a version may do by :mod:`acx.core.versions`); this
module and the row store carry the decisions out. Kept as one module: the operations share the commit.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from acx.adapters.dynamo import BARRIER, Contention, CorruptStore, Dynamo, LogStoreError, RowsIncomplete
from acx.adapters.log_commit import Committer, Prepared, StoreRefused
from acx.adapters.log_receipts import CheckpointStore, ReceiptStore
from acx.adapters.log_rows import DEFAULT_ROW_SHARDS, Request, RowStore, ShardLayout, prepare
from acx.adapters.log_sequencer import HeadState, LeaseExpired, PackageLocked, Sequencer
from acx.config import Settings
from acx.core import erasure
from acx.core import log as logcore
from acx.core.append import AppendPlan, EntrySpec, LogHead
from acx.core.checkpoint import Checkpoint
from acx.core.package import PackageRef
from acx.core.review import attribution, check_admitted, decision_specs
from acx.core.rows import (
    AppendResult,
    Conflict,
    Edit,
    FileRow,
    FileWrite,
    ForgetResult,
    Forgotten,
    LogRow,
    NotFound,
    RecordWrite,
    RowReads,
    Tombstones,
    VersionRow,
)

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


Guard = Callable[[], None]  # runs under the lease before the claim; raises to refuse (e.g. Forgotten)


class LogStore(RowReads):
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
        """One consistent read of the head item; it also fixes the package's row shard count for the
        row reads that follow (the same item the layout would read)."""
        state = self.sequencer.read(ref)
        if state.exists:
            self.rows.layout.remember(ref, state.row_shards)
        return state

    def package_exists(self, ref: PackageRef) -> bool:
        return self.sequencer.exists(ref)

    def admin_lock(self, ref: PackageRef) -> dict[str, Any] | None:
        return self.sequencer.admin_lock(ref)

    def latest_checkpoint(self, ref: PackageRef) -> str | None:
        return self.checkpoints.latest(ref)

    def checkpoint_at(self, ref: PackageRef, size: int) -> str | None:
        return self.checkpoints.at(ref, size)

    def leaf_hashes(self, ref: PackageRef, size: int) -> list[bytes]:
        return self.receipts.leaf_hashes(ref, size)

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

    def all_versions(self, ref: PackageRef) -> Iterator[VersionRow]:
        return self.rows.all_versions(ref)

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
                    self._check_policy(ref, writes)
                    if guard is not None and head.may_have_tombstones:
                        guard()  # skipped only when the head proves no forget ever claimed here

                def requests(entries: list[logcore.Entry]) -> Iterable[Request]:
                    return self.rows.write_requests(ref, entries, rows, by_file, retired if lo == 0 else ())

                return Prepared(part, requests)

            plan, text = self._commit(ref, actor, prepare_)
            first = plan.first_seq if first is None else first
        assert first is not None and plan is not None
        return AppendResult(first, plan.size - 1, plan.size, text)

    def _check_policy(self, ref: PackageRef, writes: Sequence[RecordWrite]) -> None:
        """:func:`acx.core.review.check_admitted` on the policy read here, inside the commit."""
        check_admitted(self.rows.policy(ref), writes)

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
        found = erasure.target_by_content_hash(self.rows.rows(ref), content_hash)
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
        """Receipt ``forget`` entries covering the rows :func:`acx.core.erasure.erased_rows` names (the
        record's, and every other active row with the same knowledge key, both tiers), then erase their
        plaintext and file the tombstones, all in one serialized commit. Forgetting a forgotten record
        answers the first forget (``repeated``)."""
        found: dict[str, Any] = {}

        def prepare_(head: HeadState) -> Prepared:
            target = self._find(ref, record_id, content_hash)
            found.clear()
            found["target"] = target
            same = self.rows.with_knowledge(ref, target.knowledge) if target.knowledge else []
            held = self.rows.with_version_knowledge(ref, target.knowledge) if target.knowledge else []
            victims = erasure.erased_rows(target, [*same, *held], {r.id for r in held})
            if not victims:
                raise _Repeat()  # (a first forget cut short left other rows of its knowledge: erased now)
            found["victims"] = victims
            # every ended version of a victim (or of an id folded into it) is erased too, and its text
            # refused like the current one
            ended = {
                v.id: [x for i in dict.fromkeys([v.id, *v.past_ids]) for x in self.rows.versions(ref, i)]
                for v in victims
            }
            versions = [x.as_row() for v in victims for x in ended[v.id]]
            stones = [tombstones(v) for v in [*victims, *versions]] if tombstones else []
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
                    out += self.rows.delete_version_requests(ref, ended[v.id])
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
        keys = erasure.refused_keys(row)
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

    # ------------------------------------------------------------------ versions (supersede, invalidate)
    #
    # A supersede or invalidate is one more operation through the same commit: under the lease the
    # memory's row must still be the version the caller decided on (``expected``: its seq), else
    # Conflict (re-read, decide again). Its entry covers that version's entry. Rows: the old version
    # is kept as a ``v#<id>#<seq>`` item first, then the row is rewritten (the new version, or
    # ``ended`` with no body), then the old slot item goes. A crash between receipt and rows leaves
    # an orphan entry (benign, reported by verify) and the old version still current: the retry
    # supersedes it again.

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
        """Receipt a ``supersede`` entry covering the memory's current version, keep that version as
        an ended version, and write ``write`` as the current one (``extra``: validFrom)."""
        new = prepare(write)

        def prepare_(head: HeadState) -> Prepared:
            old = self._current(ref, write.id, expected)
            if not self.rows.unchanged(ref, {}, expected_slots or {}):
                raise Conflict("a slot changed since it was read")
            self._check_policy(ref, [write])
            if guard is not None and head.may_have_tombstones:
                guard()
            spec = EntrySpec(
                "supersede", write.zone, new.content_hash, old.key, logcore.Covers(old.seq, old.entry_hash),
                extra=extra,
            )  # fmt: skip

            def requests(entries: list[logcore.Entry]) -> Iterable[Request]:
                out: list[Request] = [self.rows.version_request(ref, old, entries[0].seq), BARRIER]
                out += self.rows.write_requests(ref, entries, {old.key: new}, {}, ())
                if old.slot and old.slot != write.slot:
                    out.append(self.rows.slot_delete_request(ref, old.slot))
                return out

            return Prepared([spec], requests)

        plan, text = self._commit(ref, actor, prepare_)
        return AppendResult(plan.first_seq, plan.size - 1, plan.size, text)

    def invalidate(
        self,
        ref: PackageRef,
        actor: str,
        record_id: str,
        expected: int,
        content_hash: str,
        extra: tuple[tuple[str, str], ...] = (),
    ) -> AppendResult:
        """Receipt an ``invalidate`` entry (``content_hash``: of the reason; ``extra``: validUntil)
        covering the current version, keep that version as an ended version, mark the row ``ended``."""

        def prepare_(head: HeadState) -> Prepared:
            old = self._current(ref, record_id, expected)
            spec = EntrySpec(
                "invalidate", old.zone or "save", content_hash, old.key,
                logcore.Covers(old.seq, old.entry_hash), extra=extra,
            )  # fmt: skip

            def requests(entries: list[logcore.Entry]) -> Iterable[Request]:
                e = entries[0]
                keep = self.rows.version_request(ref, old, e.seq)
                return [keep, BARRIER, *self.rows.ended_request(ref, old, e)]

            return Prepared([spec], requests)

        plan, text = self._commit(ref, actor, prepare_)
        return AppendResult(plan.first_seq, plan.size - 1, plan.size, text)

    def _current(self, ref: PackageRef, record_id: str, expected: int) -> LogRow:
        """The memory's row, read under the lease: still active at the seq the caller decided on."""
        row = self.rows.get(ref, record_id)
        if row is None or not row.active or row.seq != expected or row.record is None:
            raise Conflict("the memory changed since it was read")
        return row

    def memory_versions(self, ref: PackageRef, record_id: str) -> list[VersionRow]:
        """The ended versions of one memory (history and as-of reads)."""
        return self.rows.versions(ref, record_id)

    # ------------------------------------------------------------------ operator lock (scope admin)
    #
    # The state lives on the head item as ``adminLock = {locked, seq, contentHash}`` (apart from the
    # writers' lease ``lock``). A ``lock``/``unlock`` entry is receipted through ``_commit`` like any
    # write, and its seq claim sets the state in the same transaction; every other claim is conditional
    # on "not locked", so no write can take a seq after a lock entry. The entries have no row key, so
    # the verifier neither expects a row for them nor reports them as orphans.

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
        edit: Edit | None = None,
    ) -> AppendResult:
        """Receipt the entries of :func:`acx.core.review.decision_specs` (``decision``: approve |
        reject), under the lease and only if the row is still the candidate read at ``seen_seq`` (else
        :class:`Conflict`); an approval then turns the row into a belief naming the reviewer. A
        rejection writes only the entry: the caller forgets the memory next (the tombstone path).

        ``edit``: the supersede's rows in the same commit (the candidate kept as ``v#<id>#<seq>``
        first, then the row rewritten as the corrected version, a belief naming the reviewer, its old
        slot item and queue item gone), after the supersede's checks (slot pointers, tombstone guard)."""
        new = prepare(edit.write) if edit is not None else None

        def prepare_(head: HeadState) -> Prepared:
            row = self.rows.get(ref, record_id)
            if row is None or not row.active or row.seq != seen_seq or row.trust != "candidate":
                raise Conflict("the candidate changed since it was read")
            specs = decision_specs(row, decision, agent, edit.write if edit is not None else None)
            if edit is None or new is None:

                def requests(entries: list[logcore.Entry]) -> Iterable[Request]:
                    if decision == "approve":
                        return self.rows.approve_requests(ref, row, entries[0])
                    return []  # reject: the forget that follows tombstones the row (its queue item skipped)

                return Prepared(specs, requests)
            if not self.rows.unchanged(ref, {}, edit.expected_slots):
                raise Conflict("a slot changed since it was read")
            if edit.guard is not None and head.may_have_tombstones:
                edit.guard()

            def edit_requests(entries: list[logcore.Entry]) -> Iterable[Request]:
                superseding, approval = entries
                out: list[Request] = [self.rows.version_request(ref, row, superseding.seq), BARRIER]
                out += self.rows.write_requests(ref, [superseding], {row.key: new}, {}, (), approval)
                if row.slot and row.slot != edit.write.slot:
                    out.append(self.rows.slot_delete_request(ref, row.slot))
                return [*out, *self.rows.dequeue_requests(ref, row)]

            return Prepared(specs, edit_requests)

        plan, text = self._commit(ref, actor, prepare_)
        return AppendResult(plan.first_seq, plan.size - 1, plan.size, text)


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
