"""The embedded backend's one SQLite file: what DynamoDB holds in the cloud deployment.

Opened in WAL mode with ``synchronous=FULL``: a commit returns once its WAL frames are fsynced, so an
acknowledged write survives a kill -9 or a power cut. Every write is one ``BEGIN IMMEDIATE``
transaction (:meth:`Database.transaction`): SQLite's write lock serializes the writers of this and of
any other process on the same file, which is what the DynamoDB log builds with a lease.

Connections: one writer connection behind a lock (the writers serialize on the file's write lock
anyway), and a small pool of read-only connections for reads outside a transaction. In WAL mode a
reader sees the last committed state and never waits for a writer, so a request listing one package
does not stall behind another package's large commit, as it would on a shared connection; a read made
inside a transaction, on the thread that holds it, goes to the writer connection and sees that
transaction's own writes (the checks a commit runs before it writes).

At open, a file that is not ours is refused with :class:`DatabaseDamaged`, never repaired, truncated
or replaced: not a SQLite file, a header whose page size or page count does not match the file's
length (a file cut short), a WAL whose damaged frame has committed transactions after it (SQLite
itself would read up to the damage and silently drop the rest: :func:`wal_damage`), a failing
``PRAGMA quick_check`` (damaged b-tree pages), or a schema that is not this backend's (no ``meta``
table naming our format and version). A missing file is created whole (built under a temporary
name, then linked into place), so a crash during creation never leaves a half-made file that a later
open would read as an empty store.

What the checks do NOT catch: damage inside the WAL's last transaction (it reads as that transaction
torn by a crash, and is dropped as SQLite drops a torn one); a flipped byte inside a stored value (a
record's text, an entry's payload), which leaves the b-tree well formed, so ``quick_check`` passes:
the log's own hashes catch it (the verifier recomputes every entry hash and every row's content
hash), and a value that no longer decodes is reported as corrupt at read. Nor do they stop anyone
who can write the file: they detect accidents, not an attacker, whom the signed checkpoints and the
witness catch.
"""

from __future__ import annotations

import contextlib
import os
import pathlib
import sqlite3
import struct
import threading
from collections.abc import Iterator

FORMAT = "acx-embedded"
VERSION = 1
MAGIC = b"SQLite format 3\x00"
BUSY_TIMEOUT_MS = 30_000  # another process holding the write lock: wait this long, then fail
IDLE_READERS = 8  # read connections kept open between reads (more are opened under a burst, then closed)

SCHEMA = """
CREATE TABLE meta (name TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;

-- the log (receipts, heads, checkpoints, witness): one head row per package
CREATE TABLE heads (
    pk TEXT PRIMARY KEY, tenant TEXT NOT NULL, package TEXT NOT NULL,
    size INTEGER NOT NULL, chain_head TEXT NOT NULL, range TEXT NOT NULL,
    forgotten INTEGER NOT NULL DEFAULT 0, admin_lock TEXT
);
CREATE UNIQUE INDEX heads_by_tenant ON heads (tenant, package);
CREATE TABLE entries (
    pk TEXT NOT NULL, seq INTEGER NOT NULL, hash TEXT NOT NULL, prev TEXT NOT NULL,
    payload TEXT NOT NULL, key TEXT,
    PRIMARY KEY (pk, seq)
) WITHOUT ROWID;
CREATE TABLE checkpoints (
    pk TEXT NOT NULL, size INTEGER NOT NULL, text TEXT NOT NULL, PRIMARY KEY (pk, size)
) WITHOUT ROWID;
CREATE TABLE witness (pk TEXT PRIMARY KEY, size INTEGER NOT NULL, state TEXT NOT NULL);

-- rows: the current version of each memory, ended versions, slots, files, tombstones, policy
CREATE TABLE rows (
    pk TEXT NOT NULL, id TEXT NOT NULL, seq INTEGER NOT NULL,
    content_hash TEXT NOT NULL, entry_hash TEXT NOT NULL, state TEXT NOT NULL,
    body BLOB, slot TEXT, zone TEXT, cbf TEXT, tags TEXT,
    past_slots TEXT, past_ids TEXT, knowledge TEXT, past_keys TEXT,
    forgotten_seq INTEGER, forget_op TEXT,
    trust TEXT NOT NULL DEFAULT 'belief', actor TEXT, agent TEXT, reviewer TEXT,
    PRIMARY KEY (pk, id)
);
CREATE INDEX rows_active ON rows (pk, id) WHERE state = 'active';
CREATE INDEX rows_candidates ON rows (pk, seq) WHERE state = 'active' AND trust = 'candidate';
CREATE INDEX rows_by_knowledge ON rows (pk, knowledge) WHERE knowledge IS NOT NULL;
CREATE INDEX rows_with_past_keys ON rows (pk, id) WHERE past_keys IS NOT NULL;
CREATE INDEX rows_by_content ON rows (pk, content_hash);
CREATE TABLE versions (
    pk TEXT NOT NULL, id TEXT NOT NULL, seq INTEGER NOT NULL,
    content_hash TEXT NOT NULL, entry_hash TEXT NOT NULL, body BLOB NOT NULL,
    end_seq INTEGER NOT NULL, zone TEXT, knowledge TEXT,
    PRIMARY KEY (pk, id, seq)
);
CREATE INDEX versions_by_knowledge ON versions (pk, knowledge) WHERE knowledge IS NOT NULL;
CREATE TABLE slots (
    pk TEXT NOT NULL, slot TEXT NOT NULL, record_id TEXT NOT NULL, PRIMARY KEY (pk, slot)
) WITHOUT ROWID;
CREATE TABLE files (
    pk TEXT NOT NULL, path TEXT NOT NULL, seq INTEGER NOT NULL,
    content_hash TEXT NOT NULL, entry_hash TEXT NOT NULL, state TEXT NOT NULL,
    content TEXT, file_key TEXT, forgotten_seq INTEGER,
    PRIMARY KEY (pk, path)
);
CREATE TABLE tombstones (
    pk TEXT NOT NULL, key TEXT NOT NULL, seq INTEGER NOT NULL, PRIMARY KEY (pk, key)
) WITHOUT ROWID;
CREATE TABLE bands (
    pk TEXT NOT NULL, band TEXT NOT NULL, member TEXT NOT NULL, sketch BLOB NOT NULL,
    seq INTEGER NOT NULL, PRIMARY KEY (pk, band, member)
) WITHOUT ROWID;
CREATE TABLE policies (
    pk TEXT PRIMARY KEY, review TEXT NOT NULL, seq INTEGER NOT NULL, actor TEXT NOT NULL
);

-- jobs and idempotency records
CREATE TABLE jobs (
    pk TEXT NOT NULL, kind TEXT NOT NULL, job_id TEXT NOT NULL, status TEXT NOT NULL,
    created_at INTEGER NOT NULL, data TEXT NOT NULL,
    PRIMARY KEY (pk, kind, job_id)
) WITHOUT ROWID;
CREATE TABLE idempotency (
    key TEXT PRIMARY KEY, status TEXT NOT NULL, payload_hash TEXT NOT NULL, response TEXT,
    expires REAL NOT NULL, in_progress_until REAL
) WITHOUT ROWID;
"""
TABLES = frozenset(
    {
        "meta", "heads", "entries", "checkpoints", "witness", "rows", "versions", "slots", "files",
        "tombstones", "bands", "policies", "jobs", "idempotency",
    }
)  # fmt: skip


class DatabaseDamaged(RuntimeError):
    """The file at the path is not a sound database of this backend: refused, left as it is."""


class Database:
    """One SQLite file of the embedded backend (see the module docstring).

    ``transaction()`` is the one way to write; reads call :meth:`query` / :meth:`one`. The object is
    shared freely between threads.
    """

    def __init__(self, path: pathlib.Path) -> None:
        self.path = pathlib.Path(path)
        if not self.path.exists():
            _create(self.path)
        check(self.path)
        self._lock = threading.RLock()
        self._depth = 0
        self._owner: int | None = None  # the thread inside a transaction
        self._pool_lock = threading.Lock()
        self._idle: list[sqlite3.Connection] = []
        self._cx: sqlite3.Connection | None = self._connect()
        self._cx.execute("PRAGMA journal_mode=WAL")
        self._cx.execute("PRAGMA synchronous=FULL")
        self._cx.execute("PRAGMA foreign_keys=ON")

    def _connect(self) -> sqlite3.Connection:
        cx = sqlite3.connect(
            self.path, isolation_level=None, check_same_thread=False, timeout=BUSY_TIMEOUT_MS / 1000
        )
        cx.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        return cx

    @property
    def cx(self) -> sqlite3.Connection:
        """The writer connection (use it inside :meth:`transaction` only)."""
        if self._cx is None:
            raise RuntimeError("the database is closed")
        return self._cx

    @contextlib.contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """``BEGIN IMMEDIATE`` (the file's write lock, taken before any read, so what the body reads
        is what it commits over) ... ``COMMIT``; ``ROLLBACK`` on any exception. A transaction opened
        inside another on the same thread joins it (commits or rolls back with it)."""
        with self._lock:
            cx = self.cx
            if self._depth:
                self._depth += 1
                try:
                    yield cx
                finally:
                    self._depth -= 1
                return
            cx.execute("BEGIN IMMEDIATE")
            self._depth, self._owner = 1, threading.get_ident()
            try:
                yield cx
            except BaseException:
                self._depth, self._owner = 0, None
                cx.execute("ROLLBACK")
                raise
            self._depth, self._owner = 0, None
            cx.execute("COMMIT")

    @contextlib.contextmanager
    def _reading(self) -> Iterator[sqlite3.Connection]:
        """The connection a read uses: the writer's inside this thread's transaction, else a pooled
        read-only one (the last committed state, without waiting for a writer)."""
        if self._owner == threading.get_ident():
            with self._lock:
                yield self.cx
            return
        with self._pool_lock:
            if self._cx is None:
                raise RuntimeError("the database is closed")
            cx = self._idle.pop() if self._idle else None
        if cx is None:
            cx = self._connect()
            cx.execute("PRAGMA query_only=ON")
        try:
            yield cx
        finally:
            with self._pool_lock:
                keep = self._cx is not None and len(self._idle) < IDLE_READERS
                if keep:
                    self._idle.append(cx)
            if not keep:
                cx.close()

    def query(self, sql: str, params: tuple[object, ...] | list[object] = ()) -> list[tuple]:
        """Every row of one read statement."""
        with self._reading() as cx:
            return cx.execute(sql, params).fetchall()

    def one(self, sql: str, params: tuple[object, ...] | list[object] = ()) -> tuple | None:
        with self._reading() as cx:
            return cx.execute(sql, params).fetchone()

    def close(self) -> None:
        """Close every connection (the last close checkpoints the WAL into the file)."""
        with self._lock, self._pool_lock:
            for cx in self._idle:
                cx.close()
            self._idle.clear()
            if self._cx is not None:
                self._cx.close()
                self._cx = None


def _create(path: pathlib.Path) -> None:
    """Build the schema in a temporary file beside ``path``, then link it into place: ``path`` either
    does not exist or is whole. A WAL left beside a missing file is refused (it belongs to a file that
    is gone; starting over beside it would hide that)."""
    for suffix in ("-wal", "-journal"):
        if pathlib.Path(f"{path}{suffix}").exists():
            raise DatabaseDamaged(
                f"{path} is missing but its {suffix[1:]} file is there: refusing to start over"
            )
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.creating")
    try:
        cx = sqlite3.connect(tmp, isolation_level=None)
        try:
            cx.executescript(f"BEGIN IMMEDIATE;{SCHEMA}")
            cx.executemany(
                "INSERT INTO meta (name, value) VALUES (?, ?)",
                [("format", FORMAT), ("version", str(VERSION))],
            )
            cx.execute("COMMIT")
            cx.execute("PRAGMA journal_mode=WAL")  # persistent: recorded in the header
        finally:
            cx.close()
        with open(tmp, "rb") as f:
            os.fsync(f.fileno())
        try:
            os.link(tmp, path)  # fails if another process created it meanwhile: theirs stands
        except FileExistsError:
            pass
        dir_fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
    finally:
        tmp.unlink(missing_ok=True)


def check(path: pathlib.Path) -> None:
    """Raise :class:`DatabaseDamaged` unless ``path`` is a sound database of this backend. Reads only:
    the header bytes, then a read-only connection (which never checkpoints a WAL into the file)."""
    size = path.stat().st_size
    with open(path, "rb") as f:
        header = f.read(100)
    if len(header) < 100 or header[:16] != MAGIC:
        raise DatabaseDamaged(f"{path} is not a SQLite database ({size} bytes)")
    page = int.from_bytes(header[16:18], "big")
    page = 65536 if page == 1 else page
    if page < 512 or page & (page - 1):
        raise DatabaseDamaged(f"{path} has a damaged header (page size {page})")
    if size % page:
        raise DatabaseDamaged(f"{path} is cut short: {size} bytes is not a whole number of {page}-byte pages")
    pages = int.from_bytes(header[28:32], "big")
    valid = header[24:28] == header[92:96] and pages > 0
    if valid and not pathlib.Path(f"{path}-wal").exists() and pages * page != size:
        raise DatabaseDamaged(f"{path} holds {size // page} pages, its header says {pages}: cut or damaged")
    wal = pathlib.Path(f"{path}-wal")
    if wal.exists():
        # A writer in another process may append while this reads: damage is what two reads agree on.
        if wal_damage(wal.read_bytes(), page) and (found := wal_damage(wal.read_bytes(), page)):
            raise DatabaseDamaged(f"{wal} is damaged: {found}")
    try:
        cx = sqlite3.connect(f"file:{path}?mode=ro", uri=True, isolation_level=None)
    except sqlite3.Error as exc:
        raise DatabaseDamaged(f"{path} does not open: {exc}") from None
    try:
        result = [r[0] for r in cx.execute("PRAGMA quick_check").fetchall()]
        if result != ["ok"]:
            raise DatabaseDamaged(f"{path} fails quick_check: {'; '.join(map(str, result[:5]))}")
        tables = {r[0] for r in cx.execute("SELECT name FROM sqlite_schema WHERE type = 'table'")}
        if "meta" not in tables:
            raise DatabaseDamaged(f"{path} is a SQLite database, but not one of this backend (no meta table)")
        meta = dict(cx.execute("SELECT name, value FROM meta").fetchall())
        if meta.get("format") != FORMAT:
            raise DatabaseDamaged(f"{path} holds format {meta.get('format')!r}, not {FORMAT!r}")
        if meta.get("version") != str(VERSION):
            raise DatabaseDamaged(
                f"{path} holds format version {meta.get('version')}, this code reads {VERSION}"
            )
        missing = TABLES - tables
        if missing:
            raise DatabaseDamaged(f"{path} lacks tables {sorted(missing)}")
    except sqlite3.DatabaseError as exc:
        raise DatabaseDamaged(f"{path} does not read as a database: {exc}") from None
    finally:
        cx.close()


WAL_MAGIC = (0x377F0682, 0x377F0683)  # checksum words little-endian, big-endian
WAL_HEADER = 32
FRAME_HEADER = 24


def _wal_sum(data: bytes, big: bool, s0: int, s1: int) -> tuple[int, int]:
    """SQLite's WAL checksum: over pairs of 32-bit words, continued from ``(s0, s1)``."""
    words = struct.unpack(f"{'>' if big else '<'}{len(data) // 4}I", data)
    for i in range(0, len(words), 2):
        s0 = (s0 + words[i] + s1) & 0xFFFFFFFF
        s1 = (s1 + words[i + 1] + s0) & 0xFFFFFFFF
    return s0, s1


def wal_damage(data: bytes, page: int) -> str | None:
    """What is wrong with a WAL file, None when SQLite will read every transaction acknowledged in it.

    SQLite reads a WAL up to its first frame that fails the checksum chain or carries another
    cycle's salts, and silently drops everything after it: right for a torn tail (the last
    transaction, never acknowledged: each commit fsyncs the WAL), wrong for a damaged frame with
    committed transactions after it, which would then read as a shorter store. So a failure is
    damage when a later frame of the current cycle follows a commit frame at or after it. A failure
    inside the last transaction is indistinguishable from a torn tail and is not reported."""
    if len(data) < WAL_HEADER:
        return None  # no frame was ever written after it: nothing committed here
    size = FRAME_HEADER + page
    magic = int.from_bytes(data[0:4], "big")
    frames = [data[o : o + size] for o in range(WAL_HEADER, len(data) - size + 1, size)]
    header_ok = magic in WAL_MAGIC and int.from_bytes(data[8:12], "big") == page
    big = magic & 1 == 1
    if header_ok:
        s = _wal_sum(data[:24], big, 0, 0)
        header_ok = s == struct.unpack(">2I", data[24:32])
    salt = data[16:24] if header_ok else (frames[0][8:16] if frames else b"")
    ours = [f[8:16] == salt for f in frames]
    commits = [int.from_bytes(f[4:8], "big") != 0 for f in frames]
    first_bad = 0 if not header_ok else None
    if header_ok:
        for i, f in enumerate(frames):
            if not ours[i]:
                first_bad = i
                break
            s = _wal_sum(f[:8] + f[FRAME_HEADER:], big, *s)
            if s != struct.unpack(">2I", f[16:24]):
                first_bad = i
                break
    if first_bad is None:
        return None
    commit = next((i for i in range(first_bad, len(frames)) if commits[i] and ours[i]), None)
    if commit is not None and any(ours[commit + 1 :]):
        where = "header" if not header_ok else f"frame {first_bad}"
        return f"its {where} fails its checksum, and transactions committed after it would be dropped"
    return None
