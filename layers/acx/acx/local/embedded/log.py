"""The memory log on the embedded SQLite file: :class:`acx.usecases.ports.LogPort` for one machine.

The same log as :class:`acx.adapters.log_store.LogStore` (a hash-chained, receipted log per package,
rows that name their entries, tombstones, ended versions, review and policy entries, the operator lock),
built from the same pure parts: :func:`acx.core.append.plan_append` numbers and chains the entries,
:mod:`acx.core.erasure` decides what a forget erases and what a tombstone refuses, the signed note is
:mod:`acx.core.checkpoint`'s. This module only stores.

Every write operation is one ``BEGIN IMMEDIATE`` transaction: read the head, run the caller's checks
(rows it merged from, the tombstone guard, what a forget erases), plan, sign, then write the head, the
entries, the checkpoint and the rows, and commit. SQLite's write lock is what the DynamoDB log builds
with a lease and a conditional claim; a crash anywhere before the commit leaves nothing of the
operation (the DynamoDB log can leave a receipt without its rows: an orphan the verifier reports and
the retry completes). Entries are still written before rows inside the transaction, so a fault hook
between them (``after-receipt``) sees the same order as the DynamoDB commit.

The rows live in :mod:`acx.local.embedded.rows`, laid out as the DynamoDB items are.

What it does NOT stop: anyone who can write the file can rewrite rows and entries; the verifier (hashes,
signed checkpoints, the witness) finds that, as it does for the DynamoDB tables.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import orjson

from acx.core import erasure, merkle
from acx.core import log as logcore
from acx.core.append import AppendPlan, EntrySpec, LogHead, plan_append
from acx.core.checkpoint import Checkpoint
from acx.core.faults import Locked
from acx.core.package import PackageRef
from acx.core.review import attribution, check_admitted, decision_specs
from acx.core.rows import (
    AppendResult,
    Conflict,
    CorruptStore,
    Edit,
    FileRow,
    FileWrite,
    ForgetResult,
    LogRow,
    NotFound,
    RecordWrite,
    RowReads,
    Tombstones,
    VersionRow,
)
from acx.local.embedded.db import Database
from acx.local.embedded.rows import PAGE, SqliteRows, column_json, stored_body

Guard = Callable[[], None]
Land = Callable[[list[logcore.Entry]], None]


@dataclass(frozen=True)
class Head:
    """A package's head as one transaction read it (:class:`acx.usecases.ports.PackageHead`)."""

    log: LogHead
    admin_locked: bool = False
    forgotten: bool = False  # a forget entry was committed here (tombstones may exist)
    exists: bool = False

    @property
    def size(self) -> int:
        return self.log.size

    @property
    def may_have_tombstones(self) -> bool:
        return self.forgotten


def _now_iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class _Repeat(Exception):
    """Internal: the forget's target is already forgotten (answer the first forget, append nothing)."""


class SqliteLog(RowReads):
    """Receipts, rows, heads and checkpoints of every package in one SQLite file (module docstring).

    ``sign`` turns a checkpoint into a signed note and ``verifier_key`` is its public key line
    (:class:`acx.core.checkpoint.NoteSigner`'s ``sign`` and ``verifier_key()``). ``hook`` is fault
    injection at the commit's boundaries ("before-claim", "after-receipt", "before-release"), as on
    :class:`acx.adapters.log_store.LogStore`.
    """

    def __init__(
        self,
        db: Database,
        sign: Callable[[Checkpoint], str],
        verifier_key: str,
        publisher_id: str = "dev.acx.local",
        *,
        clock: Callable[[], float] = time.time,
        hook: Callable[[str], None] | None = None,
    ) -> None:
        self.db = db
        self.sign = sign
        self._verifier_key = verifier_key
        self.publisher_id = publisher_id
        self.clock = clock
        self.hook: Callable[[str], None] = hook or (lambda _point: None)
        self.rows = SqliteRows(db)

    def verifier_key(self) -> str:
        return self._verifier_key

    # ------------------------------------------------------------------ heads and checkpoints

    def _head(self, ref: PackageRef) -> Head:
        r = self.db.one(
            "SELECT size, chain_head, range, forgotten, admin_lock FROM heads WHERE pk = ?", (ref.pk,)
        )
        if r is None:
            return Head(LogHead.empty())
        size, chain_head, rng, forgotten, lock = r
        try:
            log = LogHead(size, chain_head, merkle.CompactRange.from_hex(size, orjson.loads(rng)))
            locked = bool(orjson.loads(lock)["locked"]) if lock else False
        except (KeyError, TypeError, ValueError) as exc:
            raise CorruptStore(f"head of {ref.chain_key} does not decode: {exc}") from None
        return Head(log, locked, bool(forgotten), True)

    def head(self, ref: PackageRef) -> Head:
        return self._head(ref)

    def log_head(self, ref: PackageRef) -> LogHead:
        return self._head(ref).log

    def package_exists(self, ref: PackageRef) -> bool:
        r = self.db.one("SELECT size FROM heads WHERE pk = ?", (ref.pk,))
        return bool(r and r[0] > 0)

    def admin_lock(self, ref: PackageRef) -> dict[str, Any] | None:
        r = self.db.one("SELECT admin_lock FROM heads WHERE pk = ?", (ref.pk,))
        if r is None or r[0] is None:
            return None
        state = orjson.loads(r[0])
        if not isinstance(state, dict) or not isinstance(state.get("locked"), bool):
            raise CorruptStore("head lock state does not decode")
        return state

    def may_have_tombstones(self, ref: PackageRef) -> bool:
        return self._head(ref).may_have_tombstones

    def latest_checkpoint(self, ref: PackageRef) -> str | None:
        r = self.db.one("SELECT text FROM checkpoints WHERE pk = ? ORDER BY size DESC LIMIT 1", (ref.pk,))
        return str(r[0]) if r else None

    def checkpoint_at(self, ref: PackageRef, size: int) -> str | None:
        r = self.db.one("SELECT text FROM checkpoints WHERE pk = ? AND size = ?", (ref.pk, size))
        return str(r[0]) if r else None

    def entries(self, ref: PackageRef, start: int = 0, end: int | None = None) -> Iterator[logcore.Entry]:
        """Entries ``[start, end)`` in seq order, read in pages."""
        seq = max(start, 0)
        stop = end if end is not None else 1 << 62
        while seq < stop:
            page = self.db.query(
                "SELECT seq, hash, prev, payload, key FROM entries WHERE pk = ? AND seq >= ? AND seq < ? "
                "ORDER BY seq LIMIT ?",
                (ref.pk, seq, stop, PAGE),
            )
            for s, h, prev, payload, key in page:
                try:
                    yield logcore.Entry(s, h, prev, orjson.loads(payload), key)
                except ValueError as exc:
                    raise CorruptStore(f"entry {s} of {ref.chain_key} does not decode: {exc}") from None
            if len(page) < PAGE:
                return
            seq = page[-1][0] + 1

    def leaf_hashes(self, ref: PackageRef, size: int) -> list[bytes]:
        got = self.db.query("SELECT hash FROM entries WHERE pk = ? AND seq < ? ORDER BY seq", (ref.pk, size))
        if len(got) != size:
            raise NotFound(f"log has {len(got)} entries, not {size}")
        return [merkle.leaf_hash(bytes.fromhex(h)) for (h,) in got]

    # ------------------------------------------------------------------ the verifier's reads

    def all_rows(self, ref: PackageRef) -> Iterator[LogRow | FileRow]:
        yield from self.rows.rows(ref)
        yield from self.rows.files(ref)

    def rows_by_key(self, ref: PackageRef, keys: Sequence[str]) -> list[LogRow | FileRow]:
        return self.rows.by_keys(ref, keys)

    def all_versions(self, ref: PackageRef) -> Iterator[VersionRow]:
        return self.rows.all_versions(ref)

    def memory_versions(self, ref: PackageRef, record_id: str) -> list[VersionRow]:
        return self.rows.versions(ref, record_id)

    def witness(self, ref: PackageRef) -> dict[str, Any] | None:
        r = self.db.one("SELECT state FROM witness WHERE pk = ?", (ref.pk,))
        return dict(orjson.loads(r[0])) if r else None

    def put_witness(self, ref: PackageRef, state: dict[str, Any]) -> bool:
        """Store the verifier's state unless a larger size is stored (it only moves forward)."""
        size = int(state["size"])
        with self.db.transaction() as cx:
            r = cx.execute("SELECT size FROM witness WHERE pk = ?", (ref.pk,)).fetchone()
            if r is not None and r[0] > size:
                return False
            cx.execute(
                "INSERT OR REPLACE INTO witness (pk, size, state) VALUES (?, ?, ?)",
                (ref.pk, size, column_json(state)),
            )
        return True

    def packages(self) -> Iterator[PackageRef]:
        return iter(
            [PackageRef(t, p) for t, p in self.db.query("SELECT tenant, package FROM heads ORDER BY pk")]
        )

    # ------------------------------------------------------------------ the commit

    def _commit(
        self,
        ref: PackageRef,
        actor: str,
        prepare: Callable[[Head], tuple[list[EntrySpec], Land]],
        admin_op: bool = False,
    ) -> tuple[AppendPlan, str]:
        """One write operation, one transaction: head, checks, plan, sign, entries + checkpoint +
        head, rows, commit. Raises ``Locked`` for a write to a package an operator locked."""
        with self.db.transaction() as cx:
            head = self._head(ref)
            if head.admin_locked and not admin_op:
                raise Locked(f"package {ref.chain_key} is locked by an operator")
            specs, land = prepare(head)
            at = _now_iso(self.clock())
            plan = plan_append(head.log, specs, actor=actor, chain=ref.chain_key, created_at=at)
            text = self.sign(plan.checkpoint(ref.origin(self.publisher_id)))
            self.hook("before-claim")
            lock = None
            if admin_op:
                lock = column_json({"locked": specs[0].operation == "lock", "seq": head.size,
                           "contentHash": specs[0].content_hash})  # fmt: skip
            forgotten = head.forgotten or any(e.operation == "forget" for e in plan.entries)
            cx.execute(
                "INSERT INTO heads (pk, tenant, package, size, chain_head, range, forgotten, admin_lock) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (pk) DO UPDATE SET size = excluded.size, "
                "chain_head = excluded.chain_head, range = excluded.range, forgotten = excluded.forgotten, "
                "admin_lock = COALESCE(excluded.admin_lock, heads.admin_lock)",
                (ref.pk, ref.tenant, ref.package, plan.size, plan.head.chain_head,
                 column_json(plan.head.range.to_hex()), int(forgotten), lock),
            )  # fmt: skip
            cx.executemany(
                "INSERT INTO entries (pk, seq, hash, prev, payload, key) VALUES (?, ?, ?, ?, ?, ?)",
                [(ref.pk, e.seq, e.hash, e.prev_hash, column_json(e.payload), e.key) for e in plan.entries],
            )
            cx.execute("INSERT INTO checkpoints (pk, size, text) VALUES (?, ?, ?)", (ref.pk, plan.size, text))
            self.hook("after-receipt")
            land(plan.entries)
            self.hook("before-release")
        return plan, text

    @staticmethod
    def _result(plan: AppendPlan, text: str) -> AppendResult:
        return AppendResult(plan.first_seq, plan.size - 1, plan.size, text)

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
        """Receipt, then rows, in one transaction: ``Conflict`` if a row or slot pointer differs from
        what the writer read (``expected``, ``expected_slots``), ``guard`` (the tombstone check) run
        inside it unless the head proves no forget was ever committed here."""
        if not writes and not files:
            raise ValueError("an operation must write at least one record or file")
        rows = {f"r#{w.id}": (w, *stored_body(w)) for w in writes}
        by_file = {f"f#{f.path}": f for f in files}
        if len(rows) != len(writes) or len(by_file) != len(files):
            raise ValueError("an operation writes each record id and file path at most once")
        if len({w.slot for w in writes}) != len(writes) or {w.id for w in writes} & set(retired):
            raise ValueError("writes must have distinct slots, and a retired id cannot be written")
        specs = [
            EntrySpec("remember", w.zone, ch, k, extra=attribution(agent, w.trust))
            for k, (w, _, ch) in rows.items()
        ]
        specs += [
            EntrySpec(
                "remember", "file", logcore.file_content_hash(f.path, f.content), k, extra=attribution(agent)
            )
            for k, f in by_file.items()
        ]
        bodies = {k: (w, body) for k, (w, body, _) in rows.items()}

        def prepare(head: Head) -> tuple[list[EntrySpec], Land]:
            if not self.rows.unchanged(ref, expected or {}, expected_slots or {}):
                raise Conflict("a row changed since it was read")
            self._check_policy(ref, writes)
            if guard is not None and head.may_have_tombstones:
                guard()

            def land(entries: list[logcore.Entry]) -> None:
                self.rows.put_rows(ref, entries, bodies, by_file)
                self.rows.retire(ref, retired)

            return specs, land

        return self._result(*self._commit(ref, actor, prepare))

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
        found = erasure.target_by_content_hash(self.rows.by_content_hash(ref, content_hash), content_hash)
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
        """``forget`` entries covering the rows :func:`acx.core.erasure.erased_rows` names, their
        tombstones filed, their plaintext and ended versions erased: one transaction. A done forget
        answers the first one (``repeated``)."""
        found: dict[str, Any] = {}

        def prepare(head: Head) -> tuple[list[EntrySpec], Land]:
            target = self._find(ref, record_id, content_hash)
            found["target"] = target
            same = self.rows.with_knowledge(ref, target.knowledge) if target.knowledge else []
            held = self.rows.with_version_knowledge(ref, target.knowledge) if target.knowledge else []
            victims = erasure.erased_rows(target, [*same, *held], {r.id for r in held})
            if not victims:
                raise _Repeat()
            found["victims"] = victims
            ended = {
                v.id: [x for i in dict.fromkeys([v.id, *v.past_ids]) for x in self.rows.versions(ref, i)]
                for v in victims
            }
            versions = [x.as_row() for v in victims for x in ended[v.id]]
            stones = [tombstones(v) for v in [*victims, *versions]] if tombstones else []
            found["keys"] = list(dict.fromkeys(k for st in stones for k in st.knowledge))
            specs = [
                EntrySpec("forget", v.zone or "save", v.content_hash, v.key,
                          logcore.Covers(v.seq, v.entry_hash), attribution(agent))
                for v in victims
            ]  # fmt: skip

            def land(entries: list[logcore.Entry]) -> None:
                self.rows.put_tombstones(ref, Tombstones.union(stones), entries[0].seq)
                op = (entries[0].seq, entries[-1].seq)
                for v, e in zip(victims, entries, strict=True):
                    self.rows.erase(ref, v, e, op)
                    self.rows.delete_versions(ref, ended[v.id])

            return specs, land

        try:
            plan, text = self._commit(ref, actor, prepare)
        except _Repeat:
            return self._repeat(ref, found["target"])
        victims: list[LogRow] = found["victims"]
        t = victims[0]
        return ForgetResult(
            t.id, t.content_hash, plan.first_seq, text, {"seq": t.seq, "hash": t.entry_hash}, t.slot,
            [v.id for v in victims[1:]], plan.size - 1, knowledge=found["keys"],
        )  # fmt: skip

    def _repeat(self, ref: PackageRef, row: LogRow) -> ForgetResult:
        """The answer of the forget that tombstoned ``row``: its entry and the checkpoint after it."""
        entry = next(iter(self.entries(ref, row.seq, row.seq + 1)), None)
        if entry is None or entry.operation != "forget" or entry.covers is None:
            raise CorruptStore(f"tombstoned row {row.key} has no forget entry")
        first, last = row.forget_op or (row.seq, row.seq)
        cp = self.checkpoint_at(ref, last + 1) or ""
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
        """A ``forget`` entry for one file, its content erased and its tombstone filed. Returns the
        file row as it was and the plan (None: already forgotten, no new entry)."""
        found: dict[str, FileRow] = {}

        def prepare(head: Head) -> tuple[list[EntrySpec], Land]:
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

            def land(entries: list[logcore.Entry]) -> None:
                self.rows.put_tombstones(ref, stones, entries[0].seq)
                self.rows.erase_file(ref, f, entries[0])

            return [spec], land

        try:
            plan = self._commit(ref, actor, prepare)[0]
        except _Repeat:
            return found["file"], None
        return found["file"], plan

    # ------------------------------------------------------------------ versions

    def _current(self, ref: PackageRef, record_id: str, expected: int) -> LogRow:
        row = self.rows.get(ref, record_id)
        if row is None or not row.active or row.seq != expected or row.record is None:
            raise Conflict("the memory changed since it was read")
        return row

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
        """A ``supersede`` entry covering the memory's current version (at seq ``expected``, else
        ``Conflict``), that version kept as an ended version, ``write`` the current one."""
        body, ch = stored_body(write)

        def prepare(head: Head) -> tuple[list[EntrySpec], Land]:
            old = self._current(ref, write.id, expected)
            if not self.rows.unchanged(ref, {}, expected_slots or {}):
                raise Conflict("a slot changed since it was read")
            self._check_policy(ref, [write])
            if guard is not None and head.may_have_tombstones:
                guard()
            spec = EntrySpec(
                "supersede", write.zone, ch, old.key, logcore.Covers(old.seq, old.entry_hash), extra=extra
            )

            def land(entries: list[logcore.Entry]) -> None:
                self.rows.keep_version(ref, old, entries[0].seq)
                self.rows.put_rows(ref, entries, {old.key: (write, body)}, {})
                if old.slot and old.slot != write.slot:
                    self.rows.delete_slot(ref, old.slot)

            return [spec], land

        return self._result(*self._commit(ref, actor, prepare))

    def invalidate(
        self,
        ref: PackageRef,
        actor: str,
        record_id: str,
        expected: int,
        content_hash: str,
        extra: tuple[tuple[str, str], ...] = (),
    ) -> AppendResult:
        """An ``invalidate`` entry (``content_hash``: of the reason) ending the current version with
        no successor: kept as an ended version, the row ``ended``."""

        def prepare(head: Head) -> tuple[list[EntrySpec], Land]:
            old = self._current(ref, record_id, expected)
            spec = EntrySpec(
                "invalidate", old.zone or "save", content_hash, old.key,
                logcore.Covers(old.seq, old.entry_hash), extra=extra,
            )  # fmt: skip

            def land(entries: list[logcore.Entry]) -> None:
                self.rows.keep_version(ref, old, entries[0].seq)
                self.rows.end(ref, old, entries[0])

            return [spec], land

        return self._result(*self._commit(ref, actor, prepare))

    # ------------------------------------------------------------------ lock, policy, review

    def set_admin_lock(self, ref: PackageRef, actor: str, locked: bool, content_hash: str) -> AppendResult:
        """One ``lock``/``unlock`` entry (hashes only); its commit moves the head's lock state."""
        spec = EntrySpec("lock" if locked else "unlock", "package", content_hash, None)
        return self._result(*self._commit(ref, actor, lambda head: ([spec], lambda es: None), admin_op=True))

    def policy(self, ref: PackageRef) -> str | None:
        return self.rows.policy(ref)

    def set_policy(
        self, ref: PackageRef, actor: str, review: str, content_hash: str, agent: str | None = None
    ) -> AppendResult:
        """One ``policy`` entry, then the setting (a setting never changes without its entry)."""
        spec = EntrySpec("policy", "package", content_hash, None, extra=attribution(agent))

        def prepare(head: Head) -> tuple[list[EntrySpec], Land]:
            return [spec], lambda es: self.rows.put_policy(ref, review, es[0])

        return self._result(*self._commit(ref, actor, prepare))

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
        """The entries of :func:`acx.core.review.decision_specs` covering the candidate read at
        ``seen_seq`` (else ``Conflict``): an approval turns the row into a belief naming the reviewer,
        a rejection writes only the entry (the caller forgets the memory next), an edit supersedes
        the candidate (kept as an ended version) by the corrected version, a belief naming the
        reviewer, after the supersede's checks (slot pointers, tombstone guard)."""
        new = stored_body(edit.write) if edit is not None else None

        def prepare(head: Head) -> tuple[list[EntrySpec], Land]:
            row = self.rows.get(ref, record_id)
            if row is None or not row.active or row.seq != seen_seq or row.trust != "candidate":
                raise Conflict("the candidate changed since it was read")
            specs = decision_specs(row, decision, agent, edit.write if edit is not None else None)
            if edit is not None:
                if not self.rows.unchanged(ref, {}, edit.expected_slots):
                    raise Conflict("a slot changed since it was read")
                if edit.guard is not None and head.may_have_tombstones:
                    edit.guard()

            def land(entries: list[logcore.Entry]) -> None:
                if edit is not None and new is not None:
                    w = edit.write
                    self.rows.keep_version(ref, row, entries[0].seq)
                    self.rows.put_rows(ref, entries[:1], {row.key: (w, new[0])}, {})
                    if row.slot and row.slot != w.slot:
                        self.rows.delete_slot(ref, row.slot)
                    self.rows.approve(ref, w.id, entries[-1])
                elif decision == "approve":
                    self.rows.approve(ref, row.id, entries[0])

            return specs, land

        return self._result(*self._commit(ref, actor, prepare))
