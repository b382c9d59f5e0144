"""Durable queues for the local stack: what SQS (and its dead-letter queues) are on AWS.

One SQLite file of its own (``queues.sqlite``), rollback journal with ``synchronous=FULL``: a message
whose ``send`` returned is in the database file, fsynced, and survives kill -9 or a power cut. (With
a rollback journal a committed transaction lives in the main file, never only in a log whose
damaged tail SQLite would silently drop.) Each row carries a SHA-256 of its queue, id and body,
checked for every row at open with ``PRAGMA integrity_check``: a damaged file is refused loudly
(:class:`QueueDamaged`), never read as a shorter queue.

The semantics are SQS's: ``receive`` hides a message for the visibility timeout and counts the
receive; ``delete`` by receipt handle acknowledges it; a message received ``max_receives`` times and
still there moves to the dead-letter queue at its next receive (the template's ``maxReceiveCount``).
One process holds the data directory (its lock), so at start :meth:`Queues.release_all` makes every
message visible again: whoever had received it died with the previous process.

What it does NOT stop: a reader of the data directory sees every queued message (upload keys, export
jobs), and a writer can add or change rows together with their checksums.
"""

from __future__ import annotations

import hashlib
import json
import logging
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

FORMAT = "acx-queues/v1"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (k TEXT PRIMARY KEY, v TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS messages (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    queue TEXT NOT NULL,
    id TEXT NOT NULL UNIQUE,
    body TEXT NOT NULL,
    sha256 TEXT NOT NULL,
    sent REAL NOT NULL,
    visible REAL NOT NULL,
    receives INTEGER NOT NULL DEFAULT 0,
    first_receive REAL,
    receipt TEXT
);
CREATE INDEX IF NOT EXISTS messages_by_queue ON messages (queue, visible, seq);
CREATE UNIQUE INDEX IF NOT EXISTS messages_by_receipt ON messages (receipt);
"""


class QueueDamaged(RuntimeError):
    """The queue file is not an intact queue database: refused, never repaired by dropping rows."""


def _digest(queue: str, message_id: str, body: str) -> str:
    return hashlib.sha256(f"{queue}\n{message_id}\n{body}".encode()).hexdigest()


@dataclass(frozen=True)
class Message:
    """A received message, shaped for the SQS event the pumps deliver."""

    id: str
    receipt: str
    body: str
    receives: int
    sent: float
    first_receive: float
    sha256: str

    def as_sqs(self) -> dict[str, Any]:
        """The message as SQS ReceiveMessage returns it."""
        return {
            "MessageId": self.id,
            "ReceiptHandle": self.receipt,
            "Body": self.body,
            "MD5OfBody": hashlib.md5(self.body.encode()).hexdigest(),  # noqa: S324 - SQS's field
            "Attributes": {
                "ApproximateReceiveCount": str(self.receives),
                "SentTimestamp": str(int(self.sent * 1000)),
                "SenderId": "acx-local",
                "ApproximateFirstReceiveTimestamp": str(int(self.first_receive * 1000)),
            },
        }


class Queues:
    """Every queue of a data directory in one SQLite file."""

    def __init__(self, path: Path, *, create: bool, fsync: bool = True) -> None:
        self.path = Path(path)
        if not create and not self.path.exists():
            raise FileNotFoundError(self.path)
        self._lock = threading.Lock()
        self._listeners: list[Callable[[str], None]] = []
        try:
            self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=DELETE")
            self._db.execute(f"PRAGMA synchronous={'FULL' if fsync else 'OFF'}")
            self._check_or_create(create)
        except sqlite3.DatabaseError as exc:
            raise QueueDamaged(f"{self.path} is not an intact queue database ({exc})") from None
        self.path.chmod(0o600)

    def _check_or_create(self, create: bool) -> None:
        tables = {r[0] for r in self._db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if not tables:
            if not create:
                raise QueueDamaged(f"{self.path} holds no queues")
            self._db.executescript(_SCHEMA)
            self._db.execute("INSERT INTO meta VALUES ('format', ?)", (FORMAT,))
            return
        problems = [r[0] for r in self._db.execute("PRAGMA integrity_check")]
        if problems != ["ok"]:
            raise QueueDamaged(f"{self.path}: {problems[0]}")
        fmt = self._db.execute("SELECT v FROM meta WHERE k='format'").fetchone()
        if fmt is None or fmt[0] != FORMAT:
            raise QueueDamaged(f"{self.path} is not a queue database of this version")
        for queue, mid, body, digest in self._db.execute("SELECT queue, id, body, sha256 FROM messages"):
            if _digest(queue, mid, body) != digest:
                raise QueueDamaged(f"{self.path}: message {mid} does not match its checksum")

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def on_send(self, listener: Callable[[str], None]) -> None:
        """``listener(queue)`` is called after each send (the pumps wake at once)."""
        self._listeners.append(listener)

    def send(self, queue: str, body: str) -> str:
        """Queue ``body``; returns its message id once it is durable."""
        mid = str(uuid.uuid4())
        now = time.time()
        with self._lock:
            self._db.execute(
                "INSERT INTO messages (queue, id, body, sha256, sent, visible) VALUES (?, ?, ?, ?, ?, ?)",
                (queue, mid, body, _digest(queue, mid, body), now, now),
            )
        for listener in list(self._listeners):
            listener(queue)
        return mid

    def receive(
        self,
        queue: str,
        limit: int,
        visibility: float,
        dlq: str | None = None,
        max_receives: int | None = None,
    ) -> list[Message]:
        """Up to ``limit`` visible messages, oldest first, hidden for ``visibility`` seconds; those
        already received ``max_receives`` times move to ``dlq`` instead."""
        now = time.time()
        out: list[Message] = []
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                rows = self._db.execute(
                    "SELECT seq, id, body, receives, sent, first_receive, sha256 FROM messages "
                    "WHERE queue = ? AND visible <= ? ORDER BY seq LIMIT ?",
                    (queue, now, limit),
                ).fetchall()
                for seq, mid, body, receives, sent, first, digest in rows:
                    if dlq is not None and max_receives is not None and receives >= max_receives:
                        self._db.execute(
                            "UPDATE messages SET queue = ?, sha256 = ?, receives = 0, visible = ?, "
                            "receipt = NULL, first_receive = NULL WHERE seq = ?",
                            (dlq, _digest(dlq, mid, body), now, seq),
                        )
                        logging.getLogger("acx.local").warning(
                            "message %s moved to %s after %d receives", mid, dlq, receives
                        )
                        continue
                    receipt = uuid.uuid4().hex
                    first = first if first is not None else now
                    self._db.execute(
                        "UPDATE messages SET receives = receives + 1, visible = ?, receipt = ?, "
                        "first_receive = ? WHERE seq = ?",
                        (now + visibility, receipt, first, seq),
                    )
                    out.append(Message(mid, receipt, body, receives + 1, sent, first, digest))
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
        return out

    def delete(self, receipt: str) -> bool:
        """Acknowledge a received message; False if the receipt is stale (received again since)."""
        with self._lock:
            return self._db.execute("DELETE FROM messages WHERE receipt = ?", (receipt,)).rowcount > 0

    def change_visibility(self, receipt: str, seconds: float) -> bool:
        """Make a received message visible again in ``seconds`` (0: now)."""
        with self._lock:
            cur = self._db.execute(
                "UPDATE messages SET visible = ? WHERE receipt = ?", (time.time() + seconds, receipt)
            )
            return cur.rowcount > 0

    def release_all(self) -> int:
        """Every message visible now (at start: no consumer of a previous process is alive)."""
        with self._lock:
            return self._db.execute("UPDATE messages SET visible = 0, receipt = NULL").rowcount

    def counts(self, queue: str) -> tuple[int, int]:
        """(visible, in flight) messages of ``queue``."""
        now = time.time()
        with self._lock:
            row = self._db.execute(
                "SELECT COALESCE(SUM(visible <= ?), 0), COALESCE(SUM(visible > ?), 0) "
                "FROM messages WHERE queue = ?",
                (now, now, queue),
            ).fetchone()
        return int(row[0]), int(row[1])

    def bodies(self, queue: str) -> list[str]:
        """Every body in ``queue``, oldest first (tests and the operator's look at a DLQ)."""
        with self._lock:
            return [
                r[0]
                for r in self._db.execute("SELECT body FROM messages WHERE queue = ? ORDER BY seq", (queue,))
            ]


class QueueSender:
    """One queue as the use cases send to it (implements ``QueuePort``: the export queue)."""

    def __init__(self, queues: Queues, name: str) -> None:
        self.queues = queues
        self.name = name

    @property
    def configured(self) -> bool:
        return True

    def send(self, message: dict[str, Any]) -> None:
        self.queues.send(self.name, json.dumps(message))


class AlarmFile:
    """The operators' alarm topic as a file of JSON lines (implements ``AlarmsPort``), each fsynced
    and also logged as a warning, since no one is subscribed locally."""

    MAX_MESSAGE = 250_000

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()

    @property
    def configured(self) -> bool:
        return True

    def publish(self, subject: str, message: dict[str, Any]) -> None:
        line = json.dumps({"time": time.time(), "subject": subject, "message": message})[: self.MAX_MESSAGE]
        with self._lock, open(self.path, "a", encoding="utf-8") as f:
            f.write(line + "\n")
            f.flush()
            import os

            os.fsync(f.fileno())
        logging.getLogger("acx.local").warning("alarm: %s", subject)
