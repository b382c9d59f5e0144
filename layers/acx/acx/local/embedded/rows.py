"""The rows of the embedded log: memories, ended versions, slot pointers, files, tombstones and the
review policy of each package, in the SQLite file (:mod:`acx.local.embedded.db`), as typed values.

The reads the log port forwards (:class:`acx.core.rows.RowReads`) and the writes a commit lands. The
layout mirrors the DynamoDB items (:mod:`acx.adapters.log_rows`): what a forget or an invalidate keeps
of a row, which slot pointers it removes, how much history a row carries; listings and lookups read
indexes (the active rows by id, the candidates by seq, knowledge keys, content hashes), never the whole
package, except where the DynamoDB log also reads it whole (a forget's knowledge search). Record bodies
are stored as their canonical JSON bytes, so a listing sends them without re-encoding.
"""

# ruff: noqa: S608 - the SQL text interpolates this module's own column lists; every value is a bound parameter

from __future__ import annotations

import base64
import zlib
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import orjson

from acx.core import canonical, erasure, forgetting
from acx.core import log as logcore
from acx.core.package import PackageRef
from acx.core.rows import (
    CorruptStore,
    FileRow,
    FileWrite,
    ListedRecord,
    LogRow,
    Lookup,
    RecordWrite,
    Tombstones,
    VersionRow,
)
from acx.local.embedded.db import Database

#: The largest stored record, as the DynamoDB row allows it (zlib body under 350,000 bytes): a bundle
#: one backend accepts, the other accepts too.
MAX_ROW_BYTES = 350_000
#: Past slots, absorbed ids and their knowledge keys kept per row (the most recent), as in DynamoDB.
MAX_HISTORY = 32
PAGE = 2000  # rows or entries read per statement while iterating (the connection is free in between)


def column_json(value: Any) -> str:
    """Compact JSON text of the store's own columns (entry payloads, lists, head state); records are
    stored as their canonical bytes instead."""
    return orjson.dumps(value).decode()


def _j(value: Any) -> str | None:
    """A list or dict column: compact JSON, None for an empty or absent value."""
    return column_json(value) if value else None


def _list(text: str | None) -> list[Any]:
    return list(orjson.loads(text)) if text else []


def _ids(values: Iterable[str]) -> str:
    """A set of keys as one JSON parameter (``IN (SELECT value FROM json_each(?))``): any count."""
    return column_json(list(dict.fromkeys(values)))


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
                (ref.pk, after, PAGE),
            )
            yield from map(_row, page)
            if len(page) < PAGE:
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

    def approve(self, ref: PackageRef, record_id: str, entry: logcore.Entry) -> None:
        """A row becomes a belief naming its reviewer, the actor of the approving ``entry`` (seq,
        hashes and body unchanged)."""
        self.db.cx.execute(
            "UPDATE rows SET trust = 'belief', reviewer = ? WHERE pk = ? AND id = ?",
            (entry.payload["actor"], ref.pk, record_id),
        )

    def put_policy(self, ref: PackageRef, review: str, entry: logcore.Entry) -> None:
        self.db.cx.execute(
            "INSERT OR REPLACE INTO policies (pk, review, seq, actor) VALUES (?, ?, ?, ?)",
            (ref.pk, review, entry.seq, entry.payload["actor"]),
        )


def stored_body(write: RecordWrite) -> tuple[bytes, str]:
    """A write's stored body (canonical JSON) and content hash, computed once; ``ValueError`` for a
    record over the DynamoDB row's limit (compressed only when the plain bytes exceed it)."""
    body = canonical.dumps_record(write.record)
    if len(body) > MAX_ROW_BYTES and len(zlib.compress(body, 9)) > MAX_ROW_BYTES:
        raise ValueError(f"record {write.id} is too large to store")
    return body, logcore.canonical_content_hash(body)
