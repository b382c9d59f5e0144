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

Row layout mirrors the DynamoDB items (:mod:`acx.adapters.log_rows`): what a forget or an invalidate
keeps of a row, which slot pointers it removes, how much history a row carries. Record bodies are
stored as their canonical JSON bytes, so a listing sends them without re-encoding.

What it does NOT stop: anyone who can write the file can rewrite rows and entries; the verifier (hashes,
signed checkpoints, the witness) finds that, as it does for the DynamoDB tables.
"""

# ruff: noqa: S608 - the SQL text interpolates this module's own column lists; every value is a bound parameter

from __future__ import annotations

import base64
import time
import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import orjson

from acx.core import canonical, erasure, forgetting, merkle
from acx.core import log as logcore
from acx.core.append import AppendPlan, EntrySpec, LogHead, plan_append
from acx.core.checkpoint import Checkpoint
from acx.core.faults import Locked
from acx.core.package import PackageRef
from acx.core.review import attribution
from acx.core.rows import (
    AppendResult,
    Conflict,
    CorruptStore,
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
from acx.local.embedded.db import Database

#: The largest stored record, as the DynamoDB row allows it (zlib body under 350,000 bytes): a bundle
#: one backend accepts, the other accepts too.
MAX_ROW_BYTES = 350_000
#: Past slots, absorbed ids and their knowledge keys kept per row (the most recent), as in DynamoDB.
MAX_HISTORY = 32
ENTRY_PAGE = 2000  # entries read per statement while iterating a log (the lock is free in between)

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


def _dumps(value: Any) -> str:
    """Compact JSON text of the store's own columns (entry payloads, lists, head state); records are
    stored as their canonical bytes instead."""
    return orjson.dumps(value).decode()


def _j(value: Any) -> str | None:
    """A list or dict column: compact JSON, None for an empty or absent value."""
    return _dumps(value) if value else None


def _list(text: str | None) -> list[Any]:
    return list(orjson.loads(text)) if text else []


def _ids(values: Iterable[str]) -> str:
    """A set of keys as one JSON parameter (``IN (SELECT value FROM json_each(?))``): any count."""
    return _dumps(list(dict.fromkeys(values)))


def _now_iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _checked(body: bytes, what: str) -> bytes:
    """A stored body's canonical bytes, checked to be one JSON object (never sent when mangled)."""
    try:
        ok = body[:1] == b"{" and isinstance(orjson.loads(body), dict)
    except orjson.JSONDecodeError as exc:
        raise CorruptStore(f"{what} does not decode: {exc}") from None
    if not ok:
        raise CorruptStore(f"{what} is not a JSON object")
    return bytes(body)


def _record(body: bytes, what: str) -> dict[str, Any]:
    try:
        value = canonical.loads(body)
    except canonical.CanonicalError as exc:
        raise CorruptStore(f"{what} does not decode: {exc}") from None
    if not isinstance(value, dict):
        raise CorruptStore(f"{what} is not a JSON object")
    return value


_ROW = (
    "id, seq, content_hash, entry_hash, state, body, slot, zone, cbf, tags, past_slots, past_ids, "
    "knowledge, past_keys, forgotten_seq, forget_op, trust, actor, agent, reviewer"
)


def _row(r: tuple) -> LogRow:
    (rid, seq, ch, eh, state, body, slot, zone, cbf, tags, pslots, pids, kk, pkeys, fseq, fop) = r[:16]
    trust, actor, agent, reviewer = r[16:]
    if state not in ("active", "ended", "tombstoned"):
        raise CorruptStore(f"row r#{rid} has unknown state")
    if state == "active" and body is None:
        raise CorruptStore(f"active row r#{rid} has no body")
    op = orjson.loads(fop) if fop else None
    return LogRow(
        id=rid, seq=seq, content_hash=ch, entry_hash=eh, state=state,
        record=_record(body, f"row r#{rid}") if state == "active" else None,
        slot=slot, zone=zone, cbf=cbf, tags=_list(tags), past_slots=_list(pslots), past_ids=_list(pids),
        knowledge=kk, past_keys=_list(pkeys), forgotten_seq=fseq,
        forget_op=(int(op[0]), int(op[1])) if op else None,
        holds_plaintext=body is not None or tags is not None,
        trust=trust or "belief", actor=actor, agent=agent, reviewer=reviewer,
    )  # fmt: skip


_FILE = "path, seq, content_hash, entry_hash, state, content, file_key, forgotten_seq"


def _file(r: tuple) -> FileRow:
    path, seq, ch, eh, state, content, fk, fseq = r
    if state == "active" and not isinstance(content, str):
        raise CorruptStore(f"file f#{path} has no content")
    return FileRow(path, seq, ch, eh, state, content if isinstance(content, str) else None, fk, fseq)


_VERSION = "id, seq, content_hash, entry_hash, body, end_seq, zone, knowledge"


def _version(r: tuple) -> VersionRow:
    rid, seq, ch, eh, body, end, zone, kk = r
    return VersionRow(rid, seq, ch, eh, _record(body, f"version v#{rid}#{seq}"), end, zone, kk)


def _cursor(key: str) -> str:
    return base64.urlsafe_b64encode(key.encode()).decode()


def _uncursor(cursor: str, prefix: str) -> str:
    """The key a cursor we issued names; ``ValueError`` for anything else."""
    try:
        key = base64.urlsafe_b64decode(cursor.encode()).decode()
    except (ValueError, UnicodeDecodeError):
        raise ValueError("invalid cursor") from None
    if not key.startswith(prefix):
        raise ValueError("invalid cursor")
    return key


class SqliteRows:
    """A package's rows, slot pointers, files, tombstones, ended versions and policy: the reads
    (``RowReads`` forwards the port's record reads here) and the writes the commit lands."""

    def __init__(self, db: Database) -> None:
        self.db = db

    # ------------------------------------------------------------------ reads

    def get(self, ref: PackageRef, record_id: str) -> LogRow | None:
        r = self.db.one(f"SELECT {_ROW} FROM rows WHERE pk = ? AND id = ?", (ref.pk, record_id))
        return _row(r) if r else None

    def _by_ids(self, ref: PackageRef, ids: Iterable[str], cols: str = _ROW) -> list[tuple]:
        return self.db.query(
            f"SELECT {cols} FROM rows WHERE pk = ? AND id IN (SELECT value FROM json_each(?)) ORDER BY id",
            (ref.pk, _ids(ids)),
        )

    def _slots(self, ref: PackageRef, slots: Iterable[str]) -> dict[str, str]:
        got = self.db.query(
            "SELECT slot, record_id FROM slots WHERE pk = ? AND slot IN (SELECT value FROM json_each(?))",
            (ref.pk, _ids(slots)),
        )
        return dict(got)

    def lookup(self, ref: PackageRef, ids: set[str], slots: set[str]) -> Lookup:
        """Rows (any state) by id, active rows by slot, and the slot pointers. Key reads only."""
        pointers_found = self._slots(ref, slots) if slots else {}
        wanted = set(ids) | set(pointers_found.values())
        by_id = {r.id: r for r in map(_row, self._by_ids(ref, wanted))} if wanted else {}
        by_slot: dict[str, LogRow] = {}
        for slot, rid in pointers_found.items():
            row = by_id.get(rid)
            if row is not None and row.active and row.slot == slot:
                by_slot[slot] = row
        pointers = {slot: pointers_found.get(slot) for slot in slots}
        return Lookup({i: r for i, r in by_id.items() if i in ids}, by_slot, pointers)

    def unchanged(self, ref: PackageRef, seqs: dict[str, int | None], slots: dict[str, str | None]) -> bool:
        """Do the rows and slot pointers still read as the writer saw them (inside its transaction)?"""
        if seqs:
            got = {
                rid: (seq if state == "active" else None)
                for rid, seq, state in self._by_ids(ref, seqs, "id, seq, state")
            }
            if any(got.get(rid) != seq for rid, seq in seqs.items()):
                return False
        if slots:
            found = self._slots(ref, slots)
            if any(found.get(slot) != rid for slot, rid in slots.items()):
                return False
        return True

    def active_records(self, ref: PackageRef, ids: Iterable[str]) -> dict[str, dict[str, Any]]:
        return {
            rid: _record(body, f"row r#{rid}")
            for rid, state, body in self._by_ids(ref, ids, "id, state, body")
            if state == "active" and body is not None
        }

    def active_listed(self, ref: PackageRef, ids: Iterable[str]) -> dict[str, ListedRecord]:
        return {
            rid: ListedRecord(rid, _checked(body, f"row r#{rid}"), trust or "belief", actor, agent)
            for rid, state, body, trust, actor, agent in self._by_ids(
                ref, ids, "id, state, body, trust, actor, agent"
            )
            if state == "active" and body is not None
        }

    def active_ids(self, ref: PackageRef, ids: Iterable[str]) -> set[str]:
        return {rid for rid, state in self._by_ids(ref, ids, "id, state") if state == "active"}

    def rows(self, ref: PackageRef) -> Iterator[LogRow]:
        """Every memory row, any state, in id order (read in pages: the lock is free in between)."""
        after = ""
        while True:
            page = self.db.query(
                f"SELECT {_ROW} FROM rows WHERE pk = ? AND id > ? ORDER BY id LIMIT ?",
                (ref.pk, after, ENTRY_PAGE),
            )
            yield from map(_row, page)
            if len(page) < ENTRY_PAGE:
                return
            after = page[-1][0]

    def iter_active(self, ref: PackageRef) -> Iterator[LogRow]:
        return (r for r in self.rows(ref) if r.active)

    def get_file(self, ref: PackageRef, path: str) -> FileRow | None:
        r = self.db.one(f"SELECT {_FILE} FROM files WHERE pk = ? AND path = ?", (ref.pk, path))
        return _file(r) if r else None

    def files(self, ref: PackageRef) -> Iterator[FileRow]:
        return iter(
            [
                _file(r)
                for r in self.db.query(f"SELECT {_FILE} FROM files WHERE pk = ? ORDER BY path", (ref.pk,))
            ]
        )

    def read_files(self, ref: PackageRef) -> list[tuple[str, str]]:
        return [(f.path, f.content) for f in self.files(ref) if f.active and f.content is not None]

    def by_keys(self, ref: PackageRef, keys: Sequence[str]) -> list[LogRow | FileRow]:
        ids = [k[2:] for k in keys if k.startswith("r#")]
        paths = [k[2:] for k in keys if k.startswith("f#")]
        out: list[LogRow | FileRow] = [*map(_row, self._by_ids(ref, ids))] if ids else []
        if paths:
            got = self.db.query(
                f"SELECT {_FILE} FROM files WHERE pk = ? AND path IN (SELECT value FROM json_each(?))",
                (ref.pk, _ids(paths)),
            )
            out += map(_file, got)
        return sorted(out, key=lambda r: r.key)

    def with_knowledge(self, ref: PackageRef, knowledge: str) -> list[LogRow]:
        """Rows not forgotten whose text, or an older version folded into them, has this knowledge key:
        the key's index, plus the rows that carry older keys at all (forget only)."""
        got = self.db.query(
            f"SELECT {_ROW} FROM rows WHERE pk = ? AND knowledge = ? AND state IN ('active', 'ended') "
            f"UNION SELECT {_ROW} FROM rows WHERE pk = ? AND past_keys IS NOT NULL "
            "AND state IN ('active', 'ended') AND EXISTS (SELECT 1 FROM json_each(rows.past_keys) "
            "WHERE value = ?) ORDER BY id",
            (ref.pk, knowledge, ref.pk, knowledge),
        )
        return [r for r in map(_row, got) if erasure.holds_knowledge(r, knowledge)]

    def with_version_knowledge(self, ref: PackageRef, knowledge: str) -> list[LogRow]:
        """Rows not forgotten whose ended versions have this knowledge key."""
        ids = [r[0] for r in self.db.query(
            "SELECT DISTINCT id FROM versions WHERE pk = ? AND knowledge = ?", (ref.pk, knowledge)
        )]  # fmt: skip
        return [r for r in map(_row, self._by_ids(ref, ids)) if not r.forgotten] if ids else []

    def by_content_hash(self, ref: PackageRef, content_hash: str) -> list[LogRow]:
        got = self.db.query(
            f"SELECT {_ROW} FROM rows WHERE pk = ? AND content_hash = ? ORDER BY id", (ref.pk, content_hash)
        )
        return list(map(_row, got))

    def versions(self, ref: PackageRef, record_id: str) -> list[VersionRow]:
        got = self.db.query(
            f"SELECT {_VERSION} FROM versions WHERE pk = ? AND id = ? ORDER BY seq", (ref.pk, record_id)
        )
        return list(map(_version, got))

    def all_versions(self, ref: PackageRef) -> Iterator[VersionRow]:
        got = self.db.query(f"SELECT {_VERSION} FROM versions WHERE pk = ? ORDER BY id, seq", (ref.pk,))
        return iter(list(map(_version, got)))

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
        """A page of active records in id order from the active rows' index, and the cursor after it
        (base64 of the last row key, as the DynamoDB log issues it)."""
        if limit < 1:
            raise ValueError("limit must be >= 1")
        after = _uncursor(cursor, "r#")[2:] if cursor else ""
        sql = "SELECT id, body, trust, actor, agent FROM rows WHERE pk = ? AND state = 'active' AND id > ?"
        params: list[object] = [ref.pk, after]
        if zone is not None:
            sql += " AND zone = ?"
            params.append(zone)
        if tag is not None:
            sql += " AND EXISTS (SELECT 1 FROM json_each(rows.tags) WHERE value = ?)"
            params.append(tag)
        if trust is not None:
            sql += " AND trust = ?"
            params.append(trust)
        if agent is not None:
            sql += " AND agent = ?"
            params.append(agent)
        got = self.db.query(sql + " ORDER BY id LIMIT ?", (*params, limit + 1))
        out = [
            ListedRecord(rid, _checked(body, f"row r#{rid}"), t or "belief", actor, ag)
            for rid, body, t, actor, ag in got[:limit]
        ]
        return out, (_cursor(f"r#{out[-1].id}") if len(got) > limit else None)

    @staticmethod
    def cursor_after(row: LogRow | ListedRecord) -> str:
        return _cursor(row.key)

    def review_queue(
        self, ref: PackageRef, limit: int, cursor: str | None = None
    ) -> tuple[list[LogRow], str | None]:
        """Candidate rows oldest (lowest seq) first, from the candidates' index; the cursor is
        ``q#<seq>`` of the last one (the DynamoDB queue item's key)."""
        if cursor is not None and not (cursor.startswith("q#") and cursor[2:].isdigit()):
            raise ValueError("invalid cursor")
        after = int(cursor[2:]) if cursor else -1
        got = self.db.query(
            f"SELECT {_ROW} FROM rows WHERE pk = ? AND state = 'active' AND trust = 'candidate' "
            "AND seq > ? ORDER BY seq LIMIT ?",
            (ref.pk, after, limit + 1),
        )
        out = list(map(_row, got[:limit]))
        return out, (f"q#{out[-1].seq:012d}" if len(got) > limit and out else None)

    def policy(self, ref: PackageRef) -> str | None:
        r = self.db.one("SELECT review FROM policies WHERE pk = ?", (ref.pk,))
        return str(r[0]) if r else None

    def tombstone_hits(
        self, ref: PackageRef, probes: Sequence[forgetting.Probe], near: forgetting.NearPolicy
    ) -> list[forgetting.Hit]:
        """The probes a tombstone refuses (:func:`acx.core.erasure.blocked`), by key reads of the keys
        :func:`acx.core.erasure.tombstone_keys` names."""
        if not probes:
            return []
        keys = erasure.tombstone_keys(probes, near)
        plain = [k for k in keys if not k.startswith("n#")]
        found = dict(self.db.query(
            "SELECT key, seq FROM tombstones WHERE pk = ? AND key IN (SELECT value FROM json_each(?))",
            (ref.pk, _ids(plain)),
        ))  # fmt: skip
        bands: dict[str, dict[str, tuple[tuple[int, ...], int]]] = {}
        names = [k[2:] for k in keys if k.startswith("n#")]
        if names:
            for band, member, sketch, seq in self.db.query(
                "SELECT band, member, sketch, seq FROM bands WHERE pk = ? "
                "AND band IN (SELECT value FROM json_each(?))",
                (ref.pk, _ids(names)),
            ):
                try:
                    bands.setdefault(band, {})[member] = (forgetting.unpack(bytes(sketch)), int(seq))
                except ValueError as exc:
                    raise CorruptStore(f"tombstone band {band} does not decode: {exc}") from None
        return erasure.blocked(probes, found, bands, near)

    def file_forgotten(self, ref: PackageRef, file_keys: Iterable[str]) -> dict[str, int]:
        got = self.db.query(
            "SELECT key, seq FROM tombstones WHERE pk = ? AND key IN (SELECT value FROM json_each(?))",
            (ref.pk, _ids(f"f#{k}" for k in file_keys)),
        )
        return {k[2:]: int(seq) for k, seq in got}

    # ------------------------------------------------------------------ writes (inside a commit)

    def put_rows(
        self,
        ref: PackageRef,
        entries: Sequence[logcore.Entry],
        rows: dict[str, tuple[RecordWrite, bytes]],
        files: dict[str, FileWrite],
    ) -> None:
        """The rows and slot pointers of one operation's entries (each row written whole, as a put)."""
        cx = self.db.cx
        row_values, slot_values, file_values = [], [], []
        for e in entries:
            assert e.key is not None
            if e.key.startswith("f#"):
                f = files[e.key]
                file_values.append(
                    (ref.pk, f.path, e.seq, e.content_hash, e.hash, "active", f.content, f.file_key)
                )
                continue
            w, body = rows[e.key]
            tags = [t for t in w.record.get("tags") or [] if isinstance(t, str)]
            row_values.append((
                ref.pk, w.id, e.seq, e.content_hash, e.hash, "active", body, w.slot, w.zone,
                w.record.get("codebaseFingerprint"), _j(tags),
                _j([x for x in w.past_slots if x != w.slot][-MAX_HISTORY:]),
                _j([x for x in w.past_ids if x != w.id][-MAX_HISTORY:]), w.knowledge,
                _j([x for x in w.past_keys if x != w.knowledge][-MAX_HISTORY:]),
                e.payload.get("trust") or "belief", e.payload.get("actor"), e.payload.get("agent"),
            ))  # fmt: skip
            slot_values.append((ref.pk, w.slot, w.id))
        cx.executemany(
            "INSERT OR REPLACE INTO rows (pk, id, seq, content_hash, entry_hash, state, body, slot, zone, "
            "cbf, tags, past_slots, past_ids, knowledge, past_keys, trust, actor, agent) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            row_values,
        )
        cx.executemany("INSERT OR REPLACE INTO slots (pk, slot, record_id) VALUES (?, ?, ?)", slot_values)
        cx.executemany(
            "INSERT OR REPLACE INTO files (pk, path, seq, content_hash, entry_hash, state, content, "
            "file_key) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            file_values,
        )

    def retire(self, ref: PackageRef, retired: Sequence[str]) -> None:
        """Remove rows a survivor absorbed (their slot pointer is the survivor's now)."""
        self.db.cx.executemany("DELETE FROM rows WHERE pk = ? AND id = ?", [(ref.pk, r) for r in retired])

    def put_tombstones(self, ref: PackageRef, stones: Tombstones, seq: int) -> None:
        """File one forget's tombstones; near-copy members join what their bands already hold."""
        cx = self.db.cx
        plain = [f"k#{k}" for k in stones.knowledge] + [f"i#{k}" for k in stones.ids]
        plain += [f"f#{k}" for k in stones.files]
        cx.executemany(
            "INSERT OR REPLACE INTO tombstones (pk, key, seq) VALUES (?, ?, ?)",
            [(ref.pk, k, seq) for k in dict.fromkeys(plain)],
        )
        cx.executemany(
            "INSERT OR REPLACE INTO bands (pk, band, member, sketch, seq) VALUES (?, ?, ?, ?, ?)",
            [
                (ref.pk, bk, kk[:16], forgetting.pack(sk), seq)
                for kk, sk in stones.sketches
                for bk in forgetting.band_keys(sk)
            ],
        )

    def erase(self, ref: PackageRef, row: LogRow, entry: logcore.Entry, op: tuple[int, int]) -> None:
        """Forget one memory row: plaintext, tags and history gone, hashes kept; its slot pointers
        removed (what the DynamoDB erase keeps, column for column)."""
        cx = self.db.cx
        cx.execute(
            "INSERT OR REPLACE INTO rows (pk, id, seq, content_hash, entry_hash, state, slot, zone, cbf, "
            "knowledge, forgotten_seq, forget_op) VALUES (?, ?, ?, ?, ?, 'tombstoned', ?, ?, ?, ?, ?, ?)",
            (ref.pk, row.id, entry.seq, entry.content_hash, entry.hash, row.slot, row.zone, row.cbf,
             row.knowledge, row.seq, _j(list(op))),
        )  # fmt: skip
        slots = dict.fromkeys([*([row.slot] if row.slot else []), *row.past_slots])
        cx.executemany("DELETE FROM slots WHERE pk = ? AND slot = ?", [(ref.pk, s) for s in slots])

    def delete_versions(self, ref: PackageRef, versions: Sequence[VersionRow]) -> None:
        self.db.cx.executemany(
            "DELETE FROM versions WHERE pk = ? AND id = ? AND seq = ?",
            [(ref.pk, v.id, v.seq) for v in versions],
        )

    def erase_file(self, ref: PackageRef, f: FileRow, entry: logcore.Entry) -> None:
        self.db.cx.execute(
            "INSERT OR REPLACE INTO files (pk, path, seq, content_hash, entry_hash, state, file_key, "
            "forgotten_seq) VALUES (?, ?, ?, ?, ?, 'tombstoned', ?, ?)",
            (ref.pk, f.path, entry.seq, entry.content_hash, entry.hash, f.file_key, f.seq),
        )

    def keep_version(self, ref: PackageRef, row: LogRow, end_seq: int) -> None:
        """Keep ``row``'s current version as an ended version (before the row is rewritten)."""
        assert row.record is not None
        self.db.cx.execute(
            "INSERT OR REPLACE INTO versions (pk, id, seq, content_hash, entry_hash, body, end_seq, zone, "
            "knowledge) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (ref.pk, row.id, row.seq, row.content_hash, row.entry_hash, canonical.dumps_record(row.record),
             end_seq, row.zone, row.knowledge),
        )  # fmt: skip

    def end(self, ref: PackageRef, row: LogRow, entry: logcore.Entry) -> None:
        """The row of a memory whose validity ended with no successor: the ending entry's hashes, no
        body; its slot pointer removed (the content slot is free for a new memory)."""
        cx = self.db.cx
        cx.execute(
            "INSERT OR REPLACE INTO rows (pk, id, seq, content_hash, entry_hash, state, zone, cbf, "
            "knowledge, past_slots, past_ids, past_keys) VALUES (?, ?, ?, ?, ?, 'ended', ?, ?, ?, ?, ?, ?)",
            (ref.pk, row.id, entry.seq, entry.content_hash, entry.hash, row.zone, row.cbf, row.knowledge,
             _j([*row.past_slots, *([row.slot] if row.slot else [])][-MAX_HISTORY:]),
             _j(row.past_ids[-MAX_HISTORY:]), _j(row.past_keys[-MAX_HISTORY:])),
        )  # fmt: skip
        if row.slot:
            cx.execute("DELETE FROM slots WHERE pk = ? AND slot = ?", (ref.pk, row.slot))

    def delete_slot(self, ref: PackageRef, slot: str) -> None:
        self.db.cx.execute("DELETE FROM slots WHERE pk = ? AND slot = ?", (ref.pk, slot))

    def approve(self, ref: PackageRef, row: LogRow, entry: logcore.Entry) -> None:
        """A candidate becomes a belief naming its reviewer (seq, hashes and body unchanged)."""
        self.db.cx.execute(
            "UPDATE rows SET trust = 'belief', reviewer = ? WHERE pk = ? AND id = ?",
            (entry.payload["actor"], ref.pk, row.id),
        )

    def put_policy(self, ref: PackageRef, review: str, entry: logcore.Entry) -> None:
        self.db.cx.execute(
            "INSERT OR REPLACE INTO policies (pk, review, seq, actor) VALUES (?, ?, ?, ?)",
            (ref.pk, review, entry.seq, entry.payload["actor"]),
        )


def _body(write: RecordWrite) -> tuple[bytes, str]:
    """A write's stored body (canonical JSON) and content hash, computed once; ``ValueError`` for a
    record over the DynamoDB row's limit (compressed only when the plain bytes exceed it)."""
    body = canonical.dumps_record(write.record)
    if len(body) > MAX_ROW_BYTES and len(zlib.compress(body, 9)) > MAX_ROW_BYTES:
        raise ValueError(f"record {write.id} is too large to store")
    return body, logcore.canonical_content_hash(body)


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
                (ref.pk, seq, stop, ENTRY_PAGE),
            )
            for s, h, prev, payload, key in page:
                try:
                    yield logcore.Entry(s, h, prev, orjson.loads(payload), key)
                except ValueError as exc:
                    raise CorruptStore(f"entry {s} of {ref.chain_key} does not decode: {exc}") from None
            if len(page) < ENTRY_PAGE:
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
                (ref.pk, size, _dumps(state)),
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
                lock = _j({"locked": specs[0].operation == "lock", "seq": head.size,
                           "contentHash": specs[0].content_hash})  # fmt: skip
            forgotten = head.forgotten or any(e.operation == "forget" for e in plan.entries)
            cx.execute(
                "INSERT INTO heads (pk, tenant, package, size, chain_head, range, forgotten, admin_lock) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (pk) DO UPDATE SET size = excluded.size, "
                "chain_head = excluded.chain_head, range = excluded.range, forgotten = excluded.forgotten, "
                "admin_lock = COALESCE(excluded.admin_lock, heads.admin_lock)",
                (ref.pk, ref.tenant, ref.package, plan.size, plan.head.chain_head,
                 _dumps(plan.head.range.to_hex()), int(forgotten), lock),
            )  # fmt: skip
            cx.executemany(
                "INSERT INTO entries (pk, seq, hash, prev, payload, key) VALUES (?, ?, ?, ?, ?, ?)",
                [(ref.pk, e.seq, e.hash, e.prev_hash, _dumps(e.payload), e.key) for e in plan.entries],
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
        rows = {f"r#{w.id}": (w, *_body(w)) for w in writes}
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
            if guard is not None and head.may_have_tombstones:
                guard()

            def land(entries: list[logcore.Entry]) -> None:
                self.rows.put_rows(ref, entries, bodies, by_file)
                self.rows.retire(ref, retired)

            return specs, land

        return self._result(*self._commit(ref, actor, prepare))

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
        body, ch = _body(write)

        def prepare(head: Head) -> tuple[list[EntrySpec], Land]:
            old = self._current(ref, write.id, expected)
            if not self.rows.unchanged(ref, {}, expected_slots or {}):
                raise Conflict("a slot changed since it was read")
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
    ) -> AppendResult:
        """One ``review`` entry covering the candidate read at ``seen_seq`` (else ``Conflict``); an
        approval turns the row into a belief naming the reviewer, a rejection writes only the entry
        (the caller forgets the memory next)."""

        def prepare(head: Head) -> tuple[list[EntrySpec], Land]:
            row = self.rows.get(ref, record_id)
            if row is None or not row.active or row.seq != seen_seq or row.trust != "candidate":
                raise Conflict("the candidate changed since it was read")
            extra = (("decision", decision), *attribution(agent))
            cover = logcore.Covers(row.seq, row.entry_hash)
            spec = EntrySpec("review", row.zone or "save", row.content_hash, None, cover, extra)

            def land(entries: list[logcore.Entry]) -> None:
                if decision == "approve":
                    self.rows.approve(ref, row, entries[0])

            return [spec], land

        return self._result(*self._commit(ref, actor, prepare))
